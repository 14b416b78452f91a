"""MXFP4 (E2M1 + E8M0 per 32) kernels: reference, Pallas GEMM/quantize, ops.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

from pallas_kernels.mxfp4.ops import mx_matmul
from pallas_kernels.mxfp4.ops import quantize_absmax
from pallas_kernels.mxfp4.ops import quantize_quest
from pallas_kernels.mxfp4.reference import MXTensor
from pallas_kernels.mxfp4.reference import dequantize
