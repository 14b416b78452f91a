"""Multi-agent grid worlds as pure JAX functions (gymnax style).

n agents move on one H x W grid with walls; 4 actions (up, down, left,
right); a move into a wall or off the grid leaves the agent in place; agents
do not block each other (as in the CMAE grids TRPE uses). A state is the
agents' cell ids [n] (cell = row * W + col). `reset` and `step` are pure and
deterministic (`key` is accepted for the gymnax signature), so episodes vmap.

`two_rooms` builds the TRPE spec's minimal world: a size x size grid split by
a vertical wall with a one-cell door.

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


@dataclasses.dataclass(frozen=True)
class Grid:
  """walls [H, W] bool (numpy), starts: one (row, col) per agent."""

  walls: np.ndarray
  starts: tuple

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


def reset(grid: Grid, key=None) -> jax.Array:
  """The agents' start cells [n]."""
  del key
  h, w = grid.shape
  return jnp.asarray([r * w + c for r, c in grid.starts], jnp.int32)


def step(table: jax.Array, cells: jax.Array, actions: jax.Array, key=None):
  """Next cells [n] from `transition_table` (as a jax array), cells, actions."""
  del key
  return table[cells, actions]


def rollout(grid: Grid, logits: jax.Array, key: jax.Array, horizon: int):
  """One episode of tabular softmax policies.

  Args:
    logits: [n, H*W, 4] per-agent action logits of each own cell.
    horizon: steps (>= 1).

  Returns:
    (cells [horizon + 1, n] including the start, actions [horizon, n]).

  Raises:
    ConfigError: horizon < 1. ShapeError: logits not [n, H*W, 4] (another
      grid's or agent count's logits would be indexed out of range, which
      JAX clamps silently).
  """
  errors.check(
    horizon >= 1, errors.ConfigError, f"horizon must be >= 1, got {horizon}"
  )
  n = grid.num_agents
  want = (n, grid.num_cells, NUM_ACTIONS)
  errors.check(
    tuple(jnp.shape(logits)) == want,
    errors.ShapeError,
    f"logits must be [agents, cells, actions] = {list(want)} for this grid, "
    f"got {list(jnp.shape(logits))}",
  )
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
