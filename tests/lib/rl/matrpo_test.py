"""lib.rl.matrpo: GAE, CG and the TRPO step against dense references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import rl
from lib.core import errors


def test_gae_matches_the_discounted_sums():
  rng = np.random.default_rng(0)
  t, gamma, lambd = 7, 0.9, 0.8
  r, v = rng.normal(size=t), rng.normal(size=t)
  boot = 0.7
  targets, adv = rl.matrpo.gae(
    jnp.asarray(r, jnp.float32),
    jnp.asarray(v, jnp.float32),
    jnp.float32(boot),
    gamma,
    lambd,
  )
  v_next = np.append(v[1:], boot)
  delta = r + gamma * v_next - v
  want_adv = [
    sum((gamma * lambd) ** (k - i) * delta[k] for k in range(i, t))
    for i in range(t)
  ]
  want_targets = [
    sum(gamma ** (k - i) * r[k] for k in range(i, t)) + gamma ** (t - i) * boot
    for i in range(t)
  ]
  np.testing.assert_allclose(adv, want_adv, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(targets, want_targets, rtol=1e-5, atol=1e-6)


def test_conjugate_gradient_solves_an_spd_system():
  rng = np.random.default_rng(1)
  m = rng.normal(size=(6, 6))
  a = m @ m.T + 0.5 * np.eye(6)
  b = rng.normal(size=6)
  x = rl.matrpo.conjugate_gradient(
    lambda p: jnp.asarray(a, jnp.float32) @ p, jnp.asarray(b, jnp.float32), 6
  )
  np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-3, atol=1e-3)
  zero = rl.matrpo.conjugate_gradient(lambda p: p, jnp.zeros(3), 4)
  np.testing.assert_array_equal(zero, np.zeros(3))


def _batch(seed=0, m=200, s=6):
  rng = np.random.default_rng(seed)
  logits = jnp.asarray(rng.normal(size=(s, 4)), jnp.float32)
  states = jnp.asarray(rng.integers(0, s, m))
  actions = jnp.asarray(rng.integers(0, 4, m))
  adv = rng.normal(size=m)
  adv = jnp.asarray((adv - adv.mean()) / adv.std(ddof=1), jnp.float32)
  return logits, states, actions, adv


def _gain_kl(logits, new, states, actions, adv):
  lp0 = jax.nn.log_softmax(logits, -1)
  lp1 = jax.nn.log_softmax(new, -1)
  gain = jnp.mean(jnp.exp(lp1[states, actions] - lp0[states, actions]) * adv)
  kl = jnp.mean(jnp.sum(jnp.exp(lp0[states]) * (lp0[states] - lp1[states]), -1))
  return float(gain), float(kl)


def test_trpo_step_improves_the_gain_inside_the_trust_region():
  logits, states, actions, adv = _batch()
  for delta in (1e-3, 1e-2):
    cfg = rl.matrpo.MATRPOConfig(kl_threshold=delta)
    new, accepted, tries = rl.matrpo.trpo_step(
      logits, states, actions, adv, cfg
    )
    gain, kl = _gain_kl(logits, new, states, actions, adv)
    assert bool(accepted) and gain > 0 and 0 < kl < delta
    # The full step is sized for KL = delta under the quadratic model, so
    # the step taken reaches most of it (not a tiny step that trivially fits).
    assert kl > 0.2 * delta * 0.5 ** (2 * int(tries))


def test_trpo_step_follows_the_damped_natural_gradient():
  # With as many CG steps as parameters, the direction is (F + damping I)^-1
  # g, F the dense Hessian of the mean KL at the old policy.
  logits, states, actions, adv = _batch(seed=2, m=400, s=3)
  cfg = rl.matrpo.MATRPOConfig(kl_threshold=1e-4, cg_iters=12)
  new, accepted, _ = rl.matrpo.trpo_step(logits, states, actions, adv, cfg)
  assert bool(accepted)
  flat = logits.reshape(-1)

  def kl(x):
    lp0 = jax.nn.log_softmax(logits, -1)[states]
    lp1 = jax.nn.log_softmax(x.reshape(logits.shape), -1)[states]
    return jnp.mean(jnp.sum(jnp.exp(lp0) * (lp0 - lp1), -1))

  def gain(x):
    lp0 = jax.nn.log_softmax(logits, -1)[states, actions]
    lp1 = jax.nn.log_softmax(x.reshape(logits.shape), -1)[states, actions]
    return jnp.mean(jnp.exp(lp1 - lp0) * adv)

  f = np.asarray(jax.hessian(kl)(flat), np.float64)
  g = np.asarray(jax.grad(gain)(flat), np.float64)
  want = np.linalg.solve(f + cfg.cg_damping * np.eye(12), g)
  got = np.asarray(new - logits, np.float64).reshape(-1)
  cos = got @ want / np.linalg.norm(got) / np.linalg.norm(want)
  assert cos > 0.999


def test_no_advantage_no_step():
  logits, states, actions, _ = _batch()
  cfg = rl.matrpo.MATRPOConfig()
  new, accepted, _ = rl.matrpo.trpo_step(
    logits, states, actions, jnp.zeros(states.shape), cfg
  )
  assert not bool(accepted)
  np.testing.assert_array_equal(new, logits)


def test_an_epoch_without_reward_changes_no_policy():
  env = rl.grid.rooms(10)
  cfg = rl.matrpo.MATRPOConfig()
  state = rl.matrpo.init_state(rl.trpe.init(env), cfg)
  new, m = rl.matrpo.epoch(env, cfg, state, jax.random.key(0))
  assert float(m["return"]) == 0.0 and int(m["accepted"]) == 0
  np.testing.assert_array_equal(new.logits, state.logits)
  assert np.all(np.isfinite(np.asarray(new.values)))


def test_matrpo_learns_where_the_goal_is_in_reach():
  # Agents starting next to the goal region: uniform policies collect some
  # reward, and 40 epochs of MATRPO raise the return (ascent, not descent).
  env = rl.grid.rooms(10, starts=((6, 7), (6, 8)))
  cfg = rl.matrpo.MATRPOConfig(kl_threshold=0.01)
  state = rl.matrpo.init_state(rl.trpe.init(env), cfg)
  epoch = jax.jit(lambda s, k: rl.matrpo.epoch(env, cfg, s, k))
  returns = []
  for i in range(40):
    state, m = epoch(state, jax.random.fold_in(jax.random.key(0), i))
    returns.append(float(m["return"]))
  assert np.mean(returns[-8:]) > 1.5 * np.mean(returns[:8]) > 0


@pytest.mark.parametrize(
  "field, value, match",
  [
    ("kl_threshold", 0.0, "kl_threshold"),
    ("gamma", 1.5, "gamma"),
    ("critic_batch", 1000, "critic_batch"),
    ("horizon", 0, "horizon"),
  ],
)
def test_config_errors(field, value, match):
  with pytest.raises(errors.ConfigError, match=match):
    rl.matrpo.MATRPOConfig(**{field: value})
