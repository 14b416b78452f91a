"""Baseline mixing layers against their dense matrices (f64)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import flows
from lib.core.errors import ConfigError
from lib.core.errors import ShapeError


def perturbed(params, seed):
  """Random trainable values; fixed signs/permutations stay as initialised."""
  rng = np.random.default_rng(seed)
  out = {}
  for name, v in params.items():
    if name in ("perm", "sign", "diag_sign"):
      out[name] = v
    else:
      out[name] = v + 0.3 * jnp.asarray(rng.normal(size=v.shape), v.dtype)
  return out


@pytest.mark.parametrize(
  "kind", ["dense", "lu", "permutation", "identity", "cd", "cd3"]
)
def test_matches_dense_matrix_on_images(kind):
  n = 6
  with jax.enable_x64(True):
    layer = flows.make_linear(kind, n, event_ndims=3)
    p = perturbed(layer.init(jax.random.key(0), None), seed=1)
    x = np.random.default_rng(2).normal(size=(2, 3, 2, n))

    @jax.jit
    def f(p, x):
      y, ld = layer.forward_and_log_det(p, x)
      x_back, ild = layer.inverse_and_log_det(p, y)
      return y, ld, x_back, ild, layer.dense_matrix(p)

    y, ld, x_back, ild, w = map(np.asarray, f(p, jnp.asarray(x)))
    np.testing.assert_allclose(y, x @ w.T, atol=1e-10)
    np.testing.assert_allclose(x_back, x, atol=1e-10)
    ref = 6 * np.linalg.slogdet(w)[1]  # 3 x 2 pixels
    np.testing.assert_allclose(ld, np.full(2, ref), atol=1e-10)
    np.testing.assert_allclose(ild, -ld, atol=1e-10)
    if kind in ("dense", "lu", "cd", "cd3"):
      assert abs(ref) > 1e-3  # the perturbation made the log-det non-trivial


def test_lu_init_is_a_rotation():
  layer = flows.LULinear(num_channels=5)
  w = jax.jit(lambda k: layer.dense_matrix(layer.init(k)))(jax.random.key(3))
  np.testing.assert_allclose(w @ w.T, np.eye(5), atol=1e-5)


def test_bad_kind_and_channels():
  with pytest.raises(ConfigError, match="unknown linear"):
    flows.make_linear("butterfly", 4)
  # 'cd<m>' needs an integer m >= 1: before, 'cdx' was int()'s bare
  # ValueError and 'cd0' reached the layer.
  for kind in ("cdx", "cd0", "cd-1"):
    assert not flows.is_cd_kind(kind)
    with pytest.raises(
      ConfigError, match=f"unknown linear layer kind '{kind}'"
    ):
      flows.make_linear(kind, 4)
  assert flows.is_cd_kind("cd3") and not flows.is_cd_kind("cd")
  assert flows.make_linear("cd3", 4).m == 3
  layer = flows.make_linear("dense", 4)
  p = layer.init(jax.random.key(0))
  with pytest.raises(ShapeError, match="expected 4"):
    layer.inverse(p, jnp.ones((2, 3)))


@pytest.mark.parametrize(
  "kind,implementation",
  [
    ("dense", None),
    ("cd", "fft"),
    ("cd", "dense"),
    ("cd3", "auto"),
    ("lu", None),
  ],
)
def test_bf16_input_maps_like_float32(kind, implementation):
  # jnp.fft and slogdet/inv have no bf16: a bf16 batch raised there (or, for
  # CD, only on the FFT path, so the result hung on the batch size). Now
  # it maps in float32 (lib.core.dtypes): W x against the dense matrix in
  # f64, and the log-det is float32 too (in bf16 it kept ~3 digits; LU
  # mapped and solved in bf16).
  n = 6
  kw = {} if implementation is None else {"implementation": implementation}
  layer = flows.make_linear(kind, n, **kw)
  p = perturbed(layer.init(jax.random.key(0), None), seed=1)
  x = jax.random.normal(jax.random.key(2), (8, n)).astype(jnp.bfloat16)
  y, ld = jax.jit(layer.forward_and_log_det)(p, x)
  x_back, ild = jax.jit(layer.inverse_and_log_det)(p, y)
  w = np.asarray(layer.dense_matrix(p), np.float64)
  x64 = np.asarray(x, np.float64)
  assert y.dtype == ld.dtype == x_back.dtype == ild.dtype == jnp.float32
  np.testing.assert_allclose(y, x64 @ w.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(x_back, x64, rtol=1e-5, atol=1e-5)
  ref = np.linalg.slogdet(w)[1]
  np.testing.assert_allclose(ld, ref, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(ild, -ref, rtol=1e-5, atol=1e-6)


def test_lu_fixed_factors_survive_weight_decay():
  # optax.adamw decays every leaf, the stored permutation matrix too (its
  # gradient is zero, its decay is not): the map and its log-det stay those
  # of P L U with P the permutation, so the flow still inverts exactly and
  # log|det| is slogdet of the Jacobian.
  n = 5
  layer = flows.LULinear(num_channels=n)
  params = layer.init(jax.random.key(0))
  x = jax.random.normal(jax.random.key(1), (16, n))

  def nll(p):
    y, ld = layer.inverse_and_log_det(p, x)
    return jnp.mean(0.5 * jnp.sum(y**2, -1) - ld)

  tx = optax.adamw(0.05, weight_decay=0.5)
  state = tx.init(params)
  for _ in range(20):
    updates, state = tx.update(jax.grad(nll)(params), state, params)
    params = optax.apply_updates(params, updates)
  assert np.max(params["perm"]) < 0.99  # the stored matrix did decay
  y, ld = jax.jit(layer.forward_and_log_det)(params, x)
  x_back, ild = jax.jit(layer.inverse_and_log_det)(params, y)
  np.testing.assert_allclose(x_back, x, atol=1e-5)
  jac = jax.jacfwd(lambda v: layer.forward(params, v))(x[0])
  np.testing.assert_allclose(ld[0], np.linalg.slogdet(jac)[1], atol=1e-5)
  np.testing.assert_allclose(ild, -ld, atol=1e-6)
