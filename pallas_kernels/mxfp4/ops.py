"""MXFP4 ops with `implementation=` dispatch: None | "xla" | "pallas" | "ffi".

* None: the pure-jnp reference compiled by XLA; always works on every backend
  (on a GPU backend the CUDA FFI library when it is built; else one log line).
* "xla": the same, explicitly.
* "pallas": the Pallas kernels (`quantize.py`, `gemm.py`); `interpret=None`
  runs them in interpret mode unless the default backend is a GPU.
* "ffi": the XLA FFI bridge (`ffi/`: CPU oracle library, CUDA library with
  FP4 tensor-core GEMMs on Blackwell: MXFP4 via CUTLASS, NVFP4 via
  cuBLASLt); build it with
  `python -m pallas_kernels.mxfp4.ffi.build [--cuda]`.

The reference is fp32 inside; a Pallas kernel equals it up to fp32 summation
order. A new backend (e.g. the CUDA FFI bridge) is one more branch below.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import math

import jax
import jax.numpy as jnp

from pallas_kernels.mxfp4 import ffi
from pallas_kernels.mxfp4 import gemm
from pallas_kernels.mxfp4 import quantize
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.errors import MxInputError
from pallas_kernels.mxfp4.reference import MXTensor

IMPLEMENTATIONS = (None, "xla", "pallas", "ffi")


def _check(implementation) -> None:
  if implementation not in IMPLEMENTATIONS:
    raise MxInputError(
      f"unknown implementation {implementation!r}; one of {IMPLEMENTATIONS}"
    )


def _interpret(interpret: bool | None) -> bool:
  if interpret is None:
    return jax.default_backend() != "gpu"
  return interpret


def _as_2d(x: jax.Array) -> jax.Array:
  return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _lead(t: MXTensor, lead: tuple) -> MXTensor:
  """A 2-D result of the kernels back to `lead` rows (0 rows included)."""
  return MXTensor(
    t.codes.reshape(*lead, t.codes.shape[-1]),
    t.scale.reshape(*lead, t.scale.shape[-1]),
    t.alpha_inv,
  )


def quantize_quest(
  x: jax.Array,
  *,
  hadamard: bool = True,
  implementation: str | None = None,
  interpret: bool | None = None,
) -> tuple[MXTensor, jax.Array]:
  """QuEST forward quantizer; see `reference.quantize_quest`."""
  _check(implementation)
  if ffi.selected(implementation):
    return ffi.quantize_quest(x, hadamard=hadamard)
  if implementation == "pallas" and hadamard:
    t, mask = quantize.quantize_pallas(
      _as_2d(x), method="quest", interpret=_interpret(interpret)
    )
    return _lead(t, x.shape[:-1]), mask.reshape(x.shape)
  return reference.quantize_quest(x, hadamard=hadamard)


def quantize_absmax(
  x: jax.Array,
  *,
  signs: jax.Array | None = None,
  hadamard: bool = True,
  stochastic: bool = True,
  seed: jax.Array | None = None,
  implementation: str | None = None,
  interpret: bool | None = None,
) -> MXTensor:
  """Absmax x 3/4 backward quantizer (SR or RTN); see the reference.

  Raises:
    MxInputError: `signs` is not [32] (one sign per Hadamard column), a
      stochastic rounding without a seed, or an unknown implementation.
    MxDTypeError: a seed that is not a uint32 (integer) scalar array
      (`reference.check_seed`), checked here for every implementation.
  """
  _check(implementation)
  if stochastic:  # The Pallas kernel is jitted: a Python int would pass.
    reference.check_seed(seed)
  if hadamard:
    reference.check_signs(signs)
  if ffi.selected(implementation):
    return ffi.quantize_absmax(
      x, signs=signs, hadamard=hadamard, stochastic=stochastic, seed=seed
    )
  if implementation == "pallas" and hadamard:
    t, _ = quantize.quantize_pallas(
      _as_2d(x),
      method="absmax_sr" if stochastic else "absmax_rtn",
      signs=signs,
      seed=seed,
      interpret=_interpret(interpret),
    )
    return _lead(t, x.shape[:-1])
  return reference.quantize_absmax(
    x, signs=signs, hadamard=hadamard, stochastic=stochastic, seed=seed
  )


def mx_matmul(
  a: MXTensor,
  b: MXTensor,
  *,
  out_dtype=jnp.float32,
  implementation: str | None = None,
  interpret: bool | None = None,
) -> jax.Array:
  """alpha dequant(a)[..., M, K] @ dequant(b)[N, K]^T -> [..., M, N].

  alpha = 1 / (a.alpha_inv b.alpha_inv).

  Raises:
    MxInputError: the operands are not a [..., M, K] and b [N, K] with the
      same K, or the implementation is unknown.
  """
  _check(implementation)
  reference.check_matmul_shapes(a, b)
  if ffi.selected(implementation):
    return ffi.mx_matmul(a, b, out_dtype=out_dtype)
  if implementation == "pallas":
    # The kernel takes [M, K]: a's leading axes are more rows, as in the
    # reference (the quantizers above flatten them the same way).
    rows = MXTensor(_as_2d(a.codes), _as_2d(a.scale), a.alpha_inv)
    y = gemm.mx_matmul_pallas(
      rows, b, out_dtype=out_dtype, interpret=_interpret(interpret)
    )
    return y.reshape(*a.shape[:-1], b.shape[0])
  return reference.mx_matmul(a, b, out_dtype=out_dtype)


def nvfp4_matmul(
  a: reference.NVFP4Tensor,
  b: reference.NVFP4Tensor,
  *,
  out_dtype=jnp.float32,
  implementation: str | None = None,
) -> jax.Array:
  """`reference.nvfp4_matmul` (alpha = product of the tensor scales).

  "ffi" (or None on a GPU with the CUDA library built): the FFI NVFP4 GEMM
  (cuBLASLt's VEC16_UE4M3 path on Blackwell). There is no Pallas NVFP4
  kernel: "pallas" and "xla" run the jnp reference.
  """
  _check(implementation)
  if ffi.selected(implementation):
    return ffi.nvfp4_gemm(a, b, out_dtype=out_dtype)
  return reference.nvfp4_matmul(a, b, out_dtype=out_dtype)
