"""FP4 number formats: MXFP4 (E2M1 + E8M0 per 32) and NVFP4 (E2M1 + E4M3 per 16).

The MXFP4 layout, packing and E2M1/E8M0 arithmetic live in
`pallas_kernels.mxfp4.reference` (kernels and the FFI bridge share them);
this module re-exports them and adds NVFP4's two-level scaling.

References:
  OCP Microscaling Formats (MX) v1.0; NVIDIA, "Pretraining LLMs with NVFP4"
  (arXiv 2509.25149); Castro et al., "Quartet", NeurIPS 2025.
"""

import dataclasses

import jax
import jax.numpy as jnp

from lib.core import errors
from pallas_kernels.mxfp4 import reference

MXTensor = reference.MXTensor
E2M1_VALUES = reference.E2M1_VALUES
E2M1_MAX = reference.E2M1_MAX
e2m1_encode_rne = reference.e2m1_encode_rne
e2m1_encode_sr = reference.e2m1_encode_sr
e2m1_decode = reference.e2m1_decode
pack_nibbles = reference.pack_nibbles
unpack_nibbles = reference.unpack_nibbles
pack_mask_bits = reference.pack_mask_bits
unpack_mask_bits = reference.unpack_mask_bits
floor_log2 = reference.floor_log2
exp2_int = reference.exp2_int
scale_value = reference.scale_value
dequantize = reference.dequantize
to_blocked = reference.to_blocked

NVFP4_GROUP = 16
E4M3_MAX = 448.0


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class NVFP4Tensor:
  """NVFP4 tensor quantized along its last axis.

  Attributes:
    codes: uint8 [..., C/2], packed E2M1 codes (even element in low nibble).
    scale: float8_e4m3fn [..., C/16], per-16 block scales (non-negative).
    global_scale: fp32 scalar, the per-tensor second-level scale.
  """

  codes: jax.Array
  scale: jax.Array
  global_scale: jax.Array


def quantize_nvfp4(x: jax.Array, global_scale=None) -> NVFP4Tensor:
  """Two-level NVFP4: s_g = amax / (6 * 448), s_b = e4m3(amax_b / 6 / s_g).

  Args:
    x: [..., C] with C % 16 == 0.
    global_scale: optional fp32 scalar; default amax(|x|) / (6 * 448) so the
      largest block scale just fits E4M3.
  """
  if x.shape[-1] % NVFP4_GROUP:
    raise errors.ShapeError(
      f"NVFP4 needs the last axis % 16 == 0, got {x.shape}"
    )
  x = x.astype(jnp.float32)
  if global_scale is None:
    global_scale = jnp.max(jnp.abs(x)) / (E2M1_MAX * E4M3_MAX)
  global_scale = jnp.where(global_scale > 0, global_scale, 1.0)
  g = x.reshape(*x.shape[:-1], -1, NVFP4_GROUP)
  amax = jnp.max(jnp.abs(g), axis=-1)
  block = jnp.clip(amax / E2M1_MAX / global_scale, 0, E4M3_MAX)
  block = block.astype(jnp.float8_e4m3fn)
  denom = block.astype(jnp.float32) * global_scale
  a = g / jnp.where(denom > 0, denom, 1.0)[..., None]
  codes = pack_nibbles(e2m1_encode_rne(a).reshape(x.shape))
  return NVFP4Tensor(codes, block, jnp.asarray(global_scale, jnp.float32))


def dequantize_nvfp4(t: NVFP4Tensor) -> jax.Array:
  """fp32 values e2m1(code) * block_scale * global_scale."""
  vals = e2m1_decode(unpack_nibbles(t.codes))
  g = vals.reshape(*vals.shape[:-1], -1, NVFP4_GROUP)
  g = g * (t.scale.astype(jnp.float32) * t.global_scale)[..., None]
  return g.reshape(vals.shape)
