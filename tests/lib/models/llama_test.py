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


@pytest.mark.parametrize("linear", ["dense", "quartet"])
@pytest.mark.parametrize("split", [False, True])
def test_weight_decay_mask_selects_the_block_linears(linear, split):
  c = models.LlamaConfig(
    d_model=64,
    n_layers=2,
    n_heads=2,
    mlp_hidden=96,
    linear=linear,
    split_projections=split,
  )
  params = jax.eval_shape(
    models.Llama(c).init, jax.random.key(0), jnp.zeros((1, 8), jnp.int32)
  )
  mask = models.weight_decay_mask(params)
  decayed = {
    jax.tree_util.keystr(path)
    for path, m in jax.tree_util.tree_leaves_with_path(mask)
    if m
  }
  names = (
    ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj")
    + ("down_proj",)
    if split
    else ("qkv", "out", "w12", "down")
  )
  # The official groups: the weights of the block linears and nothing else
  # (not the embedding, the RMSNorm scales or the untied lm_head).
  assert decayed == {
    f"['params']['block_{i}']['{n}']['kernel']" for i in range(2) for n in names
  }
  assert len(jax.tree.leaves(mask)) == 1 + 2 * (2 + len(names)) + 2


def test_scaled_residual_init_std():
  # A large layer: the down projection has 256 x 1024 = 262,144 draws, so the
  # sample std's relative error is ~1 / sqrt(2 * 262144) = 0.14 %.
  kw = dict(d_model=256, n_layers=8, n_heads=4, mlp_hidden=1024)
  tokens = jnp.zeros((1, 8), jnp.int32)
  for init, residual_std in (("scaled", 0.02 / 4.0), ("normal", 0.02)):
    c = models.LlamaConfig(linear="dense", residual_init=init, **kw)
    p = jax.jit(models.Llama(c).init)(jax.random.key(0), tokens)["params"]
    for i in (0, 7):
      b = p[f"block_{i}"]
      # out: 65,536 draws (0.28 %), qkv 196,608 (0.16 %): 2 % is > 7 sigma.
      for name, want in (
        ("down", residual_std),
        ("out", residual_std),
        ("qkv", 0.02),
        ("w12", 0.02),
      ):
        got = float(np.std(np.asarray(b[name]["kernel"], np.float64)))
        assert got == pytest.approx(want, rel=0.02), (init, i, name)
    assert float(np.std(p["lm_head"]["kernel"])) == pytest.approx(
      0.02, rel=0.02
    )
  with pytest.raises(errors.ConfigError, match="residual_init"):
    models.LlamaConfig(residual_init="gpt2")


def test_swiglu_hidden_gives_the_paper_param_counts():
  # Quartet's four sizes (main_setup.sh) and their N (plots.ipynb).
  paper = {
    (6, 640, 5): (1792, 30_482_560),
    (7, 768, 6): (2048, 49_556_736),
    (8, 1024, 8): (2816, 102_777_856),
    (10, 1280, 10): (3584, 203_188_480),
  }
  for (layers, d, heads), (hidden, n) in paper.items():
    assert models.swiglu_hidden(d) == hidden
    c = models.LlamaConfig(
      d_model=d, n_layers=layers, n_heads=heads, mlp_hidden=hidden
    )
    assert models.non_embedding_params(c) == n
  # int(8/3 d) up to a multiple: 85 -> 96, 170 -> 192, 341 -> 352 by 32.
  assert [models.swiglu_hidden(d, 32) for d in (32, 64, 128)] == [96, 192, 352]


def _bf16(a):
  """a rounded to bfloat16, as float64."""
  return np.asarray(
    jnp.asarray(a, jnp.float32).astype(jnp.bfloat16), np.float64
  )


@pytest.mark.parametrize("linear", ["dense", "quartet"])
def test_float32_default_is_the_float32_path(linear):
  tokens = jax.random.randint(jax.random.key(0), (2, 16), 0, 256)
  outs = []
  for extra in ({}, {"compute_dtype": "float32"}):
    c = models.LlamaConfig(
      d_model=64, n_layers=1, n_heads=2, mlp_hidden=96, linear=linear, **extra
    )
    model = models.Llama(c)
    params = jax.jit(model.init)(jax.random.key(1), tokens)
    outs.append(jax.jit(model.apply)(params, tokens))
  assert models.LlamaConfig().compute_dtype == "float32"
  np.testing.assert_array_equal(outs[0], outs[1])


def _captured(compute_dtype, linear="dense"):
  c = models.LlamaConfig(
    d_model=64,
    n_layers=1,
    n_heads=2,
    mlp_hidden=96,
    linear=linear,
    forward="bf16",
    backward="bf16",
    compute_dtype=compute_dtype,
  )
  model = models.Llama(c)
  tokens = jax.random.randint(jax.random.key(0), (2, 16), 0, 256)
  params = jax.jit(model.init)(jax.random.key(1), tokens)
  logits, state = jax.jit(
    lambda p, t: model.apply(
      p, t, capture_intermediates=True, mutable=["intermediates"]
    )
  )(params, tokens)
  return params, logits, state["intermediates"]


@pytest.mark.parametrize("linear", ["dense", "quartet"])
def test_bfloat16_lm_head_is_torch_autocast(linear):
  # Oracle from the math of torch bf16 autocast's F.linear: the float32
  # norm output and kernel rounded to bf16, summed in float32 (here exactly,
  # in float64), the logits rounded to bf16 and cast up for the loss.
  params, logits, inter = _captured("bfloat16", linear)
  h = inter["final_norm"]["__call__"][0]
  assert h.dtype == jnp.float32  # RMSNorm in float32, as x.float() there
  kernel = params["params"]["lm_head"]["kernel"]
  assert kernel.dtype == jnp.float32
  want = _bf16(_bf16(h) @ _bf16(kernel))
  assert logits.dtype == jnp.float32
  # Float32 sums in another order may cross a bf16 rounding boundary.
  np.testing.assert_allclose(logits, want, rtol=2**-8, atol=1e-7)
  assert np.mean(np.asarray(logits, np.float64) == want) > 0.97
  # The block's matmuls ran in bf16 too: a bounded, nonzero change.
  _, logits32, _ = _captured("float32", linear)
  diff = float(jnp.max(jnp.abs(logits - logits32)))
  assert 1e-4 < diff < 0.05 * float(jnp.max(jnp.abs(logits32)))


def test_bfloat16_block_keeps_a_float32_residual_stream():
  # bf16 matmuls inside the branches; the residual adds stay float32.
  c = models.LlamaConfig(
    d_model=64, n_layers=1, n_heads=2, mlp_hidden=96, linear="dense"
  )
  c16 = models.LlamaConfig(**{**c.__dict__, "compute_dtype": "bfloat16"})
  tokens = jax.random.randint(jax.random.key(0), (1, 8), 0, 256)
  params = models.Llama(c).init(jax.random.key(1), tokens)
  x = jax.random.normal(jax.random.key(2), (1, 8, 64))
  block = {"params": params["params"]["block_0"]}
  y32 = models.llama.Block(c).apply(block, x)
  y16 = models.llama.Block(c16).apply(block, x)
  assert y16.dtype == jnp.float32  # the residual stream stays float32
  rel = float(jnp.linalg.norm(y16 - y32) / jnp.linalg.norm(y32 - x))
  assert 1e-4 < rel < 2e-2  # bf16 roundings of the branch outputs only


def test_bad_compute_dtype():
  with pytest.raises(errors.ConfigError, match="compute_dtype='float16'"):
    models.LlamaConfig(compute_dtype="float16")
