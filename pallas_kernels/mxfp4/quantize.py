"""Portable Pallas fused rotate + quantize (QuEST RTN or absmax x 3/4 SR/RTN).

Each program quantizes a [block_r, 32 * groups] tile along the last axis. Per
32-group it rotates with two 32x16 dots, x @ (H diag(s))[:, even columns] and
x @ (H diag(s))[:, odd columns], so the rotated even and odd elements land in
separate [block_r, 16] arrays and packing two codes per byte is `even | odd <<
4`: no interleave or strided access inside the kernel. Group statistics (sigma
or amax) add the two halves. Stochastic rounding draws its uniforms from the
same counter hash of (seed, flat element index) as the reference, so kernel and
reference round identically.

Outputs: packed codes [R, C/2], E8M0 bytes [R, C/32], and the trust mask as
bytes [R, C/2] (bit 0: even element, bit 1: odd), unpacked to bool by the
wrapper.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from pallas_kernels.mxfp4 import _triton
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.reference import MXTensor

GROUP = reference.GROUP
METHODS = ("quest", "absmax_sr", "absmax_rtn")


def _dot(a, b):
  return jnp.dot(
    a, b, precision=lax.Precision.HIGHEST, preferred_element_type=jnp.float32
  )


def quantize_kernel(
  # Input arrays
  x_ref,
  h_even_ref,
  h_odd_ref,
  seed_ref,
  # Output arrays
  codes_ref,
  scale_ref,
  mask_ref,
  *,
  method: str,
  groups: int,
  row_len: int,
):
  """Rotate + quantize `groups` 32-groups of a [block_r, 32 groups] tile."""
  block_r = x_ref.shape[0]
  h_even, h_odd = h_even_ref[...], h_odd_ref[...]
  row0 = pl.program_id(0) * block_r
  col0 = pl.program_id(1) * groups * GROUP

  def group(g, carry):
    x = x_ref[:, pl.ds(g * GROUP, GROUP)].astype(jnp.float32)
    even, odd = _dot(x, h_even), _dot(x, h_odd)
    if method == "quest":
      mean = (jnp.sum(even, axis=1) + jnp.sum(odd, axis=1)) / GROUP
      sq = jnp.sum(even * even, axis=1) + jnp.sum(odd * odd, axis=1)
      var = jnp.maximum(sq / GROUP - mean * mean, 0.0)
      v = reference.QUEST_SIGMA_SCALE * jnp.sqrt(var) + reference.QUEST_EPS
      mult = 1.0
    else:
      v = jnp.maximum(
        jnp.max(jnp.abs(even), axis=1), jnp.max(jnp.abs(odd), axis=1)
      )
      mult = 3.0
    byte = reference.scale_byte(reference.floor_log2(v), jnp.isfinite(v))
    inv = mult * reference.exp2_int(127 - byte.astype(jnp.int32))
    a_even, a_odd = even * inv[:, None], odd * inv[:, None]
    if method == "absmax_sr":
      rows = row0 + lax.broadcasted_iota(jnp.int32, (block_r, GROUP // 2), 0)
      cols = (
        col0
        + g * GROUP
        + 2 * lax.broadcasted_iota(jnp.int32, (block_r, GROUP // 2), 1)
      )
      idx = (rows * row_len + cols).astype(jnp.uint32)
      seed = seed_ref[0, 0]
      c_even = reference.e2m1_encode_sr(
        a_even, reference.hash_uniform(seed, idx)
      )
      c_odd = reference.e2m1_encode_sr(
        a_odd, reference.hash_uniform(seed, idx + 1)
      )
    else:
      c_even = reference.e2m1_encode_rne(a_even)
      c_odd = reference.e2m1_encode_rne(a_odd)
    half = pl.ds(g * (GROUP // 2), GROUP // 2)
    codes_ref[:, half] = c_even | (c_odd << 4)
    scale_ref[:, pl.ds(g, 1)] = byte[:, None]
    m_even = (jnp.abs(a_even) < reference.E2M1_MAX).astype(jnp.uint8)
    m_odd = (jnp.abs(a_odd) < reference.E2M1_MAX).astype(jnp.uint8)
    mask_ref[:, half] = m_even | (m_odd << 1)
    return carry

  lax.fori_loop(0, groups, group, 0)


@functools.partial(jax.jit, static_argnames=("method", "block_r", "interpret"))
def quantize_pallas(
  x: jax.Array,
  *,
  method: str = "quest",
  signs: jax.Array | None = None,
  seed: jax.Array | None = None,
  block_r: int | None = None,
  interpret: bool = False,
) -> tuple[MXTensor, jax.Array]:
  """Fused H32 (x diag(signs)) rotation + MXFP4 quantization of x [R, C].

  Returns:
    (MXTensor in the rotated domain, bool mask [R, C]). The mask is all-True
    for the absmax methods (|a| < 6 by construction).
  """
  if method not in METHODS:
    raise ValueError(f"unknown method {method!r}; one of {METHODS}")
  if x.ndim != 2 or x.shape[1] % GROUP:
    raise ValueError(
      f"quantize_pallas needs [R, C] with C % 32 == 0, got {x.shape}"
    )
  if method == "absmax_sr":
    reference.check_seed(seed)
  r, c = x.shape
  if r == 0 or c == 0:  # Nothing to quantize: no grid of 0 blocks.
    empty = functools.partial(jnp.zeros, dtype=jnp.uint8)
    return (
      MXTensor(
        empty((r, c // 2)),
        empty((r, c // GROUP)),
        alpha_inv=1 if method == "quest" else 3,
      ),
      jnp.zeros((r, c), bool),
    )
  block_r = block_r or min(128, max(16, pl.next_power_of_2(r)))
  rp = pl.cdiv(r, block_r) * block_r
  xp = jnp.pad(x, ((0, rp - r), (0, 0))) if rp > r else x
  groups = next(g for g in (8, 4, 2, 1) if (c // GROUP) % g == 0)
  h = reference.rotation_matrix(signs if method != "quest" else None)
  seed_arr = jnp.asarray(0 if seed is None else seed, jnp.uint32).reshape(1, 1)
  kernel = functools.partial(
    quantize_kernel, method=method, groups=groups, row_len=c
  )
  tile = GROUP * groups
  codes, scale, mask = pl.pallas_call(
    kernel,
    out_shape=(
      jax.ShapeDtypeStruct((rp, c // 2), jnp.uint8),
      jax.ShapeDtypeStruct((rp, c // GROUP), jnp.uint8),
      jax.ShapeDtypeStruct((rp, c // 2), jnp.uint8),
    ),
    grid=(rp // block_r, c // tile),
    in_specs=[
      pl.BlockSpec((block_r, tile), lambda i, j: (i, j)),
      pl.BlockSpec((GROUP, GROUP // 2), lambda i, j: (0, 0)),
      pl.BlockSpec((GROUP, GROUP // 2), lambda i, j: (0, 0)),
      pl.BlockSpec((1, 1), lambda i, j: (0, 0)),
    ],
    out_specs=(
      pl.BlockSpec((block_r, tile // 2), lambda i, j: (i, j)),
      pl.BlockSpec((block_r, groups), lambda i, j: (i, j)),
      pl.BlockSpec((block_r, tile // 2), lambda i, j: (i, j)),
    ),
    compiler_params=_triton.compiler_params(interpret, num_stages=1),
    interpret=interpret,
    name=f"mxfp4_quantize_{method}",
  )(xp, h[:, 0::2], h[:, 1::2], seed_arr)
  mask = jnp.stack([(mask & 1) != 0, (mask & 2) != 0], axis=-1)
  mask = mask.reshape(rp, c)[:r]
  alpha_inv = 1 if method == "quest" else 3
  return MXTensor(codes[:r], scale[:r], alpha_inv=alpha_inv), mask
