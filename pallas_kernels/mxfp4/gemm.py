"""Portable Pallas dequant-GEMM over packed MXFP4 operands (both K-major, "TN").

y[M, N] = alpha * dequant(A)[M, K] @ dequant(B)[N, K]^T. Each program owns a
(block_m, block_n) output tile, sees the full K extent of its packed rows, and
loops over K in `block_k` chunks: unpack nibbles with integer ops, decode E2M1
arithmetically (kernels cannot capture a LUT), multiply by 2^(scale - 127),
cast to bf16 (exact for E2M1 x power of two) and accumulate in fp32.

No nibble interleave is needed: the low nibbles hold the even elements and the
high nibbles the odd ones, and a contraction does not care about the order of
K as long as both operands use the same one, so each chunk is two dots
(even x even + odd x odd). Element 2j of a chunk lies in group j // 16.

Runs in interpret mode on CPU. The Triton-backend variant (GPU, via
`compiler_params`) has not been run here (no GPU in this session).

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.mxfp4 import _triton
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.reference import MXTensor

GROUP = reference.GROUP


@dataclasses.dataclass(frozen=True)
class BlockSizes:
  """Tile sizes; they change speed, never numerics (fp32 accumulation)."""

  block_m: int = 128
  block_n: int = 128
  block_k: int = 256

  def __post_init__(self):
    for name in ("block_m", "block_n"):
      v = getattr(self, name)
      if v < 16 or v & (v - 1):
        raise ValueError(f"{name}={v} must be a power of two >= 16")
    if self.block_k % (2 * GROUP):
      if self.block_k != GROUP:
        raise ValueError(
          f"block_k={self.block_k} must be 32 or a multiple of 64"
        )


def default_block_sizes(m: int, n: int, k: int) -> BlockSizes:
  """128x128 tiles (shrunk for small M, N); the largest block_k dividing K."""

  def tile(d):
    return min(128, max(16, pl.next_power_of_2(d)))

  block_k = next(b for b in (256, 128, 64, 32) if k % b == 0)
  return BlockSizes(tile(m), tile(n), block_k)


def _decode_chunk(codes, scale):
  """Packed codes [R, bk/2] + scale bytes [R, bk/32] -> (even, odd) bf16."""
  rows, half = codes.shape
  s = reference.scale_value(scale)
  s = jnp.broadcast_to(s[:, :, None], (rows, half // 16, 16)).reshape(
    rows, half
  )
  even = reference.e2m1_decode(codes & 0xF) * s
  odd = reference.e2m1_decode(codes >> 4) * s
  return even.astype(jnp.bfloat16), odd.astype(jnp.bfloat16)


def _dot_nt(a, b):
  return lax.dot_general(
    a, b, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
  )


def mx_gemm_kernel(
  # Input arrays
  a_codes_ref,
  a_scale_ref,
  b_codes_ref,
  b_scale_ref,
  # Output arrays
  o_ref,
  *,
  block_k: int,
  alpha: float,
):
  """One (block_m, block_n) output tile; loops over K in block_k chunks."""
  k = a_codes_ref.shape[1] * 2
  hk, sk = block_k // 2, block_k // GROUP

  def body(i, acc):
    a_even, a_odd = _decode_chunk(
      a_codes_ref[:, pl.ds(i * hk, hk)], a_scale_ref[:, pl.ds(i * sk, sk)]
    )
    b_even, b_odd = _decode_chunk(
      b_codes_ref[:, pl.ds(i * hk, hk)], b_scale_ref[:, pl.ds(i * sk, sk)]
    )
    return acc + _dot_nt(a_even, b_even) + _dot_nt(a_odd, b_odd)

  acc = jnp.zeros(o_ref.shape, jnp.float32)
  acc = lax.fori_loop(0, k // block_k, body, acc)
  o_ref[...] = (acc * alpha).astype(o_ref.dtype)


def _pad_rows(x, rows):
  return (
    jnp.pad(x, ((0, rows - x.shape[0]), (0, 0))) if rows > x.shape[0] else x
  )


@functools.partial(
  jax.jit, static_argnames=("out_dtype", "block_sizes", "interpret")
)
def mx_matmul_pallas(
  a: MXTensor,
  b: MXTensor,
  *,
  out_dtype=jnp.float32,
  block_sizes: BlockSizes | None = None,
  interpret: bool = False,
) -> jax.Array:
  """alpha dequant(a)[M, K] @ dequant(b)[N, K]^T, alpha = 1/(a.alpha_inv b.alpha_inv).

  M and N need not be multiples of the tiles: rows are zero-padded (code 0,
  scale byte 0 decode to 0) and the result sliced.
  """
  if a.codes.ndim != 2 or b.codes.ndim != 2 or a.shape[1] != b.shape[1]:
    raise ValueError(
      f"mx_matmul_pallas needs 2-D operands with equal K, got {a.shape}, {b.shape}"
    )
  (m, k), n = a.shape, b.shape[0]
  if not m * n * k:  # An empty product (or a sum of none): no 0-block grid.
    return jnp.zeros((m, n), out_dtype)
  bs = block_sizes or default_block_sizes(m, n, k)
  if k % bs.block_k:
    raise ValueError(f"block_k={bs.block_k} does not divide K={k}")
  mp, np_ = (
    pl.cdiv(m, bs.block_m) * bs.block_m,
    pl.cdiv(n, bs.block_n) * bs.block_n,
  )
  operands = (
    _pad_rows(a.codes, mp),
    _pad_rows(a.scale, mp),
    _pad_rows(b.codes, np_),
    _pad_rows(b.scale, np_),
  )
  kernel = functools.partial(
    mx_gemm_kernel,
    block_k=bs.block_k,
    alpha=1.0 / (a.alpha_inv * b.alpha_inv),
  )
  y = pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((mp, np_), out_dtype),
    grid=(mp // bs.block_m, np_ // bs.block_n),
    in_specs=[
      pl.BlockSpec((bs.block_m, k // 2), lambda i, j: (i, 0)),
      pl.BlockSpec((bs.block_m, k // GROUP), lambda i, j: (i, 0)),
      pl.BlockSpec((bs.block_n, k // 2), lambda i, j: (j, 0)),
      pl.BlockSpec((bs.block_n, k // GROUP), lambda i, j: (j, 0)),
    ],
    out_specs=pl.BlockSpec((bs.block_m, bs.block_n), lambda i, j: (i, j)),
    compiler_params=_triton.compiler_params(interpret),
    interpret=interpret,
    name="mxfp4_dequant_gemm",
  )(*operands)
  return y[:m, :n]
