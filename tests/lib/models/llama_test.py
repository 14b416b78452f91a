"""The tiny Llama: shapes, causality, which linears are quantized, training signal."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import models
from lib.core import errors


def _model(linear):
  c = models.LlamaConfig(
    d_model=64, n_layers=1, n_heads=2, mlp_hidden=96, linear=linear
  )
  return models.Llama(c), c


def test_shapes_causality_and_param_names():
  model, c = _model("quartet")
  tokens = jax.random.randint(jax.random.key(0), (2, 16), 0, 256)
  params = jax.jit(model.init)(jax.random.key(1), tokens)
  logits = jax.jit(model.apply)(params, tokens)
  chex.assert_shape(logits, (2, 16, 256))
  chex.assert_type(logits, jnp.float32)
  # Changing a future token leaves earlier logits unchanged (causal mask).
  other = jax.jit(model.apply)(params, tokens.at[:, 10].set(7))
  np.testing.assert_allclose(other[:, :10], logits[:, :10], atol=1e-5)
  p = params["params"]["block_0"]
  # QuartetDense stores [N, K]; the head is an nn.Dense ([K, N]).
  chex.assert_shape([p["qkv"]["kernel"], p["w12"]["kernel"]], (192, 64))
  chex.assert_shape(params["params"]["lm_head"]["kernel"], (64, 256))
  n = sum(x.size for x in jax.tree.leaves(params["params"]["block_0"]))
  assert models.non_embedding_params(c) == n + 64  # + final norm
  dense, _ = _model("dense")
  dense_params = jax.jit(dense.init)(jax.random.key(1), tokens)
  assert dense_params["params"]["block_0"]["qkv"]["kernel"].shape == (64, 192)


def test_rotary_preserves_norm_and_relative_positions():
  x = jax.random.normal(jax.random.key(0), (1, 8, 2, 16))
  y = models.rotary(x, jnp.arange(8))
  np.testing.assert_allclose(
    jnp.linalg.norm(y, axis=-1), jnp.linalg.norm(x, axis=-1), rtol=1e-5
  )
  q = jnp.broadcast_to(x[:, :1], x.shape)
  s1 = jnp.einsum(
    "d,d->",
    models.rotary(q, jnp.arange(8))[0, 3, 0],
    models.rotary(q, jnp.arange(8))[0, 1, 0],
  )
  s2 = jnp.einsum(
    "d,d->",
    models.rotary(q, jnp.arange(8) + 5)[0, 3, 0],
    models.rotary(q, jnp.arange(8) + 5)[0, 1, 0],
  )
  np.testing.assert_allclose(s1, s2, rtol=1e-4)


def test_quartet_model_learns():
  tokens = jnp.tile(jnp.arange(32, dtype=jnp.int32), (4, 2))[:, :33]
  for linear in ("quartet",):
    model, _ = _model(linear)
    params = jax.jit(model.init)(jax.random.key(1), tokens[:, :-1])

    def loss(p, key, model=model):
      logits = model.apply(p, tokens[:, :-1], rngs={"quant": key})
      return models.next_token_loss(logits, tokens[:, 1:])

    @jax.jit
    def step(p, key):
      val, g = jax.value_and_grad(loss)(p, key)
      return jax.tree.map(lambda a, b: a - 0.5 * b, p, g), val

    first = None
    for i in range(10):
      params, val = step(params, jax.random.key(i))
      first = val if first is None else first
    assert float(val) < float(first) - 0.5, (linear, first, val)


def test_bad_tokens_are_named():
  # nn.Embed gathers out of range silently: NaN logits above the vocabulary,
  # the last rows' embedding for -1. Concrete tokens are checked.
  model, _ = _model("dense")
  tokens = jnp.zeros((2, 8), jnp.int32)
  params = jax.jit(model.init)(jax.random.key(1), tokens)
  for bad in (256, -1):
    with pytest.raises(errors.ConfigError, match="vocab_size=256"):
      model.apply(params, tokens.at[1, 3].set(bad))
  with pytest.raises(errors.ShapeError, match="tokens\\[None\\]"):
    model.apply(params, tokens[0])
  with pytest.raises(errors.DTypeError, match="integer"):
    model.apply(params, tokens.astype(jnp.float32))
  # Tokens made inside a jitted function are constants there, not tracers
  # (the training loop's init): the check reads them without tracing.
  inside = jax.jit(lambda k: model.init(k, np.zeros((2, 8), np.int32)))
  jax.tree.map(np.testing.assert_array_equal, inside(jax.random.key(1)), params)
  # In range, eager and jitted agree (the check reads, never changes, them).
  np.testing.assert_allclose(
    model.apply(params, tokens + 255),
    jax.jit(model.apply)(params, tokens + 255),
    atol=1e-6,
  )
