"""FP4 number formats: MXFP4 (E2M1 + E8M0 per 32) and NVFP4 (E2M1 + E4M3 per 16).

The MXFP4 layout, packing and E2M1/E8M0 arithmetic live in
`pallas_kernels.mxfp4.reference` (kernels and the FFI bridge share them),
NVFP4's two-level scaling and its GEMM reference too; this module re-exports
them for `lib`.

References:
  OCP Microscaling Formats (MX) v1.0; NVIDIA, "Pretraining LLMs with NVFP4"
  (arXiv 2509.25149); Castro et al., "Quartet", NeurIPS 2025.
"""

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

NVFP4_GROUP = reference.NVFP4_GROUP
E4M3_MAX = reference.E4M3_MAX
NVFP4Tensor = reference.NVFP4Tensor
quantize_nvfp4 = reference.quantize_nvfp4
dequantize_nvfp4 = reference.dequantize_nvfp4
nvfp4_matmul = reference.nvfp4_matmul
from_blocked = reference.from_blocked
