"""MXTensor-level FFI ops: the "ffi" branch of `pallas_kernels.mxfp4.ops`.

Same signatures and results as `pallas_kernels.mxfp4.reference` (codes and
scales bit-exact on unrotated input and RTN/SR alike; the GEMM up to fp32
summation order), so they can stand in for it inside `quartet_linear`'s
custom_vjp.

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp

from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.ffi import _loader
from pallas_kernels.mxfp4.ffi import ops
from pallas_kernels.mxfp4.reference import MXTensor

_logged_fallback = False


def selected(implementation: str | None) -> bool:
  """Whether an op called with `implementation` runs through the FFI.

  "ffi": always (raises `FfiLibraryNotBuiltError`, saying how to build, when
  the library is missing). None: on a GPU backend when the CUDA library is
  built; otherwise the caller's default path, with one log line per process
  saying why. On CPU, None keeps the XLA path: the CPU library is the oracle,
  not a faster path.
  """
  global _logged_fallback
  if implementation == "ffi":
    _loader.ensure_registered(_loader.ffi_platform())
    return True
  if implementation is not None or jax.default_backend() != "gpu":
    return False
  if _loader.available("CUDA"):
    return True
  if not _logged_fallback:
    _logged_fallback = True
    logging.getLogger(__name__).warning(
      "MXFP4 FFI CUDA library not built (%s); implementation=None uses the "
      "Pallas/XLA path. Build it with `%s --cuda`.",
      _loader.library_path("CUDA"),
      "python -m pallas_kernels.mxfp4.ffi.build",
    )
  return False


def _float_input(x):
  return x if x.dtype in (jnp.float32, jnp.bfloat16) else x.astype(jnp.float32)


def quantize_quest(x, *, hadamard: bool = True):
  """`reference.quantize_quest` through the fused FFI kernel."""
  codes, scale, mask = ops.quantize(
    _float_input(x), method="quest", rotate=hadamard
  )
  return MXTensor(codes, scale, alpha_inv=1), mask


def quantize_absmax(
  x, *, signs=None, hadamard: bool = True, stochastic: bool = True, seed=None
):
  """`reference.quantize_absmax` through the fused FFI kernel."""
  if stochastic:
    reference.check_seed(seed)
  codes, scale, _ = ops.quantize(
    _float_input(x),
    method="absmax_sr" if stochastic else "absmax",
    rotate=hadamard,
    signs=signs if hadamard else None,
    seed=seed,
  )
  return MXTensor(codes, scale, alpha_inv=3)


def mx_matmul(a: MXTensor, b: MXTensor, *, out_dtype=jnp.float32):
  """`reference.mx_matmul` through the FFI GEMM (alpha = 1/(inv_a inv_b))."""
  native = jnp.dtype(out_dtype) in (
    jnp.dtype(jnp.float32),
    jnp.dtype(jnp.bfloat16),
  )
  y = ops.gemm(
    a.codes,
    a.scale,
    b.codes,
    b.scale,
    alpha=1.0 / (a.alpha_inv * b.alpha_inv),
    out_dtype=out_dtype if native else jnp.float32,
  )
  return y if native else y.astype(out_dtype)
