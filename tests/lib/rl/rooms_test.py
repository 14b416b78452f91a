"""lib.rl.grid.rooms: the official Rooms against a plain-Python simulator.

The reference below is written from the official environment's rules
(RiccZamboni/mepol, multi_agent, src/envs/rooms.py), in its (x, y) =
(column, row) coordinates with a wall map that the door edits in place:
agents move one after the other against the wall map as the last step left
it, then the door opens (its 2 r + 1 cells cleared) if any agent is within
1.5 r of a switch and closes otherwise; each agent within 1.5 r of the goal
earns 100.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import rl
from lib.core import errors

_MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}  # up, down, left, right


class _Reference:
  def __init__(self, size=10):
    self.size, self.r = size, size // 10
    self.wall = np.zeros((size, size), int)  # [y, x]
    self.wall[:, size // 2] = 1
    self.agents = [[1 + self.r, 1 + self.r], [self.r, self.r]]  # (x, y)
    far = int(0.8 * size)
    self.switches = [(self.r, far), (far, self.r)]
    self.goal = (far, far)
    self.door = 0

  def step(self, actions):
    for agent, a in zip(self.agents, actions):
      dx, dy = _MOVES[int(a)]
      x, y = agent[0] + dx, agent[1] + dy
      if 0 <= x < self.size and 0 <= y < self.size and not self.wall[y, x]:
        agent[0], agent[1] = x, y
    near = any(
      math.dist(a, s) <= 1.5 * self.r
      for s in self.switches
      for a in self.agents
    )
    mid = self.size // 2
    self.door = int(near)
    self.wall[mid - self.r : mid + self.r + 1, mid] = 0 if near else 1
    reward = sum(
      100.0 for a in self.agents if math.dist(a, self.goal) <= 1.5 * self.r
    )
    return reward

  def cells(self):
    return [y * self.size + x for x, y in self.agents]


def _play(env, actions):
  tables = rl.grid.rooms_tables(env)
  step = jax.jit(lambda c, d, a: rl.grid.rooms_step(env, tables, c, d, a))
  cells, door = rl.grid.reset(env.grid), jnp.zeros((), jnp.int32)
  out = []
  for a in actions:
    cells, door = step(cells, door, jnp.asarray(a))
    out.append(
      (np.asarray(cells).tolist(), int(door), float(env.rewards(cells)))
    )
  return out


def _walk(path):
  """Actions [T, 2] from two equal-length lists of moves."""
  return np.stack([np.asarray(p) for p in path], axis=1)


def test_geometry_is_the_officials():
  env = rl.grid.rooms(10)
  door = np.zeros((10, 10), bool)
  door[4:7, 5] = True
  np.testing.assert_array_equal(env.door.reshape(10, 10), door)
  wall = np.zeros((10, 10), bool)
  wall[:, 5] = True
  np.testing.assert_array_equal(np.asarray(env.walls), wall & ~door)
  switch = np.zeros((10, 10), bool)
  switch[7:10, 0:3] = switch[0:3, 7:10] = True  # around (x 1, y 8), (x 8, y 1)
  np.testing.assert_array_equal(env.switch.reshape(10, 10), switch)
  goal = np.zeros((10, 10), bool)
  goal[7:10, 7:10] = True  # around (x 8, y 8)
  np.testing.assert_array_equal(env.goal.reshape(10, 10), goal)
  assert env.starts == ((2, 2), (1, 1))
  assert env.num_states == 200


def test_random_play_matches_the_reference():
  env = rl.grid.rooms(10)
  # A biased walk (down and right more often) so that switches, the door and
  # the goal are all reached within the episode.
  rng = np.random.default_rng(0)
  for episode in range(4):
    ref = _Reference()
    actions = rng.choice(4, size=(300, 2), p=[0.15, 0.35, 0.15, 0.35])
    ours = _play(env, actions)
    seen = set()
    for t, a in enumerate(actions):
      reward = ref.step(a)
      assert ours[t] == (ref.cells(), ref.door, reward), (episode, t)
      seen.add((ref.door, reward > 0))
    assert (1, False) in seen and (0, False) in seen


def test_the_door_needs_an_agent_on_a_switch():
  env = rl.grid.rooms(10)
  # Agent 0 from (row 2, col 2) walks down to row 5, then right towards the
  # door (col 5). Agent 1 from (1, 1) walks down onto the left switch (row 7,
  # step 6) and stays on it (left, into col 0 and the border), or stays in
  # the top row (up into the border).
  down, right, up, left = 1, 3, 0, 2
  to_door = [down] * 3 + [right] * 6
  to_switch = [down] * 6 + [left] * 3
  stay = [up] * 9
  held = _play(env, _walk([to_door, to_switch]))
  shut = _play(env, _walk([to_door, stay]))
  # Door shut: agent 0 stops at column 4.
  assert shut[-1][0][0] == 5 * 10 + 4 and {d for _, d, _ in shut} == {0}
  # Held: the door opens after step 6; agent 0's step 6 still meets it
  # closed (col 4), step 7 enters the door column, steps 8-9 the far room.
  assert [d for _, d, _ in held] == [0] * 5 + [1] * 4
  assert [c[0] % 10 for c, _, _ in held[4:]] == [4, 4, 5, 6, 7]


def test_rewards_are_100_per_agent_on_the_goal():
  env = rl.grid.rooms(10)
  on, off = 8 * 10 + 8, 1 * 10 + 1
  for cells, want in (([on, on], 200.0), ([on, off], 100.0), ([off, off], 0.0)):
    assert float(env.rewards(jnp.asarray(cells))) == want


def test_rollout_states_carry_the_door():
  env = rl.grid.rooms(10)
  logits = jnp.zeros((2, env.num_states, 4)).at[:, :, 1].set(3.0)  # mostly down
  states, actions = rl.grid.rollout(env, logits, jax.random.key(0), 60)
  assert states.shape == (61, 2) and actions.shape == (60, 2)
  cells = np.asarray(env.positions(states))
  door = np.asarray(states) // env.num_cells
  # Both agents see the same door, open iff some agent is on a switch.
  np.testing.assert_array_equal(door[:, 0], door[:, 1])
  np.testing.assert_array_equal(door[:, 0], env.switch[cells].any(axis=1))
  assert door.any() and not door[0].any()


def test_rooms_errors_name_the_problem():
  with pytest.raises(errors.ConfigError, match="size >= 10"):
    rl.grid.rooms(8)
  with pytest.raises(errors.ConfigError, match="inside a wall"):
    rl.grid.rooms(10, starts=((0, 5), (1, 1)))
  env = rl.grid.rooms(10)
  with pytest.raises(errors.ShapeError, match=r"\[2, 200, 4\]"):
    rl.grid.rollout(env, jnp.zeros((2, 100, 4)), jax.random.key(0), 3)
