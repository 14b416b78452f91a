"""lib.rl.trpe, trust_region="official": the official epoch's rules
(RiccZamboni/mepol, multi_agent, src/algorithms/trpe.py), each on a
hand-made case."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import rl


def _loop_config(**kw):
  base = dict(
    learning_rate=1.0, backtrack_coeff=2.0, backtracks=10, max_off_iters=20
  )
  return types.SimpleNamespace(**{**base, **kw})


def _run_loop(scale, delta, n=None, **kw):
  """official_loop on a constant ascent gradient of 1 (Adam's step is then
  exactly the learning rate) with KL_i = scale_i * theta_i^2 on one logit
  per agent, from theta = 0."""
  scale = jnp.asarray(scale, jnp.float32)
  logits_b = jnp.zeros((scale.shape[0], 1))
  adam = jax.vmap(rl.trpe._ADAM.init)(logits_b)
  c = rl.trpe.official_loop(
    lambda lg: (jnp.sum(lg), jnp.ones_like(lg)),
    lambda lg: scale * lg[:, 0] ** 2,
    logits_b,
    adam,
    _loop_config(**kw),
    delta,
  )
  return jax.tree.map(np.asarray, c)


def test_each_agent_stops_on_its_own_and_any_agent_keeps_the_step():
  # delta = 10. Agent 0 (KL = theta^2) reaches 16 > delta at step 4, which
  # is kept because agent 1 (KL = 0.09 theta^2 = 1.44) is inside: agent 0
  # stops past delta. Agent 1 goes on alone to theta = 10 (KL 9); at 11
  # (10.89) every agent is over delta: rejected, retried at rate 1/2 from
  # 10: 10.5 (9.92) is kept and, the first step after a backtrack, ends it.
  # The joint rule would stop both at theta = 3.
  c = _run_loop([1.0, 0.09], delta=10.0)
  np.testing.assert_allclose(c["logits"][:, 0], [4.0, 10.5], rtol=1e-4)
  assert int(c["iters"]) == 4 + 6 + 1
  assert int(c["tries"]) == 2
  np.testing.assert_array_equal(c["active"], [False, True])
  # Agent 0 took 4 Adam steps, agent 1 all 12 (the rejected one included).
  np.testing.assert_array_equal(c["adam"].count, [4, 12])


def test_a_step_taking_every_agent_over_delta_is_retried_at_half_the_rate():
  # KL = theta^2, delta = 0.5: theta = 1 (KL 1) is rejected; theta = 0.5
  # (KL 0.25) is accepted and ends the epoch.
  c = _run_loop([1.0], delta=0.5)
  np.testing.assert_allclose(c["logits"][:, 0], [0.5], rtol=1e-4)
  assert int(c["iters"]) == 1 and int(c["tries"]) == 2


def test_backtracking_gives_up_after_ten_tries():
  # Even 2^-9 has KL 2^-18 > delta: ten tries, all rejected; the logits
  # stay at the behaviour policy's.
  c = _run_loop([1.0], delta=1e-9)
  np.testing.assert_array_equal(c["logits"], 0.0)
  assert int(c["iters"]) == 0 and int(c["tries"]) == 11
  # backtracks=1 is the official use_backtracking 0: one try.
  assert int(_run_loop([1.0], delta=1e-9, backtracks=1)["tries"]) == 2


def test_the_epoch_ends_after_max_off_iters_accepted_steps():
  c = _run_loop([1e-6, 1e-6], delta=10.0, max_off_iters=7)
  assert int(c["iters"]) == 7 and int(c["tries"]) == 1
  np.testing.assert_allclose(c["logits"][:, 0], [7.0, 7.0], rtol=1e-4)


def test_official_kl_is_the_sum_over_sampled_states_over_four():
  # Two agents, two cells. Agent 0 in cell 0: pi = softmax(ln 2, 0, 0, 0)
  # = (2, 1, 1, 1) / 5 against the uniform pi_b; everything else uniform.
  logits_b = jnp.zeros((2, 2, 4))
  logits = logits_b.at[0, 0, 0].set(jnp.log(2.0))
  kl_cell = 0.25 * (np.log(0.25 / 0.4) + 3 * np.log(0.25 / 0.2))
  # N = 2 trajectories, H = 2 (3 states each); agent 0 is in cell 0 at 4
  # of the 6 sampled states (s_H included), agent 1 at all 6.
  cells = jnp.array([[[0, 0], [1, 0], [0, 0]], [[0, 0], [0, 0], [1, 0]]])
  kl = rl.trpe.official_kl(logits_b, logits, cells)
  np.testing.assert_allclose(kl, [4 * kl_cell / 4, 0.0], rtol=1e-5)
  # The per-state mean of the joint rule is N (H + 1) / 4 = 1.5 times less.
  np.testing.assert_allclose(
    rl.trpe.mean_kl(logits_b, logits, cells) * 6 / 4, kl, rtol=1e-5
  )


def test_official_threshold_in_the_scripts_units():
  # scripts/tae/room.sh: delta 15 with 20 trajectories of 150 steps.
  cfg = rl.trpe.TRPEConfig(
    trajectories=20, horizon=150, kl_threshold=15 * 4 / (20 * 151)
  )
  np.testing.assert_allclose(rl.trpe.official_kl_threshold(cfg), 15.0)


def _grid():
  return rl.grid.two_rooms(6, starts=((1, 1), (2, 1)))


def test_adam_moments_and_counts_carry_over_epochs():
  g = _grid()
  cfg = rl.trpe.TRPEConfig(trajectories=4, horizon=8, kl_threshold=0.02)
  ep = jax.jit(lambda s, k: rl.trpe.epoch(g, cfg, s, k))
  s0 = rl.trpe.init_state(g)
  s1, m1 = ep(s0, jax.random.key(0))
  s2, m2 = ep(s1, jax.random.key(1))
  c1, c2 = np.asarray(s1.adam.count), np.asarray(s2.adam.count)
  # Every try steps every active agent: counts grow by at least the
  # accepted steps, from where the last epoch left them.
  assert np.all(c1 >= int(m1["off_iters"])) and np.all(c1 >= 1)
  assert np.all(c2 >= c1 + 1)
  assert float(jnp.max(jnp.abs(s1.adam.mu))) > 0
  # At most (accepted + rejected) steps per agent in the second epoch.
  tries2 = int(m2["off_iters"]) + int(m2["backtracks"])
  assert np.all(c2 - c1 <= tries2)


def test_joint_mode_leaves_adam_alone_and_matches_joint_epoch():
  g = _grid()
  cfg = rl.trpe.TRPEConfig(
    trajectories=4, horizon=8, kl_threshold=0.1, trust_region="joint"
  )
  s0 = rl.trpe.init_state(g)
  s1, m = rl.trpe.epoch(g, cfg, s0, jax.random.key(0))
  lg, m_ref = rl.trpe.joint_epoch(g, cfg, s0.logits, jax.random.key(0))
  np.testing.assert_array_equal(s1.logits, lg)
  np.testing.assert_array_equal(s1.adam.count, s0.adam.count)
  assert float(m["kl"]) == float(m_ref["kl"]) <= 0.1


@pytest.mark.parametrize("objective", ["disjoint", "mixture"])
def test_official_epoch_ends_with_some_agent_inside_delta(objective):
  # Every accepted step has some agent's KL <= delta, and a stopped
  # agent's logits no longer move: the final logits keep that.
  g = _grid()
  cfg = rl.trpe.TRPEConfig(
    objective=objective, trajectories=6, horizon=10, kl_threshold=0.02
  )
  ep = jax.jit(lambda s, k: rl.trpe.epoch(g, cfg, s, k))
  s = rl.trpe.init_state(g)
  delta = rl.trpe.official_kl_threshold(cfg)
  for i in range(3):
    key = jax.random.key(i)
    cells, _ = rl.trpe.sample(g, s.logits, key, cfg)
    new, m = ep(s, key)
    kl = rl.trpe.official_kl(s.logits, new.logits, cells)
    assert float(jnp.min(kl)) <= delta * (1 + 1e-5)
    np.testing.assert_allclose(
      float(m["kl_official"]), float(jnp.max(kl)), rtol=1e-5
    )
    assert int(m["off_iters"]) >= 1
    # The surrogate's entropies count s_0..s_{H-1}, as the official code.
    values = rl.trpe.objective_values(cells[:, :-1], objective)
    np.testing.assert_allclose(
      float(m["loss"]), -float(jnp.mean(values)), rtol=1e-6
    )
    s = new
