"""lib.flows.density: oracles from the change of variables and Gaussian algebra."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import flows
from lib.flows import density


class _Logistic:
  """The density of t(y) when y is uniform on [0, 1)^D (a "model" for tests).

  t(y) = logit(a + (1 - 2a) y) has density sigma(x)(1 - sigma(x)) / (1 - 2a)
  per dim on t's range, so y scores log p(y) = 0 and bits/dim = log2 K
  (alpha = 0: t is the identity and the density is 1).
  """

  def __init__(self, alpha):
    self.alpha = alpha

  def log_prob(self, params, x):
    del params
    if self.alpha == 0:
      return jnp.zeros(x.shape[0])
    s = jax.nn.sigmoid(x)
    per_dim = jnp.log(s) + jnp.log1p(-s) - math.log(1 - 2 * self.alpha)
    return jnp.sum(per_dim.reshape(x.shape[0], -1), axis=1)


@pytest.mark.parametrize("alpha, event_ndims", [(0.05, 1), (0.1, 3), (0, 1)])
def test_uniform_density_scores_log2_levels(alpha, event_ndims):
  dq = density.Dequantized(num_levels=17, alpha=alpha, event_ndims=event_ndims)
  shape = (6, 8) if event_ndims == 1 else (6, 4, 4, 2)
  levels = jax.random.randint(jax.random.key(0), shape, 0, 17).astype(
    jnp.float32
  )
  model = _Logistic(alpha)

  @jax.jit
  def scores(levels, key):
    y = dq.batch(key, levels, 5)
    held = dq.heldout_bpd(model, None, levels, jax.random.key(2), draws=2)
    return dq.bpd(model, None, y), held

  bpd, held = scores(levels, jax.random.key(1))
  assert bpd.shape == (5,)
  np.testing.assert_allclose(bpd, math.log2(17), atol=1e-5)
  assert float(held) == pytest.approx(math.log2(17), abs=1e-5)


def test_postprocess_inverts_dequantisation():
  """floor(K (x + u) / K) = x: levels survive t and t^-1."""
  dq = density.Dequantized(num_levels=17, alpha=0.05, event_ndims=1)
  levels = jnp.arange(17.0)[None].repeat(3, 0)

  @jax.jit
  def roundtrip(levels):
    y = flows.uniform_dequantize(jax.random.key(0), levels, 17) * 0.999
    return dq.postprocess(dq.preprocess(y)[0])

  np.testing.assert_array_equal(roundtrip(levels), levels)


def test_mixing_param_count():
  def count(linear):
    model = flows.VectorFlow(dim=6, num_steps=2, linear=linear, hidden=4)
    params = jax.eval_shape(model.init, jax.random.key(0), jnp.ones((8, 6)))
    return density.mixing_param_count(params)

  assert count("dense") == 2 * 6 * 6
  assert count("identity") == count("permutation") == 0


def test_periodic_optimum_is_reached_by_one_circulant():
  """A CD layer with eigenvalues sqrt(lambda) is the exact whitening map."""
  cov = density.ring_covariance(8, lengthscale=0.5, noise=0.05)
  optimum = density.circulant_gaussian_entropy_per_dim(cov)
  ref = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1] / 8
  assert optimum == pytest.approx(ref, abs=1e-12)
  with jax.enable_x64(True):
    layer = flows.CDLinear(num_channels=8, m=2, init_kind="identity")
    params = jax.tree.map(jnp.asarray, layer.init(jax.random.key(0)))
    lam = np.real(np.fft.rfft(cov[:, 0]))
    params["log_abs_eig"] = jnp.asarray(0.5 * np.log(lam))[None]
    nll = density.expected_nll_per_dim(layer, params, cov)
    assert float(nll) == pytest.approx(optimum, abs=1e-10)
    # Any other model is worse (here: the identity map).
    ident = layer.init(jax.random.key(0))
    assert float(density.expected_nll_per_dim(layer, ident, cov)) > optimum


def test_expected_nll_of_a_diagonal_flow():
  """x = s z + b: E[-log q] = 1/2 sum_i (C_ii + b_i^2) / s_i^2 + log 2 pi s_i^2."""
  cov = density.ring_covariance(5, lengthscale=0.7, noise=0.1)
  s, b = np.array([0.5, 1.0, 1.5, 2.0, 0.8]), np.linspace(-1, 1, 5)
  ref = 0.5 * np.mean((np.diag(cov) + b**2) / s**2 + np.log(2 * np.pi * s**2))
  with jax.enable_x64(True):
    layer = flows.ActNorm(num_channels=5)
    params = {"loc": jnp.asarray(b), "log_scale": jnp.asarray(np.log(s))}
    nll = density.expected_nll_per_dim(layer, params, cov)
    assert float(nll) == pytest.approx(ref, abs=1e-12)
    # nll_per_dim is its Monte Carlo estimate on samples of N(0, C).
    x = np.random.default_rng(0).multivariate_normal(np.zeros(5), cov, 40000)
    mc = float(density.nll_per_dim(layer, params, jnp.asarray(x)))
    assert mc == pytest.approx(ref, abs=0.02)
