"""FP4 training: MXFP4/NVFP4 formats, Hadamard rotations, quantizers, Quartet.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

from lib.quant.formats import MXTensor
from lib.quant.formats import NVFP4Tensor
from lib.quant.formats import dequantize
from lib.quant.formats import dequantize_nvfp4
from lib.quant.formats import e2m1_decode
from lib.quant.formats import e2m1_encode_rne
from lib.quant.formats import e2m1_encode_sr
from lib.quant.formats import from_blocked
from lib.quant.formats import nvfp4_matmul
from lib.quant.formats import pack_nibbles
from lib.quant.formats import quantize_nvfp4
from lib.quant.formats import to_blocked
from lib.quant.formats import unpack_nibbles
from lib.quant.hadamard import fwht
from lib.quant.hadamard import hadamard_matrix
from lib.quant.hadamard import random_signs
from lib.quant.hadamard import rotate
from lib.quant.hadamard import unrotate
from lib.quant.layers import QuartetDense
from lib.quant.quantizers import fake_quantize
from lib.quant.quantizers import quantize_absmax
from lib.quant.quantizers import quantize_ocp
from lib.quant.quantizers import quantize_quest
from lib.quant.quantizers import relative_mse
from lib.quant.quartet import DTypeError
from lib.quant.quartet import quartet_linear
