"""QuartetDense: a flax Dense whose GEMMs run in MXFP4."""

import jax
import jax.numpy as jnp
import numpy as np

from lib import quant


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
