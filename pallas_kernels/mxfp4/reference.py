"""Pure-jnp MXFP4 reference: formats, packing, Quartet's quantizers, the GEMM.

This file is the ground truth for the Pallas kernels (`gemm.py`,
`quantize.py`) and for the CUDA FFI bridge (`ffi/`): every kernel must equal
these functions up to fp32 summation order. Everything is fp32 inside.

Layout (`MXTensor`, quantization axis = last axis, groups of 32 elements):
  codes: uint8 [..., C/2]; two E2M1 codes per byte, the even element in the low
    nibble (PTX `cvt.rn.satfinite.e2m1x2.f32`, Triton `dot_scaled`, QuTLASS and
    `lax.bitcast_convert_type(f4[..., 2] -> u8)` all agree).
  scale: uint8 [..., C/32]; E8M0 bits, value 2^(byte - 127); 255 is NaN.
  alpha_inv: static int; dequant = e2m1(code) * 2^(byte - 127) / alpha_inv.
    Forward (QuEST) tensors use 1, backward (absmax x 3/4) tensors use 3, so a
    backward GEMM carries alpha = 1/9 in its epilogue.

Non-finite input: a 32-group holding NaN or Inf gets scale byte 255 (E8M0 NaN)
and dequantizes to NaN, so the GEMM output turns NaN instead of silently finite;
the training loop's finiteness check then names the step.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669); OCP Microscaling
  Formats (MX) v1.0.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from pallas_kernels.mxfp4.errors import MxDTypeError
from pallas_kernels.mxfp4.errors import MxInputError

GROUP = 32  # MX block size = Hadamard size in Quartet.
E2M1_MAX = 6.0
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# QuEST: the MSE-optimal clip of a unit Gaussian onto the FP4 grid (2.92247856
# sigma) mapped onto the grid maximum 6, written as the official Triton kernel
# and QuTLASS write it (2.92247856 / 6 = 0.48707977 in float32). Not the
# MSE-fitting notebook's 0.48707948: 10 float32 ulps away, it flips the scale
# exponent of about one group in a million. The one value every
# implementation uses: the Pallas kernel and lib.quant import it, and the FFI
# build passes it to the C++/CUDA sources (`ffi/build.py`).
QUEST_CLIP_SIGMAS = 2.92247856
QUEST_SIGMA_SCALE = QUEST_CLIP_SIGMAS / E2M1_MAX
QUEST_EPS = 1e-8
E8M0_NAN = 255


class _PackedE2M1:
  """What MXTensor and NVFP4Tensor share: two E2M1 codes per byte of `codes`."""

  codes: jax.Array

  @property
  def shape(self) -> tuple[int, ...]:
    """Logical (unpacked) shape [..., C]."""
    return (*self.codes.shape[:-1], self.codes.shape[-1] * 2)


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class MXTensor(_PackedE2M1):
  """MXFP4 tensor quantized along its last axis (see the module docstring).

  Attributes:
    codes: uint8 [..., C/2], packed E2M1 codes (even element in low nibble).
    scale: uint8 [..., C/32], E8M0 exponent bytes.
    alpha_inv: static 1 (forward/QuEST/OCP) or 3 (backward absmax x 3/4).
  """

  codes: jax.Array
  scale: jax.Array
  alpha_inv: int = dataclasses.field(default=1, metadata=dict(static=True))


# ----------------------------------------------------------------------------
# E2M1 elements.


def e2m1_encode_rne(a: jax.Array) -> jax.Array:
  """Nearest E2M1 code (0..15) of `a`, ties to the even code, saturating at 6.

  Only comparisons, so the same code runs inside Pallas kernels. Each midpoint
  between neighbours uses `>` when the lower code is even and `>=` when the
  upper one is, which is round-half-to-even on codes (= hardware `cvt.rn`,
  = `astype(jnp.float4_e2m1fn)`). NaN maps to +0.
  """
  m = jnp.abs(a)
  c = (
    (m > 0.25).astype(jnp.uint8)
    + (m >= 0.75).astype(jnp.uint8)
    + (m > 1.25).astype(jnp.uint8)
    + (m >= 1.75).astype(jnp.uint8)
    + (m > 2.5).astype(jnp.uint8)
    + (m >= 3.5).astype(jnp.uint8)
    + (m > 5.0).astype(jnp.uint8)
  )
  return c | jnp.where(a < 0, jnp.uint8(8), jnp.uint8(0))


def e2m1_magnitude(c: jax.Array) -> jax.Array:
  """fp32 magnitude of a 3-bit E2M1 magnitude code (0..7), arithmetically."""
  c = c.astype(jnp.int32)
  e = c >> 1  # exponent field
  m = (c & 1).astype(jnp.float32)  # mantissa bit
  # e = 0: subnormal 0.5 m; e >= 1: 2^(e-1) (1 + m/2). 2^(e-1) for e in 1..3.
  pow2 = jnp.where(e == 3, 4.0, jnp.where(e == 2, 2.0, 1.0))
  return jnp.where(e == 0, 0.5 * m, pow2 * (1.0 + 0.5 * m))


def e2m1_decode(codes: jax.Array) -> jax.Array:
  """fp32 value of unpacked E2M1 codes (0..15; 8..15 negative, 8 = -0)."""
  c = codes.astype(jnp.int32)
  mag = e2m1_magnitude(c & 7)
  return jnp.where((c & 8) != 0, -mag, mag)


def _e2m1_step(m: jax.Array) -> jax.Array:
  """Grid spacing of E2M1 at magnitude m in [0, 6]: 0.5 below 2, 1 below 4, else 2."""
  return jnp.where(m < 2.0, 0.5, jnp.where(m < 4.0, 1.0, 2.0))


def _e2m1_code_of_grid_value(v: jax.Array) -> jax.Array:
  """Magnitude code (0..7) of an exact E2M1 grid magnitude v."""
  c = jnp.where(v < 2.0, 2.0 * v, jnp.where(v < 4.0, v + 2.0, 0.5 * v + 4.0))
  return c.astype(jnp.uint8)


def e2m1_encode_sr(a: jax.Array, u: jax.Array) -> jax.Array:
  """Stochastic rounding onto the E2M1 grid: unbiased for |a| <= 6.

  lo <= |a| <= hi are the bracketing grid points; hi is taken iff
  u < (|a| - lo) / (hi - lo), with u ~ U[0, 1). Within a binade the grid is
  uniform with spacing `step`, so this is floor(|a| / step + u) * step
  (exact in fp32: step is a power of two). |a| > 6 saturates to 6.
  """
  m = jnp.minimum(jnp.abs(a), E2M1_MAX)
  step = _e2m1_step(m)
  # m / step as m * (1 / step): exact (powers of two), and a multiply.
  inv_step = jnp.where(m < 2.0, 2.0, jnp.where(m < 4.0, 1.0, 0.5))
  q = jnp.minimum(jnp.floor(m * inv_step + u) * step, E2M1_MAX)
  c = _e2m1_code_of_grid_value(q)
  return c | jnp.where(a < 0, jnp.uint8(8), jnp.uint8(0))


def pack_nibbles(codes: jax.Array) -> jax.Array:
  """uint8 codes [..., C] (values 0..15) -> packed uint8 [..., C/2].

  Byte j is codes[2j] | codes[2j + 1] << 4. Computed by viewing each pair
  as one little-endian uint16 v = c0 | c1 << 8 (every JAX platform is
  little-endian): (v | v >> 4) & 0xFF = c0 | c1 << 4. Unlike the two strided
  slices c[0::2], c[1::2], this lets XLA fuse the quantizer that produces the
  codes into the packing in one pass instead of computing it twice (the
  QuEST quantizer ran 1.7x faster on CPU).

  Raises MxInputError unless the last axis has even length.
  """
  shape = np.shape(codes)
  if not shape or shape[-1] % 2:
    raise MxInputError(
      "pack_nibbles: the last axis must have even length (two 4-bit codes a"
      f" byte), got shape {shape}"
    )
  c = codes.astype(jnp.uint8)
  pairs = c.reshape(*c.shape[:-1], c.shape[-1] // 2, 2)
  v = lax.bitcast_convert_type(pairs, jnp.uint16)
  return ((v | (v >> 4)) & 0xFF).astype(jnp.uint8)


def unpack_nibbles(packed: jax.Array) -> jax.Array:
  """Packed uint8 [..., C/2] -> codes uint8 [..., C] (even = low nibble)."""
  lo, hi = packed & 0xF, packed >> 4
  return jnp.stack([lo, hi], axis=-1).reshape(
    *packed.shape[:-1], 2 * packed.shape[-1]
  )


def pack_mask_bits(mask: jax.Array) -> jax.Array:
  """bool [..., C] -> uint8 [..., C/8]; bit i of byte j is element 8j + i."""
  shape = np.shape(mask)
  if not shape or shape[-1] % 8:
    raise MxInputError(
      "pack_mask_bits: the last axis must be a multiple of 8 (eight bits a"
      f" byte), got shape {shape}"
    )
  m = mask.reshape(*shape[:-1], shape[-1] // 8, 8).astype(jnp.uint8)
  weights = jnp.asarray([1 << i for i in range(8)], jnp.uint8)
  return jnp.sum(m * weights, axis=-1, dtype=jnp.uint8)


def unpack_mask_bits(bits: jax.Array) -> jax.Array:
  """uint8 [..., C/8] -> bool [..., C] (inverse of `pack_mask_bits`)."""
  shifts = jnp.arange(8, dtype=jnp.uint8)
  m = (bits[..., None] >> shifts) & 1
  return m.reshape(*bits.shape[:-1], 8 * bits.shape[-1]).astype(bool)


# ----------------------------------------------------------------------------
# E8M0 scales: exact integer exponent arithmetic on fp32 bits. Never
# `astype(float8_e8m0fnu)`, which rounds instead of flooring.


def floor_log2(v: jax.Array) -> jax.Array:
  """floor(log2(v)) for v >= 0 from the fp32 exponent bits (int32).

  Exact for normal numbers; zero and subnormals give -127 (E8M0 byte 0).
  """
  bits = lax.bitcast_convert_type(v.astype(jnp.float32), jnp.int32)
  return ((bits >> 23) & 0xFF) - 127


def exp2_int(e: jax.Array) -> jax.Array:
  """Exact fp32 2^e for integer e in [-127, 127] built from the bits."""
  e = e.astype(jnp.int32)
  bits = (jnp.maximum(e, -126) + 127) << 23
  v = lax.bitcast_convert_type(bits, jnp.float32)
  return jnp.where(e < -126, 0.5 * v, v)


def scale_byte(e: jax.Array, finite: jax.Array) -> jax.Array:
  """E8M0 byte of 2^e (clipped to [0, 254]); 255 (NaN) where not `finite`."""
  b = jnp.clip(e + 127, 0, 254)
  return jnp.where(finite, b, E8M0_NAN).astype(jnp.uint8)


def scale_value(byte: jax.Array) -> jax.Array:
  """fp32 value of an E8M0 byte: 2^(byte - 127); NaN for 255."""
  b = byte.astype(jnp.int32)
  return jnp.where(b == E8M0_NAN, jnp.nan, exp2_int(b - 127))


# ----------------------------------------------------------------------------
# Hadamard (matmul form, the one GPU kernels use; lib.quant has the FWHT).


def hadamard_matrix(n: int = GROUP) -> np.ndarray:
  """Orthonormal Sylvester Hadamard, H[i, j] = (-1)^popcount(i & j) / sqrt(n)."""
  i = np.arange(n)
  parity = np.vectorize(lambda v: bin(v).count("1") & 1)(i[:, None] & i[None])
  return ((1 - 2 * parity) / np.sqrt(n)).astype(np.float32)


def check_signs(signs) -> None:
  """None or the [32] column signs of the Hadamard rotation (MxInputError)."""
  if signs is not None and jnp.shape(signs) != (GROUP,):
    raise MxInputError(
      f"signs are the {GROUP} column signs of the Hadamard rotation, shape "
      f"[{GROUP}]; got shape {jnp.shape(signs)}"
    )


def rotation_matrix(signs: jax.Array | None = None) -> jax.Array:
  """H32 diag(signs): the (randomised) rotation applied per 32-group."""
  check_signs(signs)
  h = jnp.asarray(hadamard_matrix(GROUP))
  if signs is None:
    return h
  return h * signs.astype(jnp.float32)[None, :]


def _groups(x: jax.Array) -> jax.Array:
  return x.reshape(*x.shape[:-1], x.shape[-1] // GROUP, GROUP)


def rotate(x: jax.Array, signs: jax.Array | None = None) -> jax.Array:
  """x -> x H diag(signs) per 32-group of the last axis (fp32)."""
  r = rotation_matrix(signs)
  y = jnp.einsum(
    "...gi,ij->...gj",
    _groups(x.astype(jnp.float32)),
    r,
    precision=lax.Precision.HIGHEST,
  )
  return y.reshape(x.shape)


def unrotate(x: jax.Array, signs: jax.Array | None = None) -> jax.Array:
  """Inverse of `rotate`: x diag(signs) H per 32-group (H is symmetric)."""
  r = rotation_matrix(signs)
  y = jnp.einsum(
    "...gj,ij->...gi",
    _groups(x.astype(jnp.float32)),
    r,
    precision=lax.Precision.HIGHEST,
  )
  return y.reshape(x.shape)


# ----------------------------------------------------------------------------
# Counter-based uniforms for stochastic rounding: the same integer hash runs in
# the reference and inside the kernels, so both round identically.


def _mix32(x: jax.Array) -> jax.Array:
  """lowbias32 integer finaliser (uint32 -> uint32)."""
  x = x ^ (x >> 16)
  x = x * np.uint32(0x7FEB352D)
  x = x ^ (x >> 15)
  x = x * np.uint32(0x846CA68B)
  return x ^ (x >> 16)


def hash_uniform(seed: jax.Array, index: jax.Array) -> jax.Array:
  """U[0, 1) fp32 from (uint32 seed, uint32 element index).

  One lowbias32 round over a Weyl-scrambled index xor a mixed seed: cheap
  enough for every element, and the SR error statistics match the spec's
  (Tseng SR relative MSE 0.0282 on Gaussian data).
  """
  key = _mix32(seed.astype(jnp.uint32) ^ np.uint32(0x9E3779B9))
  h = _mix32(index.astype(jnp.uint32) * np.uint32(0x9E3779B9) ^ key)
  return (h >> 8).astype(jnp.float32) * np.float32(2.0**-24)


def element_index(shape: tuple[int, ...]) -> jax.Array:
  """Row-major flat index of every element of a tensor of `shape` (uint32)."""
  return jnp.arange(int(np.prod(shape)), dtype=jnp.uint32).reshape(shape)


def seed_from_key(key: jax.Array) -> jax.Array:
  """uint32 scalar seed for `hash_uniform` drawn from a typed PRNG key."""
  return jax.random.bits(key, (), jnp.uint32)


def check_seed(seed) -> None:
  """The seed stochastic rounding needs: a uint32 (or integer) scalar array.

  Raises MxInputError for none, MxDTypeError for a PRNG key (draw a seed
  from it with `seed_from_key`), a Python number or a non-scalar; a traced
  seed is checked by dtype and shape as any other.
  """
  if seed is None:
    raise MxInputError(
      "stochastic rounding needs a seed: a uint32 scalar (from a PRNG key: "
      "seed_from_key(key))"
    )
  dtype = getattr(seed, "dtype", None)
  if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
    raise MxDTypeError(
      f"the seed is a uint32 scalar, got a PRNG key ({dtype}): pass "
      "seed_from_key(key)"
    )
  if dtype is None or not jnp.issubdtype(dtype, jnp.integer) or seed.ndim:
    raise MxDTypeError(
      f"the seed is a uint32 scalar array (e.g. jnp.uint32(7)), got {seed!r}"
    )


# ----------------------------------------------------------------------------
# Quantizers (all quantize along the last axis, C % 32 == 0).


def _check_last_axis(x: jax.Array) -> None:
  if x.ndim < 1 or x.shape[-1] % GROUP:
    raise ValueError(
      f"MXFP4 quantizes along the last axis in groups of {GROUP}: got shape "
      f"{x.shape}, whose last axis is not a multiple of {GROUP}"
    )


def quantize_quest(
  x: jax.Array, *, hadamard: bool = True
) -> tuple[MXTensor, jax.Array]:
  """Quartet's forward quantizer (QuEST, RMS scale, RTN, trust mask).

  Per 32-group of the rotated x: sigma = population std; scale
  2^floor(log2(QUEST_SIGMA_SCALE sigma + 1e-8)) (QUEST_SIGMA_SCALE =
  2.92247856 / 6; the floor is deliberate, keep it);
  codes = RNE(x_r / scale) saturating at 6; mask = |x_r / scale| < 6.

  Returns:
    (MXTensor with alpha_inv 1 in the rotated domain, bool mask of x's shape).
  """
  _check_last_axis(x)
  xr = rotate(x) if hadamard else x.astype(jnp.float32)
  g = _groups(xr)
  mean = jnp.mean(g, axis=-1)
  var = jnp.maximum(jnp.mean(g * g, axis=-1) - mean * mean, 0.0)
  v = QUEST_SIGMA_SCALE * jnp.sqrt(var) + QUEST_EPS
  byte = scale_byte(floor_log2(v), jnp.isfinite(v))
  a = g * exp2_int(127 - byte.astype(jnp.int32))[..., None]
  mask = (jnp.abs(a) < E2M1_MAX).reshape(x.shape)
  codes = pack_nibbles(e2m1_encode_rne(a).reshape(x.shape))
  return MXTensor(codes, byte, alpha_inv=1), mask


def quantize_absmax(
  x: jax.Array,
  *,
  signs: jax.Array | None = None,
  hadamard: bool = True,
  stochastic: bool = True,
  seed: jax.Array | None = None,
) -> MXTensor:
  """Quartet's backward quantizer (absmax x 3/4 headroom, SR; Tseng et al.).

  Per 32-group of x_r = x H diag(signs): e = floor(log2(amax)); codes =
  SR(3 x_r / 2^e) (|.| < 6, so SR never overflows) or RNE if not
  `stochastic`. The stored scale is 2^e; the 1/3 lives in alpha_inv = 3.

  Args:
    x: [..., C] with C % 32 == 0.
    signs: optional [32] +-1 column signs of the randomised Hadamard.
    hadamard: rotate at all (False: plain absmax, `signs` ignored).
    stochastic: stochastic rounding (True) or round-to-nearest-even.
    seed: uint32 scalar for `hash_uniform` (required when stochastic).
  """
  _check_last_axis(x)
  xr = rotate(x, signs) if hadamard else x.astype(jnp.float32)
  g = _groups(xr)
  amax = jnp.max(jnp.abs(g), axis=-1)
  byte = scale_byte(floor_log2(amax), jnp.isfinite(amax))
  a = 3.0 * g * exp2_int(127 - byte.astype(jnp.int32))[..., None]
  a = a.reshape(x.shape)
  if stochastic:
    check_seed(seed)
    codes = e2m1_encode_sr(a, hash_uniform(seed, element_index(x.shape)))
  else:
    codes = e2m1_encode_rne(a)
  return MXTensor(pack_nibbles(codes), byte, alpha_inv=3)


def quantize_ocp(x: jax.Array) -> MXTensor:
  """OCP MX v1.0 absmax rule: scale 2^(floor(log2 amax) - 2), RNE, saturate."""
  _check_last_axis(x)
  g = _groups(x.astype(jnp.float32))
  amax = jnp.max(jnp.abs(g), axis=-1)
  e = jnp.where(amax > 0, floor_log2(amax) - 2, -127)
  byte = scale_byte(e, jnp.isfinite(amax))
  a = g * exp2_int(127 - byte.astype(jnp.int32))[..., None]
  codes = pack_nibbles(e2m1_encode_rne(a).reshape(x.shape))
  return MXTensor(codes, byte, alpha_inv=1)


def dequantize_unscaled(t: MXTensor) -> jax.Array:
  """fp32 values e2m1(code) * 2^(byte - 127) (no 1/alpha_inv), [..., C].

  Each value is a 2-bit significand times a power of two, so it is exact in
  bf16 as well (the GEMM below may run in bf16 without changing a product).
  """
  vals = _groups(e2m1_decode(unpack_nibbles(t.codes)))
  return (vals * scale_value(t.scale)[..., None]).reshape(t.shape)


def dequantize(t: MXTensor) -> jax.Array:
  """fp32 values e2m1(code) * 2^(byte - 127) / alpha_inv, shape [..., C]."""
  out = dequantize_unscaled(t)
  return out / t.alpha_inv if t.alpha_inv != 1 else out


def default_operand_dtype():
  """bf16 where matmul units make it fast (GPU, TPU), else fp32 (CPU)."""
  return jnp.float32 if jax.default_backend() == "cpu" else jnp.bfloat16


def check_matmul_shapes(a: MXTensor, b: MXTensor) -> None:
  """a [..., M, K] and b [N, K] with the same K (MxInputError naming both)."""
  for name, t in (("a", a), ("b", b)):
    if not isinstance(t, MXTensor):
      got = (
        f"an array of shape {tuple(t.shape)}"
        if hasattr(t, "shape")
        else type(t).__name__
      )
      raise MxDTypeError(
        f"mx_matmul multiplies quantized operands: {name} must be an MXTensor "
        f"(from quantize_quest / quantize_absmax), got {got}"
      )
  if (
    len(a.shape) < 2
    or len(b.shape) != 2
    or a.shape[-1] != b.shape[-1]
    or a.scale.shape[-1] != b.scale.shape[-1]
  ):
    raise MxInputError(
      f"mx_matmul needs a [..., M, K] and b [N, K] with the same K; got a "
      f"{list(a.shape)} (scales {list(a.scale.shape)}) and b "
      f"{list(b.shape)} (scales {list(b.scale.shape)})"
    )


def mx_matmul(
  a: MXTensor, b: MXTensor, *, out_dtype=jnp.float32, operand_dtype=None
) -> jax.Array:
  """alpha dequant(a) [..., M, K] @ dequant(b)[N, K]^T, fp32 accumulation ("TN").

  alpha = 1 / (a.alpha_inv b.alpha_inv) is applied to the [M, N] result, as
  the kernels do. `operand_dtype` (None: `default_operand_dtype()`) is the
  dtype the dequantized operands enter the dot in: bf16 holds every MXFP4
  value exactly, so bf16 and fp32 operands give the same products and differ
  only in fp32 summation order.
  """
  check_matmul_shapes(a, b)
  dtype = operand_dtype or default_operand_dtype()
  y = jnp.dot(
    dequantize_unscaled(a).astype(dtype),
    dequantize_unscaled(b).astype(dtype).T,
    precision=lax.Precision.HIGHEST,
    preferred_element_type=jnp.float32,
  )
  alpha_inv = a.alpha_inv * b.alpha_inv
  if alpha_inv != 1:
    y = y * np.float32(1.0 / alpha_inv)
  return y.astype(out_dtype)


def to_blocked(scale: jax.Array) -> jax.Array:
  """Scale [R, C] -> flat cuBLAS/CUTLASS block-scaling layout.

  Pads to 128-row x 4-column tiles; within a tile, element (r, c) of the
  32 x 16 sub-tile holds scale[r + 32 (c // 4), c % 4] (QuTLASS `to_blocked`,
  TE `nvte_swizzle_scaling_factors`).

  Raises MxInputError unless `scale` is 2-D (any rows and cols: padded).
  """
  if np.ndim(scale) != 2:
    raise MxInputError(
      f"to_blocked: scale must be 2-D [rows, cols], got shape {np.shape(scale)}"
    )
  rows, cols = scale.shape
  rb, cb = -(-rows // 128), -(-cols // 4)
  padded = (
    jnp.zeros((rb * 128, cb * 4), scale.dtype).at[:rows, :cols].set(scale)
  )
  blocks = padded.reshape(rb, 128, cb, 4).transpose(0, 2, 1, 3)
  tiles = blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3)
  return tiles.reshape(-1)


def from_blocked(flat: jax.Array, rows: int, cols: int) -> jax.Array:
  """Inverse of `to_blocked`: the flat swizzled layout -> scale [rows, cols]."""
  rb, cb = -(-rows // 128), -(-cols // 4)
  if np.shape(flat) != (rb * cb * 512,):
    raise MxInputError(
      f"from_blocked: a [{rows}, {cols}] scale's blocked layout is flat with"
      f" {rb * cb * 512} entries ({rb} x {cb} tiles of 128 x 4), got shape"
      f" {np.shape(flat)}"
    )
  tiles = flat.reshape(rb * cb, 32, 4, 4).transpose(0, 2, 1, 3)
  blocks = tiles.reshape(rb, cb, 128, 4).transpose(0, 2, 1, 3)
  return blocks.reshape(rb * 128, cb * 4)[:rows, :cols]


def blocked_index(r, c, cols: int):
  """Flat position of scale (r, c) of a [rows, cols] matrix in `to_blocked`.

  ((tile_row * tiles_per_row + tile_col) * 32 + r % 32) * 16
  + ((r % 128) // 32) * 4 + c % 4, with 128 x 4 tiles (tile_row = r // 128,
  tile_col = c // 4, tiles_per_row = ceil(cols / 4)). The FFI handlers read
  scales through this formula.
  """
  cb = -(-cols // 4)
  tile = (r // 128) * cb + c // 4
  return (tile * 32 + r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


# ----------------------------------------------------------------------------
# NVFP4: E2M1 codes, one E4M3 ("UE4M3", non-negative) scale per 16 elements
# along the last axis, and one fp32 per-tensor scale (two-level scaling;
# spec quartet_fp4.md section 2.2). cuBLASLt's VEC16_UE4M3 block scaling
# reads the block scales in the `to_blocked` layout and applies the product
# of the two tensor scales as alpha.

NVFP4_GROUP = 16
E4M3_MAX = 448.0


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NVFP4Tensor(_PackedE2M1):
  """NVFP4 tensor quantized along its last axis.

  Attributes:
    codes: uint8 [..., C/2], packed E2M1 codes (even element in low nibble).
    scale: float8_e4m3fn [..., C/16], per-16 block scales (non-negative).
    global_scale: fp32 scalar, the per-tensor second-level scale.
  """

  codes: jax.Array
  scale: jax.Array
  global_scale: jax.Array


def quantize_nvfp4(
  x: jax.Array, global_scale=None, *, stochastic: bool = False, seed=None
) -> NVFP4Tensor:
  """Two-level NVFP4: s_g = amax / (6 * 448), s_b = e4m3(amax_b / 6 / s_g).

  Codes are e2m1(x / (s_b s_g)) along the last axis; a block of zeros gets
  scale 0 and codes 0.

  Args:
    x: [..., C] with C % 16 == 0.
    global_scale: optional fp32 scalar; default amax(|x|) / (6 * 448) so the
      largest block scale just fits E4M3.
    stochastic: round the codes stochastically (`e2m1_encode_sr`, uniforms
      from `hash_uniform(seed, element_index)`) instead of to nearest even.
      The block scale is then rounded *up* to the next E4M3 value, so every
      |x / (s_b s_g)| <= 6 and no element saturates: unbiased,
      E[dequantize_nvfp4] = x. (RTN keeps E4M3's round-to-nearest scale,
      the NVFP4 recipe's, which may clip a block's largest element.)
    seed: uint32 scalar, required when `stochastic`.
  """
  if x.ndim < 1 or x.shape[-1] % NVFP4_GROUP:
    raise ValueError(
      f"NVFP4 quantizes along the last axis in blocks of {NVFP4_GROUP}: got "
      f"shape {x.shape}, whose last axis is not a multiple of {NVFP4_GROUP}"
    )
  if stochastic:
    check_seed(seed)
  x = x.astype(jnp.float32)
  if global_scale is None:
    global_scale = jnp.max(jnp.abs(x)) / (E2M1_MAX * E4M3_MAX)
  global_scale = jnp.asarray(global_scale, jnp.float32)
  global_scale = jnp.where(global_scale > 0, global_scale, 1.0)
  g = x.reshape(*x.shape[:-1], -1, NVFP4_GROUP)
  amax = jnp.max(jnp.abs(g), axis=-1)
  want = jnp.clip(amax / E2M1_MAX / global_scale, 0, E4M3_MAX)
  block = want.astype(jnp.float8_e4m3fn)
  if stochastic:  # next E4M3 value up where nearest rounded down
    bits = lax.bitcast_convert_type(block, jnp.uint8)
    up = (block.astype(jnp.float32) < want) & (bits < 0x7E)
    bits = jnp.where(up, bits + jnp.uint8(1), bits)
    block = lax.bitcast_convert_type(bits, jnp.float8_e4m3fn)
  denom = block.astype(jnp.float32) * global_scale
  a = (g / jnp.where(denom > 0, denom, 1.0)[..., None]).reshape(x.shape)
  if stochastic:
    codes = e2m1_encode_sr(a, hash_uniform(seed, element_index(x.shape)))
  else:
    codes = e2m1_encode_rne(a)
  return NVFP4Tensor(pack_nibbles(codes), block, global_scale)


def dequantize_nvfp4_unscaled(t: NVFP4Tensor) -> jax.Array:
  """fp32 values e2m1(code) * block_scale (no tensor scale), [..., C].

  A 2-bit E2M1 significand times a 4-bit E4M3 one: exact in fp32 and bf16.
  """
  vals = e2m1_decode(unpack_nibbles(t.codes))
  g = vals.reshape(*vals.shape[:-1], -1, NVFP4_GROUP)
  return (g * t.scale.astype(jnp.float32)[..., None]).reshape(vals.shape)


def dequantize_nvfp4(t: NVFP4Tensor) -> jax.Array:
  """fp32 values e2m1(code) * block_scale * global_scale."""
  return dequantize_nvfp4_unscaled(t) * t.global_scale


def e4m3_bytes(scale: jax.Array) -> jax.Array:
  """The uint8 bit patterns of float8_e4m3fn scales (what the FFI reads)."""
  return lax.bitcast_convert_type(scale.astype(jnp.float8_e4m3fn), jnp.uint8)


def nvfp4_matmul(
  a: NVFP4Tensor, b: NVFP4Tensor, *, out_dtype=jnp.float32, operand_dtype=None
) -> jax.Array:
  """alpha (codes x block scales)(a) [M, K] @ (...)(b) [N, K]^T, fp32 sums.

  alpha = a.global_scale * b.global_scale is applied to the [M, N] result,
  as cuBLASLt's NVFP4 GEMM applies it (its alpha). Operands enter the dot in
  `operand_dtype` (None: `default_operand_dtype()`); every block-scaled
  NVFP4 value is exact in bf16, so only the fp32 summation order differs.
  """
  dtype = operand_dtype or default_operand_dtype()
  y = jnp.dot(
    dequantize_nvfp4_unscaled(a).astype(dtype),
    dequantize_nvfp4_unscaled(b).astype(dtype).T,
    precision=lax.Precision.HIGHEST,
    preferred_element_type=jnp.float32,
  )
  return (y * (a.global_scale * b.global_scale)).astype(out_dtype)
