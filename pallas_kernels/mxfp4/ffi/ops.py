"""`jax.ffi.ffi_call` wrappers for the MXFP4 GEMM and fused quantizer.

Packed FP4 crosses the FFI boundary as uint8 (two E2M1 codes per byte, even
element in the low nibble) and E8M0 scales as uint8 bytes: XLA hands a
`float4_e2m1fn` buffer over packed although it reports one byte per element,
so the typed FP4 dtypes are never passed (spec quartet_fp4.md section 4.1).

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.errors import MxDTypeError
from pallas_kernels.mxfp4.errors import MxInputError
from pallas_kernels.mxfp4.ffi import _loader

GROUP = 32
METHODS = {"quest": 0, "absmax": 1, "absmax_sr": 2}


def _ensure_registered() -> None:
  # The CPU library also serves CPU-placed computations on GPU hosts.
  platform = _loader.ffi_platform()
  if platform != "cpu" and _loader.is_built("cpu"):
    _loader.ensure_registered("cpu")
  _loader.ensure_registered(platform)


def _check_u8(name, x):
  if x.dtype != jnp.uint8:
    raise MxDTypeError(f"{name} must be uint8 (packed MXFP4), got {x.dtype}")


def gemm(
  a_codes,
  a_scale,
  b_codes,
  b_scale,
  *,
  alpha: float = 1.0,
  out_dtype=jnp.float32,
):
  """`alpha * dequant(A) @ dequant(B)^T` for row-major MXFP4 operands ("TN").

  Args:
    a_codes: uint8 `[..., M, K/2]` packed E2M1 codes of A.
    a_scale: uint8 `[..., M, K/32]` E8M0 scale bytes of A.
    b_codes: uint8 `[..., N, K/2]` packed E2M1 codes of B.
    b_scale: uint8 `[..., N, K/32]` E8M0 scale bytes of B.
    alpha: static scalar applied to the fp32 accumulator (1/9 for Quartet's
      backward GEMMs, whose operands store 3x their value).
    out_dtype: float32 or bfloat16.

  Returns:
    `[..., M, N]` array of `out_dtype`; leading dims broadcast.
  """
  for name, x in (
    ("a_codes", a_codes),
    ("a_scale", a_scale),
    ("b_codes", b_codes),
    ("b_scale", b_scale),
  ):
    _check_u8(name, x)
  out_dtype = jnp.dtype(out_dtype)
  if out_dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)):
    raise MxDTypeError(
      f"out_dtype must be float32 or bfloat16, got {out_dtype}"
    )
  if a_codes.ndim < 2 or b_codes.ndim < 2:
    raise MxInputError("gemm operands need at least 2 dims [..., rows, K/2]")
  m, kb = a_codes.shape[-2:]
  n = b_codes.shape[-2]
  k = 2 * kb
  if (
    k % GROUP
    or b_codes.shape[-1] != kb
    or a_scale.shape[-2:] != (m, k // GROUP)
    or b_scale.shape[-2:] != (n, k // GROUP)
  ):
    raise MxInputError(
      "gemm: inconsistent MXFP4 shapes: a_codes "
      f"{a_codes.shape}, a_scale {a_scale.shape}, b_codes {b_codes.shape}, "
      f"b_scale {b_scale.shape}; need codes [..., R, K/2] and scales "
      "[..., R, K/32] with K % 32 == 0"
    )
  _ensure_registered()
  batch = jnp.broadcast_shapes(
    a_codes.shape[:-2],
    a_scale.shape[:-2],
    b_codes.shape[:-2],
    b_scale.shape[:-2],
  )
  args = [
    jnp.broadcast_to(x, batch + x.shape[-2:])
    for x in (a_codes, a_scale, b_codes, b_scale)
  ]
  call = jax.ffi.ffi_call(
    _loader.GEMM_TARGET,
    jax.ShapeDtypeStruct(batch + (m, n), out_dtype),
    # The handlers loop over leading batch dims, so vmap only has to
    # broadcast every operand to the same batch shape.
    vmap_method="broadcast_all",
  )
  return call(*args, alpha=np.float32(alpha))


def nvfp4_gemm(a, b, *, out_dtype=jnp.float32):
  """`reference.nvfp4_matmul(a, b)` through the FFI ("TN", fp32 sums).

  The block scales cross the boundary as E4M3 bytes in the swizzled layout
  cuBLASLt's VEC16_UE4M3 mode reads (`reference.to_blocked`, one flat
  vector per batch element); the tensor scales as fp32 with the batch shape.
  CUDA: cuBLASLt's NVFP4 GEMM on compute capability 10.x / 12.x, dequantize
  + BF16 on 8.x / 9.x (chosen by capability; `last_cuda_gemm_path()`); CPU:
  the oracle handler.

  Args:
    a: `reference.NVFP4Tensor` [..., M, K] (K % 16 == 0).
    b: `reference.NVFP4Tensor` [..., N, K].
    out_dtype: float32 or bfloat16.

  Returns:
    `[..., M, N]` array of `out_dtype`; leading dims broadcast.
  """
  out_dtype = jnp.dtype(out_dtype)
  if out_dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)):
    raise MxDTypeError(
      f"out_dtype must be float32 or bfloat16, got {out_dtype}"
    )
  for name, t in (("a", a), ("b", b)):
    _check_u8(f"{name}.codes", t.codes)
    if t.codes.ndim < 2 or t.scale.shape != t.codes.shape[:-1] + (
      t.codes.shape[-1] * 2 // reference.NVFP4_GROUP,
    ):
      raise MxInputError(
        f"nvfp4_gemm: {name} has codes {t.codes.shape} and block scales "
        f"{t.scale.shape}; need [..., R, K/2] and [..., R, K/16]"
      )
  m, kb = a.codes.shape[-2:]
  n = b.codes.shape[-2]
  if b.codes.shape[-1] != kb:
    raise MxInputError(
      f"nvfp4_gemm: contraction sizes differ: a {a.shape}, b {b.shape}"
    )
  _ensure_registered()
  batch = jnp.broadcast_shapes(
    a.codes.shape[:-2],
    b.codes.shape[:-2],
    jnp.shape(a.global_scale),
    jnp.shape(b.global_scale),
  )
  ks = 2 * kb // reference.NVFP4_GROUP

  def swizzled(scale, rows):
    flat = reference.e4m3_bytes(scale).reshape(-1, rows, ks)
    out = jax.vmap(reference.to_blocked)(flat)
    return out.reshape(scale.shape[:-2] + out.shape[-1:])

  sa, sb = swizzled(a.scale, m), swizzled(b.scale, n)
  args = [
    jnp.broadcast_to(a.codes, batch + a.codes.shape[-2:]),
    jnp.broadcast_to(sa, batch + sa.shape[-1:]),
    jnp.broadcast_to(jnp.asarray(a.global_scale, jnp.float32), batch),
    jnp.broadcast_to(b.codes, batch + b.codes.shape[-2:]),
    jnp.broadcast_to(sb, batch + sb.shape[-1:]),
    jnp.broadcast_to(jnp.asarray(b.global_scale, jnp.float32), batch),
  ]
  call = jax.ffi.ffi_call(
    _loader.NVFP4_GEMM_TARGET,
    jax.ShapeDtypeStruct(batch + (m, n), out_dtype),
    vmap_method="broadcast_all",
  )
  return call(*args)


@functools.cache
def _quantize_fn(method: int, rotate: bool):
  """An ffi_call for one (method, rotate) with a batching rule."""

  def call(x, signs, seed, period):
    codes_shape = x.shape[:-1] + (x.shape[-1] // 2,)
    scale_shape = x.shape[:-1] + (x.shape[-1] // GROUP,)
    return jax.ffi.ffi_call(
      _loader.QUANTIZE_TARGET,
      (
        jax.ShapeDtypeStruct(codes_shape, jnp.uint8),
        jax.ShapeDtypeStruct(scale_shape, jnp.uint8),
        jax.ShapeDtypeStruct(x.shape, jnp.bool_),
      ),
      vmap_method="sequential",
    )(
      x,
      signs,
      seed,
      method=np.int32(method),
      rotate=rotate,
      period=np.int64(period),
    )

  @functools.cache
  def make(period: int):
    """`period`: SR counters restart every `period` elements (one example)."""

    @jax.custom_batching.custom_vmap
    def quantize_call(x, signs, seed):
      return call(x, signs, seed, period or x.size)

    @quantize_call.def_vmap
    def _rule(axis_size, in_batched, x, signs, seed):
      x_b, signs_b, seed_b = in_batched
      if not x_b:
        x = jnp.broadcast_to(x, (axis_size,) + x.shape)
      if not (signs_b or seed_b):
        # Rows are quantised independently, so a batch of x is more rows
        # of one call; SR counters restart per example (period), which is
        # what vmap of the per-example reference computes.
        inner = make(period or x[0].size)
        return inner(x, signs, seed), (True, True, True)
      signs = signs if signs_b else jnp.broadcast_to(signs, (axis_size, GROUP))
      seed = seed if seed_b else jnp.broadcast_to(seed, (axis_size,))
      out = jax.lax.map(lambda a: quantize_call(*a), (x, signs, seed))
      return out, (True, True, True)

    return quantize_call

  return make


def quantize(
  x, *, method: str = "quest", rotate: bool = True, signs=None, seed=None
):
  """Fused rotate + MXFP4 quantization along the last axis.

  Per 32-group of the last axis: optional rotation `x . H32 . diag(signs)`
  (normalised Sylvester Hadamard), then
    * "quest": scale `2^floor(log2(c sigma + 1e-8))`, c =
      `reference.QUEST_SIGMA_SCALE` = 2.92247856 / 6 (population
      std of the rotated group), round-to-nearest-even codes, trust mask
      `|x_r / scale| < 6` (Quartet forward);
    * "absmax": scale `2^floor(log2 amax)`, codes of `3 x_r / scale` (3/4
      headroom; dequantise with an extra 1/3), round to nearest even;
    * "absmax_sr": as "absmax" with stochastic rounding drawn from a
      counter-based hash of `seed` and the flat element index (Quartet
      backward; unbiased, deterministic for a fixed seed).

  Args:
    x: float32 or bfloat16 `[..., K]`, K % 32 == 0.
    method: "quest", "absmax" or "absmax_sr".
    rotate: apply the (signed) Hadamard rotation first.
    signs: optional float32 `[32]` of +-1 column signs (random rotation of
      the backward pass); default all ones.
    seed: uint32 scalar (`reference.seed_from_key(key)`); required for
      "absmax_sr". The uniforms are `reference.hash_uniform(seed, flat
      element index)`, so SR codes equal the jnp reference's bit for bit.

  Returns:
    `(codes uint8 [..., K/2], scale uint8 [..., K/32], mask bool [..., K])`.
  """
  if method not in METHODS:
    raise MxInputError(
      f"method must be one of {sorted(METHODS)}, got {method!r}"
    )
  if x.dtype not in (jnp.float32, jnp.bfloat16):
    raise MxDTypeError(f"x must be float32 or bfloat16, got {x.dtype}")
  if x.ndim < 1 or x.shape[-1] % GROUP:
    raise MxInputError(
      f"quantize: last axis must be a multiple of {GROUP}, got {x.shape}"
    )
  if signs is None:
    signs = jnp.ones((GROUP,), jnp.float32)
  signs = jnp.asarray(signs, jnp.float32)
  if signs.shape != (GROUP,):
    raise MxInputError(f"signs must have shape [32], got {signs.shape}")
  if seed is None:
    if method == "absmax_sr":
      raise MxInputError("method='absmax_sr' needs a uint32 scalar seed")
    seed = jnp.zeros((), jnp.uint32)
  seed = jnp.asarray(seed, jnp.uint32)
  if seed.shape != ():
    raise MxInputError(f"seed must be a uint32 scalar, got shape {seed.shape}")
  _ensure_registered()
  return _quantize_fn(METHODS[method], bool(rotate))(0)(x, signs, seed)
