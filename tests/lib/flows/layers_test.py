"""Actnorm, coupling, squeeze/split and the flow models (Jacobian oracles)."""

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import flows
from lib.core.errors import ConfigError
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError


def perturb_all(params, seed, scale=0.2):
  """Random values for every trainable leaf (signs/permutations kept).

  Drawn inside one jit: eager per-leaf draws would compile once per shape.
  """
  frozen = ("perm", "sign", "diag_sign")

  @jax.jit
  def f(params):
    flat, treedef = jax.tree_util.tree_flatten_with_path(params)
    key = jax.random.key(seed)
    out = []
    for i, (path, v) in enumerate(flat):
      if any(getattr(k, "key", None) in frozen for k in path):
        out.append(v)
      else:
        noise = jax.random.normal(jax.random.fold_in(key, i), v.shape, v.dtype)
        out.append(v + scale * noise)
    return treedef.unflatten(out)

  return f(params)


def test_actnorm_data_dependent_init():
  y = np.random.default_rng(0).normal(3.0, 2.5, size=(64, 2, 2, 3))
  layer = flows.ActNorm(num_channels=3, event_ndims=3)
  p = layer.init(None, jnp.asarray(y, jnp.float32))
  x, ld = layer.inverse_and_log_det(p, jnp.asarray(y, jnp.float32))
  flat = np.asarray(x).reshape(-1, 3)
  np.testing.assert_allclose(flat.mean(0), 0.0, atol=1e-5)
  np.testing.assert_allclose(flat.std(0), 1.0, atol=1e-4)
  # 4 pixels per image, log|d x / d y| = -sum log std per pixel.
  std = y.reshape(-1, 3).std(0)
  np.testing.assert_allclose(
    ld, -4 * np.log(std).sum() * np.ones(64), rtol=1e-4
  )


def test_coupling_starts_at_identity_then_matches_jacobian():
  layer = flows.AffineCoupling(num_channels=5, hidden=8)
  x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 5)), jnp.float32)
  p = jax.jit(layer.init)(jax.random.key(0), x)
  y, ld = jax.jit(layer.forward_and_log_det)(p, x)
  # Zero-init last layer: shift 0, scale sigmoid(2) (a constant rescale).
  np.testing.assert_allclose(y[:, :2], x[:, :2])
  np.testing.assert_allclose(
    y[:, 2:], x[:, 2:] / jax.nn.sigmoid(2.0), rtol=1e-6
  )
  with jax.enable_x64(True):
    p = perturb_all(jax.tree.map(lambda v: jnp.asarray(v, jnp.float64), p), 1)
    v = jnp.asarray(np.random.default_rng(1).normal(size=5))

    @jax.jit
    def f(p, v):
      y, ld = layer.forward_and_log_det(p, v[None])
      jac = jax.jacfwd(lambda u: layer.forward(p, u[None])[0])(v)
      return ld[0], jac, layer.inverse(p, y)[0]

    ld, jac, v_back = f(p, v)
    np.testing.assert_allclose(
      ld, np.linalg.slogdet(np.asarray(jac))[1], atol=1e-10
    )
    np.testing.assert_allclose(v_back, v, atol=1e-10)


def test_squeeze_layout_and_roundtrip():
  x = jnp.arange(2 * 4 * 6 * 3, dtype=jnp.float32).reshape(2, 4, 6, 3)
  s = flows.squeeze(x)
  assert s.shape == (2, 2, 3, 12)
  # Channel block (a, b) of output pixel (i, j) is input pixel (2i+a, 2j+b).
  for a in range(2):
    for b in range(2):
      blk = 3 * (2 * a + b)
      np.testing.assert_array_equal(
        s[:, :, :, blk : blk + 3], x[:, a::2, b::2, :]
      )
  np.testing.assert_array_equal(flows.unsqueeze(s), x)
  kept, out = flows.split(s)
  np.testing.assert_array_equal(flows.merge(kept, out), s)
  with pytest.raises(ShapeError, match="even"):
    flows.squeeze(jnp.ones((1, 3, 4, 1)))


@pytest.mark.parametrize("linear", ["cd"])
def test_image_flow_logdet_is_full_jacobian(linear):
  """x -> eps through squeeze, steps, split and the learned prior (f64)."""
  with jax.enable_x64(True):
    flow = flows.ImageFlow(
      image_shape=(4, 4, 4), num_levels=2, num_steps=1, linear=linear, hidden=4
    )
    x = jnp.asarray(np.random.default_rng(0).normal(size=(3, 4, 4, 4)))
    p = perturb_all(flow.init(jax.random.key(0), x), seed=1)

    @jax.jit
    def f(p, x0):
      def encode(v):
        eps, ld = flow.encode(p, v.reshape(1, 4, 4, 4))
        return eps[0], (eps[0], ld[0])

      # One program for the Jacobian and the primal outputs (cheap compile).
      return jax.jacfwd(encode, has_aux=True)(x0.ravel())

    jac, (eps, ld) = f(p, x[0])
    assert jac.shape == (64, 64) and eps.shape == (64,)
    np.testing.assert_allclose(
      ld, np.linalg.slogdet(np.asarray(jac))[1], atol=1e-9
    )
    assert abs(float(ld)) > 1e-2  # perturbed params: a non-trivial log-det


@functools.cache
def _vector_flow_2d():
  """A perturbed 2-D VectorFlow, latents z, data x = f(z) and df/dz (f64)."""
  with jax.enable_x64(True):
    flow = flows.VectorFlow(dim=2, num_steps=2, linear="cd", hidden=8)
    z = jnp.asarray(np.random.default_rng(0).normal(size=(4, 2)))
    p = perturb_all(flow.init(jax.random.key(0), z), seed=3)
    x = flow.steps.forward(p, z)
    f = lambda u: flow.steps.forward(p, u[None])[0]
    jac = np.stack([jax.jacfwd(f)(z[i]) for i in range(2)])
  return flow, p, z, x, jac


class VectorFlowTest(chex.TestCase):
  @chex.variants(with_jit=True, without_jit=True)
  def test_change_of_variables_2d(self):
    """log_prob(f(z)) = log N(z) - log|det df/dz| on a 2-D toy (f64).

    Jitted and eager (the eager path also runs the input checks).
    """
    flow, p, z, x, jac = _vector_flow_2d()
    with jax.enable_x64(True):
      log_p, z_back = self.variant(
        lambda p, x: (flow.log_prob(p, x), flow.encode(p, x)[0])
      )(p, x)
    ref = -0.5 * np.sum(np.asarray(z[:2]) ** 2 + np.log(2 * np.pi), axis=1)
    ref -= np.linalg.slogdet(jac)[1]
    np.testing.assert_allclose(log_p[:2], ref, atol=1e-10)
    chex.assert_trees_all_close(z_back, z, atol=1e-10)


def test_chain_order_is_distrax():
  a = flows.ActNorm(num_channels=1)
  b = flows.Permutation(num_channels=1)
  pa = {"loc": jnp.array([1.0]), "log_scale": jnp.array([jnp.log(3.0)])}
  c = flows.chain([a, b])
  # forward = a(b(x)): the last member acts first.
  np.testing.assert_allclose(
    c.forward({"layer_000": pa, "layer_001": {}}, jnp.array([[2.0]])), [[7.0]]
  )


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
def test_empty_chain_is_the_identity(dtype):
  # The empty composition: x unchanged, log|det I| = 0 per example, shaped
  # and typed like every other bijector's (it was the Python float 0.0):
  # float32 for a bf16 input (lib.core.dtypes).
  c = flows.chain([])
  x = jnp.arange(12.0, dtype=dtype).reshape(2, 3, 2)
  params = c.init(jax.random.key(0), x)
  for y, ld in (
    c.forward_and_log_det(params, x),
    c.inverse_and_log_det(params, x),
  ):
    np.testing.assert_array_equal(y, x)
    assert ld.shape == (2, 3) and ld.dtype == jnp.float32
    np.testing.assert_array_equal(ld, np.zeros((2, 3)))


@pytest.mark.parametrize("direction", ["forward", "inverse"])
def test_bf16_vector_flow_keeps_float32_log_dets(direction):
  # Every layer of a vector flow (ActNorm, a CD map, an affine coupling)
  # maps a bf16 batch in float32 and returns float32 log-dets; ActNorm's
  # used to be bf16 (~3 digits). Oracle: the same flow on the batch cast to
  # float32 up front, which is what the bf16 batch must mean.
  flow = flows.VectorFlow(dim=4, num_steps=2, hidden=8)
  x32 = jax.random.normal(jax.random.key(0), (16, 4))
  x = x32.astype(jnp.bfloat16)
  params = perturb_all(flow.init(jax.random.key(1), x32), 2)
  fn = getattr(flow.steps, f"{direction}_and_log_det")
  y, ld = jax.jit(fn)(params, x)
  y_ref, ld_ref = jax.jit(fn)(params, x.astype(jnp.float32))
  assert y.dtype == ld.dtype == jnp.float32
  np.testing.assert_allclose(y, y_ref, rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(ld, ld_ref, rtol=1e-6, atol=1e-6)


def test_bad_input_errors():
  flow = flows.ImageFlow(
    image_shape=(8, 8, 1), num_levels=2, num_steps=1, hidden=4
  )
  with pytest.raises(ShapeError, match="expects"):
    flow.init(jax.random.key(0), jnp.ones((2, 8, 8, 3)))  # wrong channels
  with pytest.raises(NonFiniteError):
    flow.init(jax.random.key(0), jnp.full((2, 8, 8, 1), jnp.inf))
  with pytest.raises(ShapeError, match="divisible by 4"):
    flows.ImageFlow(image_shape=(6, 6, 1), num_levels=2)
  vflow = flows.VectorFlow(dim=4, num_steps=1, hidden=4)
  with pytest.raises(ShapeError, match="expected 4"):
    vflow.init(jax.random.key(0), jnp.ones((2, 5)))
  with pytest.raises(NonFiniteError):
    vflow.init(jax.random.key(0), jnp.array([[0.0, jnp.nan, 1.0, 2.0]]))
  with pytest.raises(ConfigError):
    flows.AffineCoupling(num_channels=1)


def test_inverse_swaps_directions():
  perm = flows.Permutation(num_channels=3, seed=0)  # a 3-cycle: inverse != self
  inv = flows.Inverse(bijector=perm)
  x = jnp.array([[1.0, 2.0, 3.0]])
  np.testing.assert_array_equal(inv.forward({}, x), perm.inverse({}, x))
  np.testing.assert_array_equal(inv.inverse({}, x), perm.forward({}, x))
  assert not np.array_equal(perm.forward({}, x), x)


@pytest.mark.parametrize("event_ndims, shape", [(1, (1, 3)), (1, (3,))])
def test_actnorm_init_on_one_row_raises(event_ndims, shape):
  # One row has std 0: log_scale = log(1e-6) per channel, and the flow's
  # log-probs came out ~-1e24 without an error.
  layer = flows.ActNorm(num_channels=3, event_ndims=event_ndims)
  with pytest.raises(ShapeError, match=r"batch size 1\)") as e:
    layer.init(None, jnp.ones(shape))
  assert f"shape {shape}" in str(e.value)
  with pytest.raises(ShapeError, match="at least 2 values per channel"):
    flows.VectorFlow(dim=4, num_steps=1, hidden=4).init(
      jax.random.key(0), jnp.arange(4.0)[None]
    )


def test_actnorm_init_on_one_image_of_several_pixels_is_fine():
  # Per-channel statistics run over batch x pixels: one 2x2 image gives 4
  # values per channel, and the inverse standardises them.
  y = np.random.default_rng(1).normal(size=(1, 2, 2, 3))
  layer = flows.ActNorm(num_channels=3, event_ndims=3)
  p = layer.init(None, jnp.asarray(y, jnp.float32))
  np.testing.assert_allclose(p["loc"], y.reshape(-1, 3).mean(0), rtol=1e-5)
  np.testing.assert_allclose(
    p["log_scale"], np.log(y.reshape(-1, 3).std(0) + 1e-6), rtol=1e-5
  )
