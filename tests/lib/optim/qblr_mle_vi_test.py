"""QBLR's Student-t MLE (ECME) and VI objectives against float64 oracles."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from lib.core.errors import ConfigError
from lib.optim import qblr


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _scipy_loglik(x, xi):
  mu, s2, nu = xi
  return np.mean(stats.t.logpdf(x, nu, loc=mu, scale=np.sqrt(s2)))


def test_mean_loglik_and_log_coordinates():
  x = np.random.default_rng(0).standard_t(3.0, 50)
  xi = np.array([0.3, 1.7, 4.5])
  got = jax.jit(qblr.mean_loglik)(x, xi)
  np.testing.assert_allclose(got, _scipy_loglik(x, xi), rtol=1e-13)
  u = qblr.log_from_xi(jnp.asarray(xi))
  np.testing.assert_allclose(u, [0.3, np.log(1.7), np.log(4.5)], rtol=1e-15)
  np.testing.assert_allclose(qblr.xi_from_log(u), xi, rtol=1e-14)


def test_ecme_fixed_point_is_the_student_t_mle():
  # t_3(1, 2^2) draws; from (0, 1, 5) ECME climbs to the MLE, where the
  # step is the identity and scipy's log-likelihood is stationary.
  x = 1.0 + 2.0 * np.random.default_rng(1).standard_t(3.0, 400)
  xi = jnp.asarray([0.0, 1.0, 5.0])
  step = jax.jit(qblr.ecme_step)
  # EM ascends: one step already improves on xi0, and 300 reach the top.
  first = np.asarray(step(x, xi))
  assert _scipy_loglik(x, first) > _scipy_loglik(x, np.asarray(xi))
  for _ in range(300):
    xi = step(x, xi)
  xi = np.asarray(xi)
  np.testing.assert_allclose(step(x, xi), xi, rtol=1e-10)
  # Central differences of scipy's log-likelihood (an independent oracle).
  for i in range(3):
    h = np.zeros(3)
    h[i] = 1e-5 * xi[i]
    g = (_scipy_loglik(x, xi + h) - _scipy_loglik(x, xi - h)) / (2 * h[i])
    assert abs(g) < 1e-7, (i, g)
  # (`reference_mle`, ECME then Newton, is checked by the experiment's smoke
  # test: its compile alone would take seconds here.)


def test_logistic_log_joint_matches_numpy():
  r = np.random.default_rng(2)
  x, w = r.normal(size=(7, 3)), r.normal(size=(5, 3))
  y = np.sign(r.normal(size=7))
  got = qblr.logistic_log_joint(x, y, precision=2.5)(w)
  lik = -np.log1p(np.exp(-y * (w @ x.T))).sum(-1)
  prior = stats.norm.logpdf(w, scale=1 / np.sqrt(2.5)).sum(-1)
  np.testing.assert_allclose(got, lik + prior, rtol=1e-13)


def test_gaussian_elbo_fixed_samples_and_closed_form():
  # log p(w) = log N(w | 0, prec^-1 I) alone: ELBO(q) = -KL(q || p).
  m, s, prec = np.array([0.5, -1.0, 2.0]), np.array([2.0, 0.5, 4.0]), 1.5
  q = qblr.gaussian_posterior(jnp.asarray(m), jnp.asarray(s))
  log_prior = lambda w: qblr.gaussian_log_prior(w, prec)
  key = jax.random.key(0)
  elbo = jax.jit(
    lambda k, n: qblr.elbo(q, k, log_prior, num_samples=n), static_argnums=1
  )
  # The same draws in numpy: the estimate is their mean plus the entropy.
  eps = np.asarray(jax.random.normal(key, (8, 3), jnp.float64))
  w = m + eps / np.sqrt(s)
  mc = stats.norm.logpdf(w, scale=1 / np.sqrt(prec)).sum(-1).mean()
  entropy = stats.norm.entropy(scale=1 / np.sqrt(s)).sum()
  np.testing.assert_allclose(elbo(key, 8), mc + entropy, rtol=1e-13)
  kl = 0.5 * np.sum(prec / s + prec * m**2 - 1 - np.log(prec / s))
  # Five standard errors: Var log p(w) = (prec / 2)^2 sum_j Var w_j^2, and
  # Var w^2 = 2 v^2 + 4 m^2 v for w ~ N(m, v).
  v = 1 / s
  se = prec / 2 * np.sqrt(np.sum(2 * v**2 + 4 * m**2 * v) / 100_000)
  np.testing.assert_allclose(elbo(key, 100_000), -kl, atol=5 * se)


def test_student_t_elbo_and_stl_gradient():
  # ELBO: the same draws in numpy, scipy's entropy. STL: when q is the exact
  # posterior, log p(y, w) - log q(w) is a constant (the log evidence) in w,
  # so every sample's STL gradient is zero, while the score term the STL
  # estimator drops is not zero for one draw (so without the stop_gradient
  # this test fails). One program: each compile of the gamma sampler costs
  # seconds.
  xi = jnp.asarray([[0.5, 2.0, 3.0], [-1.0, 0.5, 7.0]])
  log_joint = lambda w: jnp.sum(qblr.student_t_logpdf(w, xi), -1) + 3.0
  key = jax.random.key(1)

  def everything(xi):
    q = qblr.student_t_posterior(xi)
    w = q.sample(key, 4)
    elbo = qblr.elbo(q, key, log_joint, num_samples=4)
    stl = lambda xi: qblr.stl_neg_elbo(xi, key, log_joint, num_samples=4)
    w_fixed = jax.lax.stop_gradient(w)
    log_q = lambda xi: jnp.mean(jnp.sum(qblr.student_t_logpdf(w_fixed, xi), -1))
    grads = jax.value_and_grad(stl)(xi), jax.grad(log_q)(xi)
    return w, elbo, grads, (q.mean, q.nu)

  w, elbo, ((value, grad), score), (mean, nu) = jax.jit(everything)(xi)
  xi_np = np.asarray(xi)
  scale = np.sqrt(xi_np[:, 1])
  logpdf = stats.t.logpdf(np.asarray(w), xi_np[:, 2], xi_np[:, 0], scale)
  entropy = stats.t.entropy(xi_np[:, 2], scale=scale).sum()
  np.testing.assert_allclose(
    elbo, np.mean(logpdf.sum(-1) + 3.0) + entropy, rtol=1e-12
  )
  np.testing.assert_array_equal(mean, xi_np[:, 0])
  np.testing.assert_array_equal(nu, xi_np[:, 2])
  np.testing.assert_allclose(value, -3.0, rtol=1e-13)
  np.testing.assert_allclose(grad, 0.0, atol=1e-12)
  assert np.max(np.abs(score)) > 1e-3


def test_iterations_to_gap():
  assert qblr.iterations_to_gap(-1, 10) == 0  # never bad: converged at t=0
  assert qblr.iterations_to_gap(4, 10) == 5
  assert qblr.iterations_to_gap(10, 10) == -1  # the last iterate is bad


def test_unknown_method_names_are_config_errors():
  # mle_method raised a bare KeyError('foo'); vi_method already named it.
  with pytest.raises(ConfigError, match="unknown MLE method 'newton'"):
    qblr.mle_method("newton", kappa=1.0, max_halvings=5)
  with pytest.raises(ConfigError, match="unknown VI method"):
    qblr.vi_method(
      "newton",
      jnp.ones((2, 3)),
      prior_precision=1.0,
      num_samples=1,
      kappa=1.0,
      max_halvings=5,
    )


def test_tracked_runs_record_the_last_bad_iterate():
  # GD on u = (mu, log s2, log nu): one step is u - lr * grad(-l)(u), with
  # the gradient from central differences of scipy's log-likelihood.
  x = 1.0 + 2.0 * np.random.default_rng(3).standard_t(3.0, 200)
  xi0 = np.array([0.5, 2.0, 6.0])
  u0 = np.array([0.5, np.log(2.0), np.log(6.0)])
  f = lambda u: -_scipy_loglik(x, [u[0], np.exp(u[1]), np.exp(u[2])])
  grad = np.array([(f(u0 + e) - f(u0 - e)) / 2e-6 for e in np.eye(3) * 1e-6])
  gd = qblr.mle_method("gd", kappa=1.0, max_halvings=5)
  l_star = -f(u0 - 0.1 * grad)  # the tolerance band holds iterate 1 only
  kw = dict(l_star=l_star, tol=1e-6)
  ecme = qblr.mle_method("ecme", kappa=1.0, max_halvings=5)

  @jax.jit
  def one_step(x):
    runs = [
      qblr.init_run(m, x, xi0, h, **kw) for m, h in ((gd, 0.1), (ecme, 0))
    ]
    stepped = [
      qblr.step_run(m, run, x, 0, h, **kw)
      for m, run, h in zip((gd, ecme), runs, (0.1, 0))
    ]
    return runs, stepped, qblr.ecme_step(x, xi0)

  (gd0, ecme0), ((gd1, metrics), (ecme1, _)), ecme_xi = one_step(x)
  assert int(gd0.last_bad) == 0 and int(ecme0.last_bad) == 0  # iterate 0 is out
  np.testing.assert_allclose(gd1.params, u0 - 0.1 * grad, rtol=1e-7)
  assert float(metrics["gap"]) < 1e-6 and int(gd1.last_bad) == 0
  assert qblr.iterations_to_gap(int(gd1.last_bad), 1) == 1
  # ECME keeps xi itself; its step is `ecme_step`, no optimizer state.
  np.testing.assert_allclose(ecme1.params, ecme_xi, rtol=1e-15)
  assert int(ecme1.last_bad) == 1  # iterate 1 of ECME is not in the band


def test_blr_gauss_run_is_von_and_its_elbo_average_is_debiased():
  # The Gaussian BLR method's step is `von_step` on the VON expectations
  # (same key split), and the ELBO average divided by 1 - decay^(t+1) is the
  # ELBO itself after one step from zero (Adam's bias correction).
  r = np.random.default_rng(4)
  x, y = r.normal(size=(20, 3)), np.sign(r.normal(size=20))
  xi0 = np.tile([0.0, 0.1, 10.0], (3, 1))
  method = qblr.vi_method(
    "blr_gauss",
    xi0,
    prior_precision=1.0,
    num_samples=4,
    kappa=1.0,
    max_halvings=5,
  )
  key = jax.random.key(0)

  @jax.jit
  def one_step(x, y):
    run = qblr.init_vi_run(method, 0.1)
    run1, metrics = qblr.step_vi_run(
      method, run, x, y, key, jnp.asarray(0), 0.1, decay=0.9
    )
    m, s = run.params
    nlj = lambda w: -qblr.logistic_log_lik(w, x, y) + 0.5 * jnp.sum(w**2)
    _, k_von = jax.random.split(key)
    eg, eh = qblr.von_expectations(k_von, nlj, m, s, num_samples=4)
    return run, run1, metrics, qblr.von_step(m, s, eg, eh, rho=0.1)

  run, run1, metrics, want = one_step(x, y)
  np.testing.assert_array_equal(run.params[1], np.ones(3))  # the prior
  np.testing.assert_allclose(run1.params[0], want[0], rtol=1e-14)
  np.testing.assert_allclose(run1.params[1], want[1], rtol=1e-14)
  np.testing.assert_allclose(metrics["elbo_ema"], -metrics["loss"], rtol=1e-12)


def test_posterior_metrics_of_a_point_mass():
  # A Gaussian q with a huge precision is a point mass at its mean w: the
  # posterior-mean and predictive accuracies are sign(x w) == y, the
  # ELBO's expectation is log p(y, w) (entropy in closed form).
  r = np.random.default_rng(5)
  x, xt = r.normal(size=(30, 3)), r.normal(size=(40, 3))
  y, yt = np.sign(r.normal(size=30)), np.sign(r.normal(size=40))
  w = np.array([1.0, -2.0, 0.5])
  key = jax.random.key(1)
  out = jax.jit(
    lambda w: qblr.posterior_metrics(
      qblr.gaussian_posterior(w, jnp.full(3, 1e12)),
      *(x, y, xt, yt),
      prior_precision=1.0,
      elbo_key=key,
      elbo_samples=8,
      eval_key=key,
      eval_samples=8,
    )
  )(w)
  acc = np.mean(np.sign(xt @ w) == yt)
  assert float(out["acc_mean"]) == acc and float(out["acc_sample"]) == acc
  log_joint = np.sum(-np.logaddexp(0, -y * (x @ w))) - 0.5 * w @ w
  log_joint -= 1.5 * np.log(2 * np.pi)
  entropy = 1.5 * np.log(2 * np.pi * np.e / 1e12)
  np.testing.assert_allclose(out["elbo"], log_joint + entropy, rtol=1e-6)
  assert "nu_mean" not in out
  # The predictive entropy of a point mass is its classifier's: the mean
  # binary entropy of sigmoid(x w) over the test points.
  p = 1 / (1 + np.exp(-(xt @ w)))
  binary = -p * np.log(p) - (1 - p) * np.log1p(-p)
  np.testing.assert_allclose(out["entropy"], np.mean(binary), rtol=1e-5)


def test_map_logistic_zeroes_the_log_joints_gradient():
  # The MAP is where the gradient of log p(y | x, w) + log N(w | 0, 1/p I)
  # vanishes; the objective is strictly concave, so that point is unique.
  r = np.random.default_rng(0)
  x = np.c_[r.normal(size=(80, 4)), np.ones(80)]
  y = np.sign(x @ np.array([1.5, -2.0, 0.5, 0.0, 0.3]) + r.normal(size=80))
  w = qblr.map_logistic(jnp.asarray(x), jnp.asarray(y), precision=0.7)
  grad = jax.grad(qblr.logistic_log_joint(x, y, precision=0.7))(w)
  np.testing.assert_allclose(grad, 0.0, atol=1e-10)
  assert np.linalg.norm(w) > 1.0  # it moved from 0


def test_bbvi_with_dog_moves_eps_first_and_blr_has_no_dog_rule():
  # Euclidean DoG (the paper's BBVI-NS): the first step is eps / |g| times
  # the gradient, so the parameters move exactly eps; h is ignored.
  r = np.random.default_rng(6)
  x, y = r.normal(size=(20, 3)), np.sign(r.normal(size=20))
  xi0 = np.tile([0.0, 0.1, 10.0], (3, 1))
  kw = dict(prior_precision=1.0, num_samples=2, kappa=1.0, max_halvings=5)
  method = qblr.vi_method("bbvi", xi0, rdog=True, rdog_eps=1e-3, **kw)
  p0, state = method.init(None)
  p1, _, _ = jax.jit(
    lambda p, s: method.step(p, s, x, y, jax.random.key(2), None)
  )(p0, state)
  moved = np.sqrt(sum(np.sum((p1[k] - p0[k]) ** 2) for k in p0))
  np.testing.assert_allclose(moved, 1e-3, rtol=1e-5)
  with pytest.raises(ConfigError, match="blr_gauss has no"):
    qblr.vi_method("blr_gauss", xi0, rdog=True, **kw)
