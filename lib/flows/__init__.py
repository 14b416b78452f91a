"""Normalizing flows with circulant-diagonal (CDFlow) invertible layers.

Bijectors follow distrax conventions (forward = latent -> data, log-dets with
the batch shape) with explicit params: `b.init(key, data_batch)`,
`b.forward_and_log_det(params, x)`, `b.inverse_and_log_det(params, y)`.

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323).
"""

from lib.flows.base import Bijector
from lib.flows.base import Chain
from lib.flows.base import Inverse
from lib.flows.base import chain
from lib.flows.cd_linear import CDLinear
from lib.flows.cd_linear import half_spectrum_weights
from lib.flows.dequant import bits_per_dim
from lib.flows.dequant import inverse_logit_transform
from lib.flows.dequant import logit_transform
from lib.flows.dequant import uniform_dequantize
from lib.flows.layers import ActNorm
from lib.flows.layers import AffineCoupling
from lib.flows.layers import SplitPrior
from lib.flows.layers import merge
from lib.flows.layers import split
from lib.flows.layers import squeeze
from lib.flows.layers import standard_normal_log_prob
from lib.flows.layers import unsqueeze
from lib.flows.linear import LINEAR_KINDS
from lib.flows.linear import DenseLinear
from lib.flows.linear import Identity
from lib.flows.linear import LULinear
from lib.flows.linear import Permutation
from lib.flows.linear import is_cd_kind
from lib.flows.linear import make_linear
from lib.flows.models import ImageFlow
from lib.flows.models import VectorFlow
from lib.flows.models import flow_steps

__all__ = [
  "LINEAR_KINDS",
  "ActNorm",
  "AffineCoupling",
  "Bijector",
  "CDLinear",
  "Chain",
  "DenseLinear",
  "Identity",
  "ImageFlow",
  "Inverse",
  "LULinear",
  "Permutation",
  "SplitPrior",
  "VectorFlow",
  "bits_per_dim",
  "chain",
  "flow_steps",
  "half_spectrum_weights",
  "inverse_logit_transform",
  "logit_transform",
  "is_cd_kind",
  "make_linear",
  "merge",
  "split",
  "squeeze",
  "standard_normal_log_prob",
  "uniform_dequantize",
  "unsqueeze",
]
