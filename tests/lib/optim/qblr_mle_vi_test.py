"""QBLR's Student-t MLE (ECME) and VI objectives against float64 oracles."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

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
