"""The Normal-Wishart lift of QBLR (the paper's NG-Ours) against float64 oracles.

Oracles: autodiff of the log-partition (mean parameters), the Normal-Gamma
lift at d = 1, a dense Fisher solve in minimal coordinates (the natural
gradient), scipy's multivariate t (entropy, log-density), and the fibre
map (Psi, kappa) -> (Psi / c, c kappa).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from lib.core.errors import ConfigError
from lib.optim import qblr
from lib.optim.qblr import normal_wishart as nw


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


D = 3


def _student_t(seed=0, d=D):
  r = np.random.default_rng(seed)
  a = r.normal(size=(d, d))
  return r.normal(size=d), a @ a.T + d * np.eye(d), 4.5


def _fibre(lam, c):
  return {"l1": c * lam["l1"], "l2": c * lam["l2"], "l3": c * lam["l3"],
          "l4": lam["l4"]}  # fmt: skip


def _max_diff(a, b):
  return max(float(jnp.max(jnp.abs(a[k] - b[k]))) for k in a)


def test_mean_params_are_grad_log_partition_and_pi_round_trips():
  mu, sigma, nu = _student_t()
  lam = nw.natural_from_student_t(mu, sigma, nu, kappa=0.7)
  theta = jax.jit(nw.mean_params)(lam)
  grad_a = jax.jit(jax.grad(nw.log_partition))(lam)
  assert _max_diff(theta, grad_a) < 1e-12
  # E[S] = nu Psi with nu = nu' + d - 1 and Psi^-1 = kappa nu' Sigma.
  np.testing.assert_allclose(
    theta["l3"], (nu + D - 1) * np.linalg.inv(0.7 * nu * sigma), rtol=1e-12
  )
  for got, want in zip(nw.project(lam), (mu, sigma, nu)):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
  got = jax.jit(nw.student_t_from_mean)(theta, 2 * lam["l4"] + D)
  for g, want in zip(got, (mu, sigma, nu)):
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
  assert bool(nw.in_domain(lam))


def test_one_dimension_is_the_normal_gamma_lift():
  lam = nw.natural_from_student_t(np.array([0.3]), np.array([[2.0]]), 3.0,
                                  kappa=0.7)  # fmt: skip
  lam_ng = qblr.natural_from_student_t(np.array([0.3, 2.0, 3.0]), kappa=0.7)
  flat = lambda t: jnp.stack([t["l1"][0], t["l2"], t["l3"][0, 0], t["l4"]])
  np.testing.assert_allclose(flat(lam), lam_ng, rtol=1e-14)
  np.testing.assert_allclose(
    nw.log_partition(lam), qblr.log_partition(lam_ng), rtol=1e-13
  )
  np.testing.assert_allclose(
    flat(nw.mean_params(lam)), qblr.mean_params(lam_ng), rtol=1e-13
  )


def test_fibres_are_kappa_psi_rescalings_and_vertical_is_their_tangent():
  mu, sigma, nu = _student_t(1)
  lam = nw.natural_from_student_t(mu, sigma, nu, kappa=1.3)
  for c in (0.2, 3.0):
    for a, b in zip(nw.project(_fibre(lam, c)), nw.project(lam)):
      np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
  # D pi . k = 0: the vertical vector moves along the fibre.
  tangent = jax.jvp(nw.project, (lam,), (nw.vertical(lam),))[1]
  for t in tangent:
    assert float(jnp.max(jnp.abs(t))) < 1e-12
  # Another kappa is another point of the same fibre.
  other = nw.natural_from_student_t(mu, sigma, nu, kappa=4.0)
  assert _max_diff(_fibre(lam, 4.0 / 1.3), other) < 1e-12


def _objective(mu, sigma, nu):
  w = np.array([0.3, -1.2, 0.5])
  b = np.arange(9.0).reshape(3, 3) / 10
  return (
    jnp.sin(mu @ w)
    + jnp.sum(b * sigma) ** 2 / 10
    + 0.3 * jnp.log(nu)
    + jnp.linalg.slogdet(sigma)[1]
  )


def test_natural_gradient_equals_a_dense_fisher_solve():
  """grad_theta L = F^-1 grad_lambda L in minimal coordinates (the lower
  triangle of l3), with F = hess A by autodiff."""
  mu, sigma, nu = _student_t(2)
  lam = nw.natural_from_student_t(mu, sigma, nu, kappa=0.7)
  tri = np.tril_indices(D)

  def from_phi(phi):
    low = jnp.zeros((D, D)).at[tri].set(phi[D + 1 : -1])
    l3 = low + low.T - jnp.diag(jnp.diag(low))
    return {"l1": phi[:D], "l2": phi[D], "l3": l3, "l4": phi[-1]}

  phi = jnp.concatenate(
    [lam["l1"], lam["l2"][None], lam["l3"][tri], lam["l4"][None]]
  )
  f = jax.jit(jax.hessian(lambda p: nw.log_partition(from_phi(p))))(phi)
  loss = lambda p: _objective(*nw.project(from_phi(p)))
  dense = from_phi(jnp.linalg.solve(f, jax.jit(jax.grad(loss))(phi)))
  value, g = jax.jit(lambda lm: nw.natural_gradient(_objective, lm))(lam)
  np.testing.assert_allclose(value, loss(phi), rtol=1e-13)
  assert _max_diff(g, dense) < 1e-10 * _max_diff(dense, jax.tree.map(
    jnp.zeros_like, dense))  # fmt: skip
  np.testing.assert_allclose(g["l3"], g["l3"].T, rtol=0, atol=1e-14)


def test_projection_removes_vertical_parts_and_keeps_horizontal_ones():
  mu, sigma, nu = _student_t(3)
  lam = nw.natural_from_student_t(mu, sigma, nu, kappa=0.7)
  _, g = jax.jit(lambda lm: nw.natural_gradient(_objective, lm))(lam)
  k = nw.vertical(lam)
  # A fibre-invariant objective's natural gradient is already horizontal.
  kfk = nw.inner(nw.fisher_vp(lam, k), k)
  assert abs(float(nw.inner(nw.fisher_vp(lam, k), g))) < 1e-12 * float(kfk)
  assert _max_diff(nw.horizontal_project(g, lam), g) < 1e-12
  # g + 5 k projects back to g, and the vertical vector alone to 0.
  noisy = jax.tree.map(lambda a, b: a + 5.0 * b, g, k)
  assert _max_diff(nw.horizontal_project(noisy, lam), g) < 1e-10
  zero = nw.horizontal_project(k, lam)
  assert max(float(jnp.max(jnp.abs(v))) for v in zero.values()) < 1e-12


def test_steps_from_two_representatives_stay_on_one_trajectory():
  mu, sigma, nu = _student_t(4)
  a = nw.natural_from_student_t(mu, sigma, nu, kappa=1.0)
  b = nw.natural_from_student_t(mu, sigma, nu, kappa=5.0)

  def bounded(mu, sigma, nu):  # its maximum: Sigma = 10 I, nu = e
    w = np.array([0.3, -1.2, 0.5])
    fit = jnp.linalg.slogdet(sigma)[1] - 0.1 * jnp.trace(sigma)
    return jnp.sin(mu @ w) + fit - 0.5 * (jnp.log(nu) - 1.0) ** 2

  @jax.jit
  def step(lam):
    _, g = nw.natural_gradient(bounded, lam)
    g = nw.horizontal_project(g, lam)
    return qblr.guarded_step(
      lam, g, 0.05, max_halvings=20, in_domain=nw.in_domain
    )

  def run(lam):
    for _ in range(10):
      lam, _, _, ok = step(lam)
      assert bool(ok)
    return nw.project(lam)

  for x, y in zip(run(a), run(b)):
    np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_domain_guard_halves_out_of_the_domain_and_rejects():
  mu, sigma, nu = _student_t(5)
  lam = nw.natural_from_student_t(mu, sigma, nu)
  # Along -l2 kappa crosses 0 at step 1: 0.75 is halved once to 0.375.
  down = jax.tree.map(jnp.zeros_like, lam) | {"l2": -lam["l2"]}
  guard = lambda m: qblr.guarded_step(
    lam, down, 1.5, max_halvings=m, in_domain=nw.in_domain
  )
  new, s, n, ok = guard(5)
  assert bool(ok) and int(n) == 1 and float(s) == 0.75
  assert bool(nw.in_domain(new))
  new, _, n, ok = guard(0)
  assert not bool(ok) and _max_diff(new, lam) == 0.0
  bad_psi = lam | {"l3": -lam["l3"]}
  assert not bool(nw.in_domain(bad_psi))


def test_multivariate_t_density_entropy_and_draws():
  mu, sigma, nu = _student_t(6)
  ref = stats.multivariate_t(mu, sigma, df=nu)
  np.testing.assert_allclose(
    nw.student_t_entropy(jnp.asarray(sigma), nu), ref.entropy(), rtol=1e-12
  )
  z = np.random.default_rng(0).normal(size=(5, D))
  np.testing.assert_allclose(
    nw.student_t_logpdf(z, mu, sigma, nu), ref.logpdf(z), rtol=1e-12
  )
  draws = nw.sample_student_t(jax.random.key(0), mu, sigma, nu, 200_000)
  # Cov = nu / (nu - 2) Sigma; 200k draws of t_4.5 leave ~2 % noise.
  cov = np.cov(np.asarray(draws).T)
  np.testing.assert_allclose(cov, nu / (nu - 2) * sigma, atol=0.1 * sigma[0, 0])
  np.testing.assert_allclose(np.mean(draws, 0), mu, atol=0.05)


def test_vi_method_raises_the_elbo_and_rejects_a_varying_nu():
  r = np.random.default_rng(0)
  x = np.concatenate([r.normal(size=(60, 2)), np.ones((60, 1))], 1)
  y = np.sign(x @ np.array([1.5, -1.0, 0.3]) + 0.3 * r.normal(size=60))
  xi0 = np.tile([0.0, 0.1, 10.0], (3, 1))
  method = qblr.vi_method("qng_nw", xi0, prior_precision=1.0, num_samples=1,
                          kappa=1.0, max_halvings=20)  # fmt: skip
  lam, state = method.init(0.05)
  log_joint = qblr.logistic_log_joint(x, y, precision=1.0)

  @jax.jit
  def score(lam):
    q = method.posterior(lam)
    return qblr.elbo(q, jax.random.key(9), log_joint, num_samples=4000)

  before = score(lam)
  step = jax.jit(lambda lam, s, k: method.step(lam, s, x, y, k, 0.05))
  for k in jax.random.split(jax.random.key(1), 300):
    lam, state, _ = step(lam, state, k)
  assert int(state.num_rejected) == 0
  assert float(score(lam)) > float(before) + 5.0
  # The learnt posterior's mean classifies the training data.
  assert np.mean(np.sign(x @ method.posterior(lam).mean) == y) > 0.85
  bad = xi0.copy()
  bad[1, 2] = 5.0
  with pytest.raises(ConfigError, match="one degrees of freedom"):
    qblr.vi_method("qng_nw", bad, prior_precision=1.0, num_samples=1,
                   kappa=1.0, max_halvings=20)  # fmt: skip


def _textbook_kl(p, q):
  """KL(NW_p || NW_q) for (mu, kappa, Psi, nu) with E[S] = nu Psi: the
  Wishart KL plus the Gaussian KL averaged over S ~ W(nu_p, Psi_p)."""
  from scipy import special

  (m1, k1, s1, n1), (m2, k2, s2, n2) = p, q
  d = len(m1)
  a = np.linalg.solve(s2, s1)
  psi_d = sum(special.digamma(n1 / 2 - i / 2) for i in range(d))
  wishart = (
    0.5 * (n1 - n2) * psi_d
    - 0.5 * n2 * np.linalg.slogdet(a)[1]
    + 0.5 * n1 * (np.trace(a) - d)
    + special.multigammaln(n2 / 2, d)
    - special.multigammaln(n1 / 2, d)
  )
  dm = m1 - m2
  gauss = 0.5 * (d * k2 / k1 - d + k2 * n1 * dm @ s1 @ dm + d * np.log(k1 / k2))
  return wishart + gauss


def test_lifted_kl_is_the_textbook_normal_wishart_kl():
  r = np.random.default_rng(7)

  def law():
    a = r.normal(size=(D, D))
    return (
      r.normal(size=D),
      r.uniform(0.5, 2),
      a @ a.T + np.eye(D),
      6 + r.uniform(),
    )

  p, q = law(), law()
  to_lam = lambda m, k, s, n: nw.natural_from_normal_wishart(
    m, k, np.linalg.inv(s), n
  )
  lp, lq = to_lam(*p), to_lam(*q)
  kl = jax.jit(nw.lifted_kl)
  np.testing.assert_allclose(kl(lp, lq), _textbook_kl(p, q), rtol=1e-11)
  np.testing.assert_allclose(kl(lq, lp), _textbook_kl(q, p), rtol=1e-11)
  assert abs(float(kl(lp, lp))) < 1e-12
  # One fibre action on both laws is a change of variables S -> S / c.
  np.testing.assert_allclose(
    kl(_fibre(lp, 3.0), _fibre(lq, 3.0)), kl(lp, lq), rtol=1e-11
  )
  # Near lp, KL is half the squared Fisher norm of the difference.
  v = jax.tree.map(lambda a, b: 1e-4 * (b - a), lp, lq)
  near = jax.tree.map(jnp.add, lp, v)
  np.testing.assert_allclose(
    kl(lp, near), 0.5 * nw.fisher_norm_sq(lp, v), rtol=1e-3
  )


def test_vi_method_with_rdog_starts_at_eps_and_needs_no_step_size():
  """RDoG's first step moves sqrt(2 KL) = eps; later steps grow with the
  distance travelled, and the ELBO rises without a step-size grid."""
  r = np.random.default_rng(0)
  x = np.concatenate([r.normal(size=(60, 2)), np.ones((60, 1))], 1)
  y = np.sign(x @ np.array([1.5, -1.0, 0.3]) + 0.3 * r.normal(size=60))
  xi0 = np.tile([0.0, 0.1, 10.0], (3, 1))
  eps = 1e-4
  method = qblr.vi_method("qng_nw", xi0, prior_precision=1.0, num_samples=1,
                          kappa=1.0, max_halvings=20, rdog=True,
                          rdog_eps=eps)  # fmt: skip
  lam0, state = method.init(None)
  step = jax.jit(lambda lam, s, k: method.step(lam, s, x, y, k, None))
  keys = jax.random.split(jax.random.key(1), 300)
  lam, state, _ = step(lam0, state, keys[0])
  np.testing.assert_allclose(
    np.sqrt(2 * nw.lifted_kl(lam0, lam)), eps, rtol=1e-3
  )
  assert float(state.max_dist) == eps
  log_joint = qblr.logistic_log_joint(x, y, precision=1.0)

  @jax.jit
  def score(lam):
    q = method.posterior(lam)
    return qblr.elbo(q, jax.random.key(9), log_joint, num_samples=4000)

  for k in keys[1:]:
    lam, state, _ = step(lam, state, k)
  assert int(state.num_rejected) == 0
  assert float(state.max_dist) > 100 * eps
  assert float(score(lam)) > float(score(lam0)) + 5.0
