"""lib.rl: the TRPE oracles of the spec (1-5) and the one-line errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import rl
from lib.core import errors


def _grid():
  return rl.grid.two_rooms(6, starts=((1, 1), (2, 1)))


def test_step_is_pure_and_respects_walls():
  g = _grid()
  table = jnp.asarray(g.transition_table())
  start = rl.grid.reset(g)
  # Right from (1, 1) moves; right into the wall column (col 3) stays.
  np.testing.assert_array_equal(
    rl.grid.step(table, start, jnp.array([3, 3])), [1 * 6 + 2, 2 * 6 + 2]
  )
  at_wall = jnp.array([1 * 6 + 2, 0 * 6 + 0])
  np.testing.assert_array_equal(
    rl.grid.step(table, at_wall, jnp.array([3, 0])),
    at_wall,  # wall, border
  )
  lg = jax.random.normal(jax.random.key(0), (2, g.num_cells, 4))
  a = rl.grid.rollout(g, lg, jax.random.key(1), 20)
  b = rl.grid.rollout(g, lg, jax.random.key(1), 20)
  np.testing.assert_array_equal(a[0], b[0])
  walls = np.asarray(g.walls).ravel()
  assert not walls[np.asarray(a[0])].any()


def test_oracle1_weights_are_uniform_at_the_behaviour_policy():
  g = _grid()
  cfg = rl.trpe.TRPEConfig(objective="mixture", trajectories=8, horizon=10)
  lg = jax.random.normal(jax.random.key(0), (2, g.num_cells, 4))
  cells, actions = rl.trpe.sample(g, lg, jax.random.key(1), cfg)
  w = rl.trpe.importance_weights(lg, lg, cells, actions)
  np.testing.assert_array_equal(
    np.asarray(w), np.full((2, 8), 1 / 8, np.float32)
  )
  values = rl.trpe.objective_values(cells, "mixture")
  np.testing.assert_allclose(
    rl.trpe.surrogate(lg, lg, cells, actions, values),
    2 * float(jnp.mean(values[:, 0])),
    rtol=1e-6,
  )


def test_oracle2_plug_in_entropy_of_uniform():
  m = 7
  np.testing.assert_allclose(
    rl.entropy.histogram_entropy(jnp.ones(m)), np.log(m), rtol=1e-6
  )
  x = jnp.tile(jnp.arange(m), 3)  # each value 3 times
  np.testing.assert_allclose(rl.entropy.sample_entropy(x), np.log(m), rtol=1e-6)
  np.testing.assert_allclose(
    rl.entropy.sample_entropy(jnp.zeros(5)), 0.0, atol=1e-7
  )


def test_oracle3_mixture_and_joint_bounds_on_random_trajectories():
  r = np.random.default_rng(0)
  for _ in range(20):
    cells = jnp.asarray(r.integers(0, 6, size=(30, 3)))
    e = rl.entropy.trajectory_entropies(cells)
    mean_agents = float(jnp.mean(e["agents"]))
    assert (
      mean_agents - 1e-6
      <= float(e["mixture"])
      <= mean_agents + np.log(3) + 1e-6
    )
    assert float(e["joint"]) <= float(jnp.sum(e["agents"])) + 1e-6


def test_oracle4_knn_entropy_on_uniform_and_gaussian():
  r = np.random.default_rng(0)
  u = jnp.asarray(r.uniform(size=(3000, 2)))
  assert abs(float(rl.entropy.knn_entropy(u, k=4))) < 0.1
  z = jnp.asarray(r.normal(size=(3000, 2)))
  np.testing.assert_allclose(
    float(rl.entropy.knn_entropy(z, k=4)), np.log(2 * np.pi * np.e), atol=0.1
  )
  # Uniform IS weights are the unweighted estimator.
  np.testing.assert_allclose(
    float(rl.entropy.knn_entropy(z, jnp.full(3000, 1 / 3000), k=4)),
    float(rl.entropy.knn_entropy(z, k=4)),
    rtol=1e-5,
  )


@pytest.mark.parametrize("objective", ["joint", "disjoint", "mixture"])
def test_oracle5_kl_stays_in_the_trust_region(objective):
  g = _grid()
  cfg = rl.trpe.TRPEConfig(
    objective=objective,
    trajectories=8,
    horizon=12,
    kl_threshold=0.05,
    learning_rate=0.05,
    max_off_iters=30,
  )
  lg = rl.trpe.init(g)
  ep = jax.jit(lambda lg_, k: rl.trpe.joint_epoch(g, cfg, lg_, k))
  for i in range(5):
    lg, m = ep(lg, jax.random.key(i))
    assert float(m["kl"]) <= 0.05 + 1e-6
    assert int(m["off_iters"]) >= 1


def test_mixture_pretraining_raises_the_mixture_entropy():
  g = rl.grid.two_rooms(8)
  cfg = rl.trpe.TRPEConfig(objective="mixture", trajectories=8, horizon=30)
  lg = rl.trpe.init(g)
  ep = jax.jit(lambda lg_, k: rl.trpe.joint_epoch(g, cfg, lg_, k))
  first = None
  for i in range(40):
    lg, m = ep(lg, jax.random.key(i))
    first = float(m["mixture_entropy"]) if first is None else first
  assert float(m["mixture_entropy"]) > first + 0.3


def test_bad_input_one_line_errors():
  with pytest.raises(errors.ConfigError, match="inside a wall"):
    rl.grid.two_rooms(6, starts=((0, 3), (1, 1)))
  with pytest.raises(errors.ConfigError, match="outside"):
    rl.grid.two_rooms(6, starts=((9, 9), (1, 1)))
  with pytest.raises(errors.ConfigError, match="horizon"):
    rl.trpe.TRPEConfig(horizon=0)
  with pytest.raises(errors.ConfigError, match="horizon"):
    rl.grid.rollout(_grid(), rl.trpe.init(_grid()), jax.random.key(0), 0)
  with pytest.raises(errors.ConfigError, match="objective"):
    rl.trpe.TRPEConfig(objective="sum")


def test_knn_entropy_gradient_in_the_samples_is_finite_and_exact():
  # The zero self-distance made jax.grad with respect to x all NaN
  # (sqrt'(0) = inf). With uniform weights H(c x) = H(x) + d log c exactly
  # and H(x + b) = H(x), so <x, dH/dx> = d and sum_i dH/dx_i = 0.
  x = jnp.asarray(np.random.default_rng(1).normal(size=(200, 3)))
  x = x.at[1].set(x[0])  # a duplicate: a second zero distance
  grad = jax.grad(rl.entropy.knn_entropy)(x)
  assert bool(jnp.all(jnp.isfinite(grad)))
  np.testing.assert_allclose(float(jnp.sum(x * grad)), 3.0, rtol=1e-4)
  np.testing.assert_allclose(jnp.sum(grad, axis=0), 0.0, atol=1e-4)


def test_rollout_refuses_logits_of_another_grid_or_team():
  # Logits of a 4x4 grid (16 cells) on the 6x6 grid, or of one agent for
  # two, were indexed out of range and clamped: episodes ran, silently wrong.
  g = _grid()
  for other in (rl.trpe.init(rl.grid.two_rooms(4)), rl.trpe.init(g)[:1]):
    with pytest.raises(errors.ShapeError, match=r"\[2, 36, 4\]"):
      rl.grid.rollout(g, other, jax.random.key(0), 3)
  cells, actions = rl.grid.rollout(g, rl.trpe.init(g), jax.random.key(0), 3)
  assert cells.shape == (4, 2) and actions.shape == (3, 2)


def test_trpe_epoch_with_bfloat16_logits_stays_in_the_trust_region():
  # The float32 step scale promoted bfloat16 logits and lax.while_loop
  # refused the carry ("carry input and carry output must have equal types").
  g = _grid()
  cfg = rl.trpe.TRPEConfig(trajectories=4, horizon=5, kl_threshold=0.1)
  logits_b = rl.trpe.init(g).astype(jnp.bfloat16)
  logits, metrics = rl.trpe.joint_epoch(g, cfg, logits_b, jax.random.key(0))
  assert logits.dtype == jnp.bfloat16
  assert int(metrics["off_iters"]) >= 1
  assert float(metrics["kl"]) <= 0.1


def test_knn_entropy_of_integer_samples_is_that_of_the_same_floats():
  # The uniform weights jnp.full(n, 1 / n, int) were 0: a NaN entropy.
  r = np.random.default_rng(5)
  cells = r.integers(0, 50, size=(200, 2))
  cells[:, 1] += 100 * np.arange(200)  # distinct points: finite radii
  got = rl.entropy.knn_entropy(jnp.asarray(cells), k=3)
  want = rl.entropy.knn_entropy(jnp.asarray(cells, jnp.float32), k=3)
  assert np.isfinite(float(got))
  np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("k, n", [(5, 5), (9, 5), (0, 5), (2.0, 5)])
def test_knn_entropy_refuses_k_out_of_range(k, n):
  x = jnp.asarray(np.random.default_rng(6).normal(size=(n, 2)))
  with pytest.raises(errors.ConfigError, match=f"k={k!r} .* n={n} samples"):
    rl.entropy.knn_entropy(x, k=k)


def test_environments_are_static_jit_arguments_compared_by_value():
  """Grid and SwitchRooms hash and compare by their walls' values, so a
  jitted rollout takes them as static arguments (and retraces for another)."""
  g, same, other = (
    rl.grid.two_rooms(6),
    rl.grid.two_rooms(6),
    rl.grid.two_rooms(8),
  )
  assert g == same and hash(g) == hash(same) and g != other
  env, env2 = rl.grid.rooms(), rl.grid.rooms()
  assert env == env2 and hash(env) == hash(env2) and env != g
  logits = jnp.zeros((g.num_agents, g.num_states, rl.grid.NUM_ACTIONS))
  run = jax.jit(rl.grid.rollout, static_argnums=(0, 3))
  key = jax.random.key(0)
  states, _ = run(g, logits, key, 5)
  np.testing.assert_array_equal(states, rl.grid.rollout(g, logits, key, 5)[0])
  walls = np.asarray(g.walls).copy()
  walls[0, 0] = True
  assert rl.grid.Grid(walls, g.starts) != g
