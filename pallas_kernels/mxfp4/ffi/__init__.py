"""XLA FFI bridge for FP4: packed MXFP4 and NVFP4 GEMMs, fused rotate+quantize.

CPU library (g++, the oracle) and CUDA library (nvcc: on Blackwell the MXFP4
GEMM through CUTLASS and the NVFP4 GEMM through cuBLASLt, dequantise + BF16
GEMMs on Hopper), registered under the same target names. Build with `python -m pallas_kernels.mxfp4.ffi.build`
(add `--cuda` for the GPU library); nothing is built or loaded at import.

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from pallas_kernels.mxfp4.ffi._loader import FfiLibraryNotBuiltError
from pallas_kernels.mxfp4.ffi._loader import available
from pallas_kernels.mxfp4.ffi._loader import is_built
from pallas_kernels.mxfp4.ffi._loader import last_cuda_gemm_path
from pallas_kernels.mxfp4.ffi._loader import library_path
from pallas_kernels.mxfp4.ffi._paths import BUILD_COMMAND
from pallas_kernels.mxfp4.ffi.mx import mx_matmul
from pallas_kernels.mxfp4.ffi.mx import quantize_absmax
from pallas_kernels.mxfp4.ffi.mx import quantize_quest
from pallas_kernels.mxfp4.ffi.mx import selected
from pallas_kernels.mxfp4.ffi.ops import gemm
from pallas_kernels.mxfp4.ffi.ops import nvfp4_gemm
from pallas_kernels.mxfp4.ffi.ops import quantize

__all__ = [
  "BUILD_COMMAND",
  "FfiLibraryNotBuiltError",
  "available",
  "gemm",
  "is_built",
  "last_cuda_gemm_path",
  "library_path",
  "mx_matmul",
  "nvfp4_gemm",
  "quantize",
  "quantize_absmax",
  "quantize_quest",
  "selected",
]
