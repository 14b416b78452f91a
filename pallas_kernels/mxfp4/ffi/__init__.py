"""XLA FFI bridge for MXFP4: packed FP4 GEMM and fused rotate+quantize.

CPU library (g++, the oracle) and CUDA library (nvcc: cuBLASLt block-scaled
FP4 GEMM on Blackwell, dequantise + BF16 GEMM on Hopper), registered under
the same target names. Build with `python -m pallas_kernels.mxfp4.ffi.build`
(add `--cuda` for the GPU library); nothing is built or loaded at import.

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from pallas_kernels.mxfp4.ffi._loader import FfiLibraryNotBuiltError
from pallas_kernels.mxfp4.ffi._loader import available
from pallas_kernels.mxfp4.ffi._loader import is_built
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
  "library_path",
  "mx_matmul",
  "nvfp4_gemm",
  "quantize",
  "quantize_absmax",
  "quantize_quest",
  "selected",
]
