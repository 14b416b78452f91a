"""A tiny Llama (RMSNorm, rotary attention, SwiGLU) whose linears can run in MXFP4.

As in Quartet's training code, the fused QKV projection, the attention output
projection, the fused gate+up projection and the down projection are the
quantized linears (`QuartetDense`); the embedding, the untied LM head, the
norms and the attention score/value products are not quantized (their
precision: `compute_dtype`, below).

As in that code (IST-DASLab/Quartet src/models/llama.py, base.py):
`residual_init="scaled"` draws the two residual projections (the attention
output and the MLP down projection, both `c_proj` there) from
N(0, 0.02 / sqrt(2 n_layers)) and every other weight from N(0, 0.02);
`swiglu_hidden` is its MLP width (int(8/3 d) up to a multiple of 256,
`--multiple-of`); `weight_decay_mask` selects what its optimizer decays (the
kernels of the block linears only). Not as in that code [ours]: RMSNorm's eps
is 1e-6 here, 1e-5 there (`--rmsnorm-eps`); `residual_init="normal"` (the
default, which the non-Quartet experiments use) draws every weight from
N(0, 0.02).

Precision (`LlamaConfig.compute_dtype`). "float32" (the default): every
product in float32, the dense ones at the backend's default precision and
the unquantized QuartetDense GEMMs at HIGHEST. "bfloat16": the official
trainer's torch bf16 autocast (IST-DASLab/Quartet src/optim/base.py wraps
forward and backward in `torch.amp.autocast(dtype=bfloat16)`, `--dtype`
bfloat16 by default in src/config/base.py): every matmul (the block
linears, the attention scores and the attention-weighted values, the LM
head) takes bf16 operands, accumulates in float32 and returns bf16; the
parameters (and so the optimizer state) stay float32, and so do the
embedding lookup (torch does not autocast `nn.Embedding`), the residual
stream (float32 + bf16 is float32), RMSNorm (computed on `x.float()`),
rotary (`q.float()`), the softmax and the logits that enter the loss (the
bf16 logits are cast up, as autocast runs `cross_entropy` in float32). The
SwiGLU product runs on the bf16 linear outputs, as there. Quantized linears
quantize their float32 inputs (the norms' outputs) or their bf16 ones (the
attention output, the SwiGLU product) as the official Triton quantizer
does, and round their GEMM outputs to bf16 (`quartet_linear`). Not as
there: the attention is an einsum + softmax, not fused flash attention
(same roundings: float32 scores and softmax, bf16 probabilities times bf16
values, bf16 output); XLA may fuse or order the float32 sums differently;
in the backward every GEMM output (quantized or not) is rounded to bf16 and
the trust masks and H32 un-rotations then run in float32, where the official
custom autograd backward (src/models/quantization/) runs in whatever dtypes
its tensors carry (it has no `custom_bwd`); jax's bf16 silu may round its
sigmoid before the product (torch's bf16 silu rounds once).

References:
  Touvron et al., "Llama 2" (2023); Castro et al., "Quartet: Native FP4
  Training Can Be Optimal for Large Language Models", NeurIPS 2025
  (arXiv 2505.14669), section 5 (model setup).
"""

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import losses
from lib.quant import QuartetDense

INIT_STD = 0.02
RESIDUAL_INITS = ("normal", "scaled")
# The projections that write into the residual stream (fused and split names).
RESIDUAL_PROJECTIONS = ("out", "o_proj", "down", "down_proj")
# LlamaConfig.compute_dtype: float32, or torch's bf16 autocast (module doc).
COMPUTE_DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
  """Model shape and which linears are quantized.

  Attributes:
    vocab_size: tokens (256 for the byte-level corpus).
    d_model, n_layers, n_heads, mlp_hidden: sizes (d_model, mlp_hidden
      multiples of 32 when linear == "quartet").
    max_len: the longest sequence the caller plans for; recorded, not
      enforced (rotary angles are computed for any length).
    linear: "dense" (high precision) or "quartet" (MXFP4 GEMMs).
    forward, backward, rerotate, implementation, fmt: `quartet_linear` flags
      (fmt="nvfp4" takes forward "rtn" or "bf16").
    split_projections: name every projection apart as Llama/Qwen checkpoints
      do (`q_proj`, `k_proj`, `v_proj`, `o_proj`, `gate_proj`, `up_proj`,
      `down_proj`) instead of Quartet's fused `qkv`, `out`, `w12`, `down`.
      The function is the same; only the parameter tree differs (what the
      per-module tools of `lib.interp` select by name).
    residual_init: "scaled" (Quartet's official init, GPT-2's rule: the
      attention output and MLP down projections N(0, 0.02 / sqrt(2
      n_layers)), so that the residual stream's variance does not grow with
      depth) or "normal" (every weight N(0, 0.02)).
    compute_dtype: "float32" or "bfloat16" (the official trainer's bf16
      autocast: bf16 matmul operands, float32 accumulation, bf16 outputs;
      float32 parameters, norms, softmax and loss; see the module doc).
  """

  vocab_size: int = 256
  d_model: int = 128
  n_layers: int = 2
  n_heads: int = 4
  mlp_hidden: int = 384
  max_len: int = 512
  linear: str = "quartet"
  forward: str | None = None
  backward: str = "sr"
  rerotate: bool = True
  implementation: str | None = None
  split_projections: bool = False
  fmt: str = "mxfp4"
  residual_init: str = "normal"
  compute_dtype: str = "float32"

  def __post_init__(self):
    if self.linear not in ("dense", "quartet"):
      raise errors.ConfigError(f"linear={self.linear!r}: 'dense' or 'quartet'")
    if self.residual_init not in RESIDUAL_INITS:
      raise errors.ConfigError(
        f"residual_init={self.residual_init!r}: one of {RESIDUAL_INITS}"
      )
    if self.compute_dtype not in COMPUTE_DTYPES:
      raise errors.ConfigError(
        f"compute_dtype={self.compute_dtype!r}: one of {COMPUTE_DTYPES}"
      )
    if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
      raise errors.ConfigError(
        f"d_model={self.d_model} must split into {self.n_heads} even-sized heads"
      )


def swiglu_hidden(d_model: int, multiple_of: int = 256) -> int:
  """The SwiGLU width of Quartet's Llama: int(8/3 d_model) up to a multiple.

  8/3 d keeps the gated MLP's parameters at those of a 4 d two-matrix MLP;
  the official model (src/models/llama.py, `--multiple-of` 256) rounds the
  floor of 2 * 4d / 3 up to `multiple_of`, which gives the paper's N
  (30,482,560 for 6 layers at d 640).
  """
  return -(-int(2 * 4 * d_model / 3) // multiple_of) * multiple_of


def weight_decay_mask(params) -> dict:
  """True on the leaves that Quartet's optimizer decays: the block linears' kernels.

  As the official param groups (src/models/base.py,
  `get_parameter_group_specs`): the weights of the transformer linears
  (qkv, out, w12, down or their split names; quantized or not) are decayed;
  the embedding, the RMSNorm scales, any bias and the untied `lm_head` are
  not. Pass it as `optax.adamw(..., mask=weight_decay_mask)`.
  """

  def decayed(path, _):
    names = [getattr(k, "key", None) for k in path]
    return names[-1] == "kernel" and "lm_head" not in names

  return jax.tree_util.tree_map_with_path(decayed, params)


def non_embedding_params(config: LlamaConfig) -> int:
  """N of the scaling law: parameters of the transformer blocks (no embeddings/head)."""
  d, h = config.d_model, config.mlp_hidden
  per_layer = 3 * d * d + d * d + 2 * d * h + h * d + 2 * d
  return config.n_layers * per_layer + d


def _f32_accumulate(lhs, rhs, *args, **kwargs):
  """lax.dot_general summing in float32 (autocast's bf16 GEMMs)."""
  kwargs["preferred_element_type"] = jnp.float32
  return jax.lax.dot_general(lhs, rhs, *args, **kwargs)


def _dense(features: int, *, compute_dtype: str, name: str, kernel_init):
  """A bias-free nn.Dense; under "bfloat16" torch autocast's `F.linear`.

  "float32": nn.Dense as is. "bfloat16": the float32 kernel and the input
  rounded to bf16, the products summed in float32, the output rounded to
  bf16. The parameter tree is the same in both.
  """
  if compute_dtype == "float32":
    return nn.Dense(
      features, use_bias=False, kernel_init=kernel_init, name=name
    )
  layer = nn.Dense(
    features,
    use_bias=False,
    dtype=compute_dtype,
    kernel_init=kernel_init,
    dot_general=_f32_accumulate,
    name=name,
  )
  return lambda x: layer(x).astype(compute_dtype)


def _einsum(spec, a, b, compute_dtype):
  """jnp.einsum, or under "bfloat16" autocast's: bf16 in, float32 sums."""
  if compute_dtype == "float32":
    return jnp.einsum(spec, a, b)
  return jnp.einsum(
    spec,
    a.astype(compute_dtype),
    b.astype(compute_dtype),
    preferred_element_type=jnp.float32,
  )


class RMSNorm(nn.Module):
  eps: float = 1e-6

  @nn.compact
  def __call__(self, x):
    scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
    var = jnp.mean(jnp.square(x.astype(jnp.float32)), axis=-1, keepdims=True)
    return (x * jax.lax.rsqrt(var + self.eps) * scale).astype(x.dtype)


def rotary(x_BLHD: jax.Array, positions_L: jax.Array) -> jax.Array:
  """Rotary position embedding on the last axis (pairs of halves)."""
  d = x_BLHD.shape[-1]
  freqs = 1.0 / (10_000 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
  angles = positions_L[:, None].astype(jnp.float32) * freqs[None, :]  # [L, D/2]
  sin, cos = jnp.sin(angles)[None, :, None], jnp.cos(angles)[None, :, None]
  x1, x2 = x_BLHD[..., : d // 2], x_BLHD[..., d // 2 :]
  return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


class Block(nn.Module):
  config: LlamaConfig

  def linear(self, features: int, name: str):
    c = self.config
    std = INIT_STD
    if c.residual_init == "scaled" and name in RESIDUAL_PROJECTIONS:
      std = INIT_STD / np.sqrt(2 * c.n_layers)
    init = nn.initializers.normal(std)
    if c.linear == "dense":
      return _dense(
        features, compute_dtype=c.compute_dtype, name=name, kernel_init=init
      )
    # Under "bfloat16" the quantizers read the input as it comes (float32
    # from the norms, bf16 from attention and SwiGLU) and the float32
    # kernel; the GEMM outputs come back rounded to bf16, which the cast
    # keeps.
    layer = QuartetDense(
      features,
      forward=c.forward,
      backward=c.backward,
      rerotate=c.rerotate,
      implementation=c.implementation,
      fmt=c.fmt,
      compute_dtype=c.compute_dtype,
      kernel_init=init,
      name=name,
    )
    if c.compute_dtype == "float32":
      return layer
    return lambda x: layer(x).astype(c.compute_dtype)

  @nn.compact
  def __call__(self, x_BLD):
    c = self.config
    b, seq, d = x_BLD.shape
    hd = d // c.n_heads
    h = RMSNorm(name="attn_norm")(x_BLD)
    if c.split_projections:
      q, k, v = (
        self.linear(d, f"{n}_proj")(h).reshape(b, seq, c.n_heads, hd)
        for n in "qkv"
      )
    else:
      qkv = self.linear(3 * d, "qkv")(h).reshape(b, seq, 3, c.n_heads, hd)
      q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    pos = jnp.arange(seq)
    if c.compute_dtype != "float32":
      q, k = q.astype(jnp.float32), k.astype(jnp.float32)  # q.float() there
    q, k = rotary(q, pos), rotary(k, pos)
    einsum = functools.partial(_einsum, compute_dtype=c.compute_dtype)
    logits = einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd).astype(q.dtype)
    causal = jnp.tril(jnp.ones((seq, seq), bool))
    logits = jnp.where(causal, logits, jnp.finfo(logits.dtype).min)
    att = jax.nn.softmax(logits, axis=-1)
    o = einsum("bhqk,bkhd->bqhd", att, v)
    if c.compute_dtype != "float32":
      o = o.astype(c.compute_dtype)  # flash attention's bf16 output
    o = o.reshape(b, seq, d)
    split = c.split_projections
    x_BLD = x_BLD + self.linear(d, "o_proj" if split else "out")(o)
    h = RMSNorm(name="mlp_norm")(x_BLD)
    if split:
      gate = self.linear(c.mlp_hidden, "gate_proj")(h)
      up = self.linear(c.mlp_hidden, "up_proj")(h)
    else:
      gate, up = jnp.split(self.linear(2 * c.mlp_hidden, "w12")(h), 2, axis=-1)
    down = self.linear(d, "down_proj" if split else "down")
    return x_BLD + down(jax.nn.silu(gate) * up)


class Llama(nn.Module):
  """Decoder-only LM: tokens [B, L] int -> logits [B, L, vocab] (fp32).

  Quantized linears draw their backward randomness from the "quant" rng
  stream: `apply(params, tokens, rngs={"quant": key})`.

  Raises:
    ShapeError, DTypeError: tokens that are not an integer [B, L] array.
    ConfigError: concrete (not traced) token ids outside [0, vocab_size):
      the embedding would give NaN above it and wrap around below 0.
  """

  config: LlamaConfig

  @nn.compact
  def __call__(self, tokens_BL):
    c = self.config
    _check_tokens(tokens_BL, c.vocab_size)
    x = nn.Embed(
      c.vocab_size, c.d_model, embedding_init=nn.initializers.normal(INIT_STD)
    )(tokens_BL)
    for i in range(c.n_layers):
      x = Block(c, name=f"block_{i}")(x)
    x = RMSNorm(name="final_norm")(x)
    return _dense(
      c.vocab_size,
      compute_dtype=c.compute_dtype,
      kernel_init=nn.initializers.normal(INIT_STD),
      name="lm_head",
    )(x).astype(jnp.float32)


def _check_tokens(tokens, vocab_size: int) -> None:
  if tokens.ndim != 2:
    raise errors.ShapeError(
      f"Llama takes tokens [batch, length], got shape {tokens.shape} (for "
      "one sequence, tokens[None])"
    )
  if not jnp.issubdtype(tokens.dtype, jnp.integer):
    raise errors.DTypeError(f"Llama takes integer tokens, got {tokens.dtype}")
  if not errors.is_concrete(tokens) or tokens.size == 0:
    return  # Values unknown inside jit.
  # On the host: concrete tokens inside a jit trace (a model's init) would
  # make jnp.min a traced value.
  ids = np.asarray(tokens)
  lo, hi = int(ids.min()), int(ids.max())
  if lo < 0 or hi >= vocab_size:
    raise errors.ConfigError(
      f"token ids must lie in [0, vocab_size={vocab_size}), got ids from "
      f"{lo} to {hi}"
    )


def next_token_loss(logits_BLV: jax.Array, targets_BL: jax.Array) -> jax.Array:
  """Mean cross-entropy (nats/token) of next-token prediction."""
  return losses.masked_cross_entropy(logits_BLV, targets_BL)
