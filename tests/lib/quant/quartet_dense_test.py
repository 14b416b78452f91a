"""QuartetDense: a flax Dense whose GEMMs run in MXFP4."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import quant
from lib.core import errors
from lib.quant import quartet


def test_quartet_dense_close_to_dense_and_trainable():
  layer = quant.QuartetDense(features=64, use_bias=True)
  x = jax.random.normal(jax.random.key(0), (2, 16, 128))
  params = jax.jit(layer.init)(jax.random.key(1), x)
  kernel = params["params"]["kernel"]
  assert kernel.shape == (64, 128)
  y = jax.jit(
    lambda p, x: layer.apply(p, x, rngs={"quant": jax.random.key(2)})
  )(params, x)
  dense = x @ kernel.T
  rel = float(jnp.sum((y - dense) ** 2) / jnp.sum(dense**2))
  assert y.shape == (2, 16, 64) and 0.02 < rel < 0.1  # MXFP4 forward error

  def loss(p):
    out = layer.apply(p, x, rngs={"quant": jax.random.key(3)})
    return jnp.mean((out - 1.0) ** 2)

  grads = jax.jit(jax.grad(loss))(params)
  assert grads["params"]["kernel"].shape == (64, 128)
  assert np.all(np.isfinite(grads["params"]["kernel"]))
  assert float(jnp.abs(grads["params"]["bias"]).sum()) > 0


def test_quartet_dense_bf16_modes_equal_plain_dense():
  layer = quant.QuartetDense(features=32, forward="bf16", backward="bf16")
  x = jax.random.normal(jax.random.key(0), (16, 64))
  params = jax.jit(layer.init)(jax.random.key(1), x)
  y = jax.jit(layer.apply)(params, x)
  np.testing.assert_allclose(
    y, x @ params["params"]["kernel"].T, rtol=1e-5, atol=1e-5
  )


def _layer_and_params(**kw):
  layer = quant.QuartetDense(features=32, **kw)
  x = jax.random.normal(jax.random.key(0), (32, 64))
  return layer, x, layer.init(jax.random.key(1), x)


def test_quartet_dense_without_a_quant_rng_evaluates_as_with_one():
  # The forward reads no randomness, so the key cannot change it.
  layer, x, params = _layer_and_params()
  keyed = layer.apply(params, x, rngs={"quant": jax.random.key(5)})
  np.testing.assert_array_equal(layer.apply(params, x), keyed)


@pytest.mark.parametrize(
  "kw", [{}, {"backward": "rtn"}, {"fmt": "nvfp4", "backward": "rtn"}]
)
def test_differentiating_a_random_backward_without_a_quant_rng_names_it(kw):
  layer, x, params = _layer_and_params(**kw)
  assert quartet.needs_key(layer.backward, layer.rerotate)
  with pytest.raises(errors.ConfigError, match=r"rngs=\{'quant': key\}"):
    jax.grad(lambda p: jnp.sum(layer.apply(p, x)))(params)


@pytest.mark.parametrize(
  "kw",
  [
    {"backward": "bf16"},
    {"backward": "rtn", "rerotate": False},
    {"fmt": "nvfp4", "backward": "rtn", "rerotate": False},
  ],
)
def test_a_deterministic_backward_needs_no_quant_rng(kw):
  layer, x, params = _layer_and_params(**kw)
  assert not quartet.needs_key(layer.backward, layer.rerotate)

  def grad(rngs):
    return jax.grad(lambda p: jnp.sum(layer.apply(p, x, rngs=rngs) ** 2))(
      params
    )

  keyed = grad({"quant": jax.random.key(7)})
  jax.tree.map(np.testing.assert_array_equal, grad(None), keyed)
