"""MXFP4 quantizers: QuEST (forward), absmax x 3/4 with SR/RTN (backward), OCP.

`quantize_quest` and `quantize_absmax` return packed `MXTensor`s and dispatch
through `pallas_kernels.mxfp4.ops` (`implementation=None|"xla"|"pallas"`).
`fake_quantize` returns dequantized, un-rotated values for error studies and
the paper's ablations (quantization MSE table, effN/effD alternatives).

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669); Panferov et al., "QuEST"
  (arXiv 2502.05003); Tseng et al., "Training LLMs with MXFP4"
  (arXiv 2502.20586); OCP Microscaling Formats v1.0.
"""

import jax
import jax.numpy as jnp

from lib.core import errors
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import reference

quantize_quest = ops.quantize_quest
quantize_absmax = ops.quantize_absmax
quantize_ocp = reference.quantize_ocp
seed_from_key = reference.seed_from_key

FAKE_QUANT_METHODS = (
  "ocp",  # OCP absmax, scale 2^(floor(log2 amax) - 2), RTN
  "quest",  # QuEST pow2-floor scale + H32 (Quartet forward)
  "quest_no_hadamard",
  "quest_continuous",  # QuEST, exact (non power of two) scale, no rotation
  "absmax_rtn",  # Tseng absmax x 3/4, RTN, no rotation
  "absmax_sr",  # Tseng absmax x 3/4, SR, no rotation
  "absmax_sr_hadamard",  # Tseng SR + H32 (Quartet backward)
)


def quest_continuous(x: jax.Array) -> jax.Array:
  """QuEST with the exact scale (2.92247856 / 6) sigma (no power of two), RTN.

  The MSE-optimal Gaussian clip of the FP4 grid (sigma the population std of
  each 32-group), without the Hadamard rotation (as the spec's MSE table,
  quartet_fp4 section 1.5); dequantized fp32 values of x's shape.
  """
  if x.ndim < 1 or x.shape[-1] % reference.GROUP:
    raise errors.ShapeError(
      f"MXFP4 quantizes along the last axis in groups of {reference.GROUP}: "
      f"got shape {x.shape}"
    )
  g = x.astype(jnp.float32).reshape(*x.shape[:-1], -1, reference.GROUP)
  sigma = jnp.std(g, axis=-1, keepdims=True)
  s = reference.QUEST_SIGMA_SCALE * sigma + reference.QUEST_EPS
  q = reference.e2m1_decode(reference.e2m1_encode_rne(g / s)) * s
  return q.reshape(x.shape)


def fake_quantize(
  x: jax.Array, method: str, key: jax.Array | None = None
) -> jax.Array:
  """Quantize-dequantize `x` (fp32, original domain) with `method`.

  Args:
    x: [..., C], C % 32 == 0.
    method: one of FAKE_QUANT_METHODS.
    key: PRNG key for the stochastic methods ("absmax_sr",
      "absmax_sr_hadamard"; required there).

  Raises:
    ConfigError: an unknown method, or a stochastic one without a key.
    ValueError: C not a multiple of 32.
  """
  if key is None and method in ("absmax_sr", "absmax_sr_hadamard"):
    raise errors.ConfigError(
      f"fake_quantize method {method!r} rounds stochastically: pass a key"
    )
  seed = reference.seed_from_key(key) if key is not None else None
  if method == "ocp":
    return reference.dequantize(reference.quantize_ocp(x))
  if method == "quest":
    t, _ = reference.quantize_quest(x)
    return reference.unrotate(reference.dequantize(t))
  if method == "quest_no_hadamard":
    t, _ = reference.quantize_quest(x, hadamard=False)
    return reference.dequantize(t)
  if method == "quest_continuous":
    return quest_continuous(x)
  if method == "absmax_rtn":
    t = reference.quantize_absmax(x, hadamard=False, stochastic=False)
    return reference.dequantize(t)
  if method == "absmax_sr":
    t = reference.quantize_absmax(x, hadamard=False, seed=seed)
    return reference.dequantize(t)
  if method == "absmax_sr_hadamard":
    t = reference.quantize_absmax(x, seed=seed)
    return reference.unrotate(reference.dequantize(t))
  raise errors.ConfigError(
    f"unknown method {method!r}; one of {FAKE_QUANT_METHODS}"
  )


def relative_mse(x: jax.Array, method: str, key=None) -> jax.Array:
  """E (q(x) - x)^2 / E x^2 for `fake_quantize(x, method)`."""
  x = x.astype(jnp.float32)
  q = fake_quantize(x, method, key)
  return jnp.mean((q - x) ** 2) / jnp.mean(x * x)
