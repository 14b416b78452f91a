"""Multi-agent grid worlds as pure JAX functions (gymnax style).

n agents move on one H x W grid with walls; 4 actions (up, down, left,
right); a move into a wall or off the grid leaves the agent in place; agents
do not block each other (as in the CMAE grids TRPE uses). A state is the
agents' cell ids [n] (cell = row * W + col). `reset` and `step` are pure and
deterministic (`key` is accepted for the gymnax signature), so episodes vmap.

`two_rooms` builds the TRPE spec's minimal world: a size x size grid split by
a vertical wall with a one-cell door (always open). `rooms` builds the
official Rooms (`SwitchRooms`): the door opens only while an agent stands by
a switch, each agent observes its own cell and the door's state, and a goal
region pays a reward per agent and step.

Reference: Zamboni, Mutti, Restelli, "Towards Principled Unsupervised
Multi-Agent Reinforcement Learning", NeurIPS 2025 (arXiv 2502.08365);
official code RiccZamboni/mepol, branch multi_agent (src/envs/rooms.py).
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors

NUM_ACTIONS = 4
_MOVES = np.array([[-1, 0], [1, 0], [0, -1], [0, 1]], np.int32)


def _value_key(env) -> tuple:
  """The fields of a frozen environment as a hashable tuple (numpy arrays by
  shape, dtype and bytes): environments hash and compare by value, so they
  can be static arguments of `jax.jit` (gymnax style)."""
  out = []
  for field in dataclasses.fields(env):
    v = getattr(env, field.name)
    if isinstance(v, np.ndarray | list):
      v = np.asarray(v)
      v = (v.shape, v.dtype.str, v.tobytes())
    out.append(v)
  return tuple(out)


@dataclasses.dataclass(frozen=True)
class Grid:
  """walls [H, W] bool (numpy), starts: one (row, col) per agent."""

  walls: np.ndarray
  starts: tuple

  def __hash__(self):
    return hash(_value_key(self))

  def __eq__(self, other):
    return type(other) is type(self) and _value_key(self) == _value_key(other)

  def __post_init__(self):
    walls = np.asarray(self.walls, bool)
    h, w = walls.shape
    for i, (r, c) in enumerate(self.starts):
      errors.check(
        0 <= r < h and 0 <= c < w,
        errors.ConfigError,
        f"agent {i} starts at ({r}, {c}), outside the {h}x{w} grid",
      )
      errors.check(
        not walls[r, c],
        errors.ConfigError,
        f"agent {i} starts at ({r}, {c}), inside a wall",
      )

  @property
  def shape(self):
    return np.asarray(self.walls).shape

  @property
  def num_cells(self) -> int:
    h, w = self.shape
    return h * w

  @property
  def num_agents(self) -> int:
    return len(self.starts)

  @property
  def num_states(self) -> int:
    """An agent's policy states: its cell."""
    return self.num_cells

  def positions(self, states):
    """Cells of policy states (here the same)."""
    return states

  def free_cells(self) -> np.ndarray:
    """[H*W] bool: cells that are not walls."""
    return ~np.asarray(self.walls, bool).ravel()

  def transition_table(self) -> np.ndarray:
    """[H*W, 4] next cell of every (cell, action) (walls: stay)."""
    h, w = self.shape
    walls = np.asarray(self.walls, bool)
    table = np.zeros((h * w, NUM_ACTIONS), np.int32)
    for r in range(h):
      for c in range(w):
        for a, (dr, dc) in enumerate(_MOVES):
          rr, cc = r + dr, c + dc
          ok = 0 <= rr < h and 0 <= cc < w and not walls[rr, cc]
          table[r * w + c, a] = rr * w + cc if ok else r * w + c
    return table


def two_rooms(size: int = 12, starts=((1, 1), (2, 1)), door_row=None) -> Grid:
  """A size x size grid, a wall down column size // 2 with one door cell."""
  errors.check(
    size >= 4, errors.ConfigError, f"two_rooms needs size >= 4, got {size}"
  )
  walls = np.zeros((size, size), bool)
  col = size // 2
  walls[:, col] = True
  walls[size // 2 if door_row is None else door_row, col] = False
  return Grid(walls, tuple(tuple(s) for s in starts))


def right_room(grid: Grid) -> np.ndarray:
  """[H*W] bool: free cells right of the dividing wall (the far room)."""
  h, w = grid.shape
  cols = np.tile(np.arange(w), h)
  return grid.free_cells() & (cols > w // 2)


@dataclasses.dataclass(frozen=True)
class SwitchRooms:
  """The official Rooms world (RiccZamboni/mepol, multi_agent,
  src/envs/rooms.py, `Rooms`).

  `grid` holds the walls with the door open; `door` [H*W] the cells that are
  wall while it is closed, `switch` the cells that open it (within 1.5 door
  radii of a switch), `goal` the cells that pay (within 1.5 goal radii of the
  goal). The door starts closed; after every step it is open exactly while
  some agent stands on a switch cell, and a move uses the door's state before
  the step (the official `step` moves the agents, then updates the door). An
  agent's policy state is (door, cell): state = door * H*W + cell, as the
  official decentralised policies read (x, y, door_open). A step pays
  `goal_reward` per agent on a goal cell.
  """

  grid: Grid
  door: np.ndarray
  switch: np.ndarray
  goal: np.ndarray
  goal_reward: float = 100.0

  def __hash__(self):
    return hash(_value_key(self))

  def __eq__(self, other):
    return type(other) is type(self) and _value_key(self) == _value_key(other)

  @property
  def shape(self):
    return self.grid.shape

  @property
  def walls(self):
    return self.grid.walls

  @property
  def starts(self):
    return self.grid.starts

  @property
  def num_cells(self) -> int:
    return self.grid.num_cells

  @property
  def num_agents(self) -> int:
    return self.grid.num_agents

  @property
  def num_states(self) -> int:
    """An agent's policy states: (door closed / open) x cells."""
    return 2 * self.grid.num_cells

  def free_cells(self) -> np.ndarray:
    """[H*W] bool: cells an agent can stand on (door cells included)."""
    return self.grid.free_cells()

  def positions(self, states):
    """Cells of policy states (the door's state dropped)."""
    return states % self.grid.num_cells

  def closed_table(self) -> np.ndarray:
    """`transition_table` with the door closed."""
    walls = np.asarray(self.grid.walls, bool) | self.door.reshape(self.shape)
    return Grid(walls, self.grid.starts).transition_table()

  def rewards(self, states) -> jax.Array:
    """The reward of arriving in states [..., n]: goal_reward per agent on a
    goal cell, summed over the agents [...]."""
    on_goal = jnp.asarray(self.goal)[self.positions(states)]
    return self.goal_reward * jnp.sum(on_goal, axis=-1).astype(jnp.float32)


def rooms(size: int = 10, starts=None) -> SwitchRooms:
  """The official Rooms at grid_size `size` (its experiments use 10).

  In the official (x, y) = (column, row): a wall down column size // 2; the
  door at (size // 2, size // 2) with radius r = size // 10 opens rows
  size // 2 - r .. size // 2 + r of that column; switches at
  (r, int(0.8 size)) and (int(0.8 size), r); the goal at
  (int(0.8 size), int(0.8 size)); agents start at (1 + r, 1 + r) and (r, r).
  A switch or the goal is reached within Euclidean distance 1.5 r.
  `starts` ((row, col) per agent) replaces the official starts.
  """
  errors.check(
    size >= 10, errors.ConfigError, f"rooms needs size >= 10, got {size}"
  )
  r = size // 10
  mid = size // 2
  walls = np.zeros((size, size), bool)
  walls[:, mid] = True
  door = np.zeros((size, size), bool)
  door[mid - r : mid + r + 1, mid] = True
  walls &= ~door
  rows, cols = np.mgrid[:size, :size]

  def near(x, y):  # official (x, y) = (column, row)
    return np.sqrt((cols - x) ** 2 + (rows - y) ** 2) <= 1.5 * r

  far = int(size * 0.8)
  switch = (near(r, far) | near(far, r)) & ~walls & ~door
  goal = near(far, far) & ~walls
  if starts is None:
    starts = ((1 + r, 1 + r), (r, r))
  grid = Grid(walls, tuple(tuple(x) for x in starts))
  return SwitchRooms(grid, door.ravel(), switch.ravel(), goal.ravel())


def reset(grid: Grid, key=None) -> jax.Array:
  """The agents' start cells [n]."""
  del key
  h, w = grid.shape
  return jnp.asarray([r * w + c for r, c in grid.starts], jnp.int32)


def step(table: jax.Array, cells: jax.Array, actions: jax.Array, key=None):
  """Next cells [n] from `transition_table` (as a jax array), cells, actions."""
  del key
  return table[cells, actions]


def rollout(grid, logits: jax.Array, key: jax.Array, horizon: int):
  """One episode of tabular softmax policies on a `Grid` or `SwitchRooms`.

  Args:
    logits: [n, S, 4] per-agent action logits of each own policy state
      (S = grid.num_states: the cell, or (door, cell) in `SwitchRooms`).
    horizon: steps (>= 1).

  Returns:
    (states [horizon + 1, n] including the start, actions [horizon, n]);
    `grid.positions(states)` are the cells.

  Raises:
    ConfigError: horizon < 1. ShapeError: logits not [n, S, 4] (another
      grid's or agent count's logits would be indexed out of range, which
      JAX clamps silently).
  """
  errors.check(
    horizon >= 1, errors.ConfigError, f"horizon must be >= 1, got {horizon}"
  )
  n = grid.num_agents
  want = (n, grid.num_states, NUM_ACTIONS)
  errors.check(
    tuple(jnp.shape(logits)) == want,
    errors.ShapeError,
    f"logits must be [agents, states, actions] = {list(want)} for this "
    f"grid, got {list(jnp.shape(logits))}",
  )
  if isinstance(grid, SwitchRooms):
    return _rooms_rollout(grid, logits, key, horizon)
  table = jnp.asarray(grid.transition_table())
  start = reset(grid)

  def body(cells, k):
    a = jax.random.categorical(k, logits[jnp.arange(n), cells])
    nxt = step(table, cells, a)
    return nxt, (nxt, a)

  _, (cells, actions) = jax.lax.scan(
    body, start, jax.random.split(key, horizon)
  )
  return jnp.concatenate([start[None], cells]), actions


def rollouts(grid, logits, key, trajectories: int, horizon: int):
  """`trajectories` episodes of `rollout`, one key each (split from key):
  (states [N, horizon + 1, n], actions [N, horizon, n])."""
  keys = jax.random.split(key, trajectories)
  return jax.vmap(lambda k: rollout(grid, logits, k, horizon))(keys)


def rooms_step(env: SwitchRooms, tables, cells, door, actions):
  """One step of the Rooms: (next cells [n], next door state) from cells,
  the door's state (0 closed, 1 open) and actions [n]; `tables` is
  `rooms_tables(env)`. The agents move with the door as it was; then the door
  is open iff some agent stands on a switch cell."""
  nxt = tables[door, cells, actions]
  return nxt, jnp.any(jnp.asarray(env.switch)[nxt]).astype(jnp.int32)


def rooms_tables(env: SwitchRooms) -> jax.Array:
  """[2, H*W, 4]: the transition tables with the door closed, open."""
  return jnp.stack(
    [jnp.asarray(env.closed_table()), jnp.asarray(env.grid.transition_table())]
  )


def _rooms_rollout(env: SwitchRooms, logits, key, horizon):
  n, c = env.num_agents, env.num_cells
  tables = rooms_tables(env)
  start = reset(env.grid)  # the door starts closed, no agent on a switch

  def body(carry, k):
    cells, door = carry
    a = jax.random.categorical(k, logits[jnp.arange(n), door * c + cells])
    nxt, door = rooms_step(env, tables, cells, door, a)
    return (nxt, door), (door * c + nxt, a)

  _, (states, actions) = jax.lax.scan(
    body, (start, jnp.zeros((), jnp.int32)), jax.random.split(key, horizon)
  )
  return jnp.concatenate([start[None], states]), actions
