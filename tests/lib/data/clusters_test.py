"""Gaussian clusters of Eq. (1): analytic accuracies by Monte Carlo (spec E.A oracles)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import data as data_lib


def _acc(score, y):
  return float(jnp.mean(jnp.sign(score) == y))


def test_means_satisfy_realizability():
  # Bayes boundary through the origin: r^2 = a^2 + kappa mu^2 (spec A.2).
  for sx, sy in [(0.1, 0.1), (0.2, 0.15)]:
    r, a = data_lib.cluster_means(0.3, 2.0, sx, sy)
    kappa = sx**2 / sy**2
    np.testing.assert_allclose(r**2, a**2 + kappa * 0.3**2, rtol=1e-12)


def test_analytic_accuracies_isotropic():
  x, y = data_lib.sample_gaussian_clusters(
    jax.random.key(0), 1_000_000, mu=0.3, omega=2.0, sx=0.1, sy=0.1
  )
  assert abs(float(jnp.mean(y))) < 0.005  # P(y = -1) = 1/2
  bayes = data_lib.bayes_logodds(x, mu=0.3, omega=2.0, sy=0.1)
  assert _acc(bayes, y) == pytest.approx(0.9994, abs=5e-4)
  assert _acc(x[:, 0], y) == pytest.approx(0.9938, abs=5e-4)
  assert _acc(3 * x[:, 0] + jnp.abs(x[:, 1]), y) == pytest.approx(
    0.9993, abs=5e-4
  )


@pytest.mark.parametrize(
  "mu,sx,sy,gap", [(0.3, 0.2, 0.15, 0.0032), (0.25, 0.2, 0.15, 0.0059)]
)
def test_analytic_gap_signgd_rule_vs_linear(mu, sx, sy, gap):
  x, y = data_lib.sample_gaussian_clusters(
    jax.random.key(1), 1_000_000, mu=mu, omega=2.0, sx=sx, sy=sy
  )
  measured = _acc(3 * x[:, 0] + jnp.abs(x[:, 1]), y) - _acc(x[:, 0], y)
  assert measured == pytest.approx(gap, abs=5e-4)


def test_bayes_logodds_matches_mixture_density():
  # Direct log p(x|+1)/p(x|-1) from the three Gaussians, in float64 on the host.
  mu, omega, sx, sy = 0.3, 2.0, 0.2, 0.15
  r, a = data_lib.cluster_means(mu, omega, sx, sy)
  x = np.random.default_rng(0).normal(scale=0.3, size=(100, 2))
  log_n = lambda m: (
    -0.5 * ((x[:, 0] - m[0]) ** 2 / sx**2 + (x[:, 1] - m[1]) ** 2 / sy**2)
  )
  pos = np.logaddexp(log_n((a, mu)), log_n((a, -mu))) + np.log(0.5)
  expected = pos - log_n((-r, 0.0))
  got = data_lib.bayes_logodds(
    jnp.asarray(x, jnp.float32), mu=mu, omega=omega, sy=sy
  )
  np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)
