"""Spec A oracles for the circulant-diagonal layer (dense-matrix references)."""

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import flows
from lib.core.errors import ConfigError
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError

SIZES = (1, 2, 3, 4, 5, 8, 96)
MS = (1, 2, 3)


def random_params(layer, seed):
  """Random log-magnitudes, phases and diagonal signs, drawn with numpy.

  (numpy keeps the test cheap: no per-shape compiles for the draws.)
  """
  rng = np.random.default_rng(seed)
  m, n, k = layer.m, layer.num_channels, layer.num_channels // 2 + 1
  signs = np.where(rng.random((m, n)) < 0.5, -1.0, 1.0)
  if layer.param == "polar":
    p = {
      "log_abs_diag": 0.3 * rng.normal(size=(m, n)),
      "diag_sign": signs,
      "log_abs_eig": 0.3 * rng.normal(size=(m - 1, k)),
      "phase": rng.uniform(0, 2 * np.pi, size=(m - 1, k)),
    }
  else:
    p = {
      "diag": signs * np.exp(0.3 * rng.normal(size=(m, n))),
      "eig_re": rng.normal(size=(m - 1, k)),
      "eig_im": rng.normal(size=(m - 1, k)),
    }
  dtype = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
  return {name: jnp.asarray(v, dtype) for name, v in p.items()}


def circulant(c):
  """Dense circ(c)[i, j] = c[(i - j) mod n] (the spec's convention)."""
  n = len(c)
  return np.array([[c[(i - j) % n] for j in range(n)] for i in range(n)])


def _oracle_outputs(layer):
  """One jitted function per layer: everything the oracles compare."""

  def f(p, x):
    y, ld = layer.forward_and_log_det(p, x)
    x_back, ild = layer.inverse_and_log_det(p, y)
    # Jacobian of the map on one channel vector, shaped as one event.
    shape = (1,) * (layer.event_ndims - 1) + (layer.num_channels,)
    jac = jax.jacfwd(lambda v: layer.forward(p, v.reshape(shape)).ravel())(
      x[(0,) * (x.ndim - 1)]
    )
    return y, ld, x_back, ild, layer.dense_matrix(p), jac

  return jax.jit(f)


CASES = [(n, m, "polar") for n, m in itertools.product(SIZES, MS)] + [
  (n, m, "raw") for n, m in ((1, 2), (4, 3), (5, 2), (96, 2))
]


@pytest.mark.parametrize("n,m,param", CASES)
def test_oracles_f64(n, m, param):
  """inverse(forward(x)) = x, y = x W^T, jacfwd = W, log-det = slogdet(W)."""
  with jax.enable_x64(True):
    layer = flows.CDLinear(num_channels=n, m=m, param=param)
    p = random_params(layer, seed=n * 10 + m)
    x = np.random.default_rng(n).normal(size=(2, 3, n))
    y, ld, x_back, ild, w, jac = _oracle_outputs(layer)(p, jnp.asarray(x))
    assert y.dtype == jnp.float64 and not jnp.iscomplexobj(y)
    w = np.asarray(w)
    np.testing.assert_allclose(x_back, x, atol=1e-10)
    np.testing.assert_allclose(y, x @ w.T, atol=1e-10)
    np.testing.assert_allclose(jac, w, atol=1e-10)
    assert ld.shape == (2, 3)
    np.testing.assert_allclose(ld, np.linalg.slogdet(w)[1], atol=1e-10)
    np.testing.assert_allclose(ild, -np.asarray(ld), atol=1e-12)
    # W is generic (no accidental identity), except the 1x1 case.
    if n > 1 and m > 1:
      assert np.abs(w - np.diag(np.diag(w))).max() > 1e-3


@pytest.mark.parametrize("n,m", list(itertools.product(SIZES, MS)))
def test_oracles_f32_images(n, m):
  """float32, (B, H, W, n) input: per-image log-det = #pixels * log|det W|."""
  layer = flows.CDLinear(num_channels=n, m=m, event_ndims=3)
  p = random_params(layer, seed=n + m)
  x = np.random.default_rng(0).normal(size=(2, 3, 2, n)).astype(np.float32)
  y, ld, x_back, _, w, _ = _oracle_outputs(layer)(p, jnp.asarray(x))
  assert y.dtype == jnp.float32 and not jnp.iscomplexobj(y)
  np.testing.assert_allclose(x_back, x, atol=1e-5)
  w64 = np.asarray(w, np.float64)
  np.testing.assert_allclose(y, x @ w64.T, atol=1e-5)
  assert ld.shape == (2,)
  np.testing.assert_allclose(
    ld, 6 * np.linalg.slogdet(w64)[1], rtol=1e-4, atol=1e-4
  )


def test_matches_explicit_product_of_factors():
  """W = D1 C1 D2 C2 D3 built from dense numpy factors (not dense_matrix)."""
  with jax.enable_x64(True):
    n, m = 6, 3
    layer = flows.CDLinear(num_channels=n, m=m)
    p = random_params(layer, seed=3)
    diag, eig = jax.jit(layer.factors)(p)
    diag, eig = np.asarray(diag), np.asarray(eig)
    w = np.diag(diag[0])
    for j in range(m - 1):
      c = np.fft.irfft(eig[j], n=n)  # first column of the circulant
      np.testing.assert_allclose(np.fft.rfft(c), eig[j], atol=1e-12)
      w = w @ circulant(c) @ np.diag(diag[j + 1])
    x = np.random.default_rng(0).normal(size=(4, n))
    np.testing.assert_allclose(
      jax.jit(layer.forward)(p, jnp.asarray(x)), x @ w.T, atol=1e-12
    )


def test_random_init_is_orthogonal_with_zero_logdet():
  for n in (5, 8, 96):
    layer = flows.CDLinear(num_channels=n, m=2)
    w, ld = jax.jit(
      lambda k, layer=layer: (
        layer.dense_matrix(layer.init(k)),
        layer.log_abs_det_matrix(layer.init(k)),
      )
    )(jax.random.key(1))
    np.testing.assert_allclose(w @ w.T, np.eye(n), atol=1e-5)
    assert float(ld) == 0.0
    # Non-trivial mixing (not a diagonal matrix).
    assert float(jnp.abs(w - jnp.diag(jnp.diag(w))).max()) > 1e-2
  ident = flows.CDLinear(num_channels=8, m=3, init_kind="identity")
  w = jax.jit(lambda k: ident.dense_matrix(ident.init(k)))(jax.random.key(0))
  np.testing.assert_allclose(w, np.eye(8), atol=1e-6)


def test_half_spectrum_weights_sum_to_n():
  for n in SIZES:
    assert flows.half_spectrum_weights(n).sum() == n


def test_spectral_rescale_bounds_factors():
  layer = flows.CDLinear(num_channels=8, m=3, spectral_rescale=True)
  p = random_params(layer, seed=7)
  w, ld = jax.jit(
    lambda p: (layer.dense_matrix(p), layer.log_abs_det_matrix(p))
  )(p)
  w = np.asarray(w, np.float64)
  assert np.linalg.norm(w, 2) <= 1 + 1e-5
  np.testing.assert_allclose(ld, np.linalg.slogdet(w)[1], rtol=1e-4)


def test_jit_matches_eager_and_the_dense_map_and_grads_real():
  layer = flows.CDLinear(num_channels=12, m=2)
  p = random_params(layer, seed=2)
  x = jax.random.normal(jax.random.key(0), (5, 12))
  y = jax.jit(layer.forward)(p, x)
  # Before, jit against jit: the same program twice, which cannot differ.
  np.testing.assert_allclose(y, layer.forward(p, x), rtol=1e-5, atol=1e-6)
  w = np.asarray(layer.dense_matrix(p), np.float64)
  np.testing.assert_allclose(
    y, np.asarray(x, np.float64) @ w.T, rtol=1e-5, atol=1e-5
  )
  g = jax.jit(
    jax.grad(lambda q: jnp.sum(layer.forward_and_log_det(q, x)[0] ** 2))
  )(p)
  chex.assert_trees_all_equal_dtypes(g, p)  # real, never complex
  chex.assert_tree_all_finite(g)
  # The frozen DC/Nyquist phases and the diagonal signs get no gradient.
  assert float(jnp.abs(g["phase"][:, 0]).max()) == 0.0
  assert float(jnp.abs(g["phase"][:, -1]).max()) == 0.0
  assert float(jnp.abs(g["diag_sign"]).max()) == 0.0


def test_bad_input():
  layer = flows.CDLinear(num_channels=4)
  p = layer.init(jax.random.key(0))
  with pytest.raises(ShapeError, match="channel"):
    layer.forward(p, jnp.ones((3, 5)))
  with pytest.raises(NonFiniteError, match="non-finite"):
    layer.inverse(p, jnp.array([[1.0, jnp.nan, 0.0, 1.0]]))
  with pytest.raises(ConfigError):
    flows.CDLinear(num_channels=4, m=0)
  with pytest.raises(ConfigError):
    flows.CDLinear(num_channels=4, param="complex")


@pytest.mark.parametrize(
  "n,m,param",
  [(1, 2, "polar"), (5, 2, "polar"), (8, 2, "raw"), (6, 3, "polar")],
)
def test_dense_implementation_is_the_same_map_f64(n, m, param):
  """The materialised W and W^-1 against the explicit product of factors."""
  with jax.enable_x64(True):
    dense = flows.CDLinear(
      num_channels=n, m=m, param=param, implementation="dense"
    )
    fft = flows.CDLinear(num_channels=n, m=m, param=param, implementation="fft")
    p = random_params(dense, seed=7 * n + m)
    diag, eig = (np.asarray(a) for a in jax.jit(dense.factors)(p))
    w = np.diag(diag[0])
    for j in range(m - 1):
      w = w @ circulant(np.fft.irfft(eig[j], n=n)) @ np.diag(diag[j + 1])
    x = np.random.default_rng(1).normal(size=(3, 2, n))
    y, ld = jax.jit(dense.forward_and_log_det)(p, jnp.asarray(x))
    x_back, ild = jax.jit(dense.inverse_and_log_det)(p, y)
    np.testing.assert_allclose(y, x @ w.T, atol=1e-12)
    np.testing.assert_allclose(x_back, x, atol=1e-10)
    np.testing.assert_allclose(ld, np.linalg.slogdet(w)[1], atol=1e-10)
    np.testing.assert_allclose(ild, -np.asarray(ld), atol=1e-12)
    w_d, w_inv = jax.jit(dense.weight_matrices, static_argnums=1)(
      p, jnp.float64
    )
    np.testing.assert_allclose(w_d, w, atol=1e-12)
    np.testing.assert_allclose(w_inv, np.linalg.inv(w), atol=1e-10)
    np.testing.assert_allclose(
      jax.jit(fft.forward)(p, jnp.asarray(x)), y, atol=1e-12
    )
    # Gradients agree too (training takes either path).
    loss = lambda layer: lambda p: jnp.sum(jnp.sin(layer.forward(p, x)))
    g_dense = jax.grad(loss(dense))(p)
    g_fft = jax.grad(loss(fft))(p)
    for k in p:
      np.testing.assert_allclose(g_dense[k], g_fft[k], atol=1e-10, err_msg=k)


def test_auto_picks_by_size_batch_and_backend():
  from lib.flows import cd_linear

  limit = cd_linear.DENSE_MAX_N[jax.default_backend()]
  small = flows.CDLinear(num_channels=8)
  assert small.use_dense(jnp.zeros((64, 8)))
  assert not small.use_dense(jnp.zeros((4, 8)))  # batch < n: FFT
  big = flows.CDLinear(num_channels=2 * limit)
  assert not big.use_dense(jnp.zeros((4 * limit, 2 * limit)))
  assert not flows.CDLinear(num_channels=8, m=1).use_dense(jnp.zeros((64, 8)))
  assert flows.CDLinear(num_channels=8, implementation="dense").use_dense(
    jnp.zeros((1, 8))
  )
  with pytest.raises(ConfigError, match="implementation"):
    flows.CDLinear(num_channels=8, implementation="fast")
