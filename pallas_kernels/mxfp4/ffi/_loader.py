"""Finds, loads (ctypes) and registers the MXFP4 FFI libraries, lazily.

Nothing happens at import time: the first call of an FFI op loads the built
libraries and registers the targets with XLA for the "cpu" and "CUDA"
platforms (same target names, per-platform registries).

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import threading

import jax

from pallas_kernels.mxfp4.ffi import _paths

GEMM_TARGET = "quartet_mxfp4_gemm"
QUANTIZE_TARGET = "quartet_mxfp4_quantize"
NVFP4_GEMM_TARGET = "quartet_nvfp4_gemm"
_SYMBOLS = {
  "cpu": {
    GEMM_TARGET: "QuartetMxfp4GemmCpu",
    QUANTIZE_TARGET: "QuartetMxfp4QuantizeCpu",
    NVFP4_GEMM_TARGET: "QuartetNvfp4GemmCpu",
  },
  "CUDA": {
    GEMM_TARGET: "QuartetMxfp4GemmCuda",
    QUANTIZE_TARGET: "QuartetMxfp4QuantizeCuda",
    NVFP4_GEMM_TARGET: "QuartetNvfp4GemmCuda",
  },
}
_LIB_FILES = {"cpu": _paths.CPU_LIB, "CUDA": _paths.CUDA_LIB}

_lock = threading.Lock()
_registered: set[str] = set()
_libraries: dict[str, ctypes.CDLL] = {}


class FfiLibraryNotBuiltError(RuntimeError):
  """The MXFP4 FFI shared library for a platform has not been built.

  A user error (`user_error`): the experiment CLI prints its message, which says
  how to build the library, as one line (see `pallas_kernels/mxfp4/errors.py`).
  """

  user_error = True


def library_path(platform: str = "cpu") -> pathlib.Path:
  """Where the library of `platform` ("cpu" or "CUDA") is looked for."""
  return _paths.default_out_dir() / _LIB_FILES[platform]


def is_built(platform: str = "cpu") -> bool:
  return library_path(platform).is_file()


def _how_to_build(platform: str) -> str:
  flag = " --cuda" if platform == "CUDA" else ""
  return (
    f"the MXFP4 FFI library for {platform} is not built "
    f"({library_path(platform)} is missing); build it with "
    f"`{_paths.BUILD_COMMAND}{flag}` from the repository root"
  )


def _register(platform: str) -> None:
  try:
    lib = ctypes.cdll.LoadLibrary(os.fspath(library_path(platform)))
  except OSError as e:
    raise FfiLibraryNotBuiltError(
      f"{library_path(platform)} exists but does not load ({e}); rebuild it "
      f"with `{_paths.BUILD_COMMAND} --force`"
    ) from e
  _libraries[platform] = lib
  for target, symbol in _SYMBOLS[platform].items():
    jax.ffi.register_ffi_target(
      target, jax.ffi.pycapsule(getattr(lib, symbol)), platform=platform
    )
  _registered.add(platform)


def ensure_registered(platform: str) -> None:
  """Registers the targets for `platform`; raises if its library is missing."""
  with _lock:
    if platform in _registered:
      return
    if not is_built(platform):
      raise FfiLibraryNotBuiltError(_how_to_build(platform))
    _register(platform)


def available(platform: str) -> bool:
  """True when the targets for `platform` are (or can be) registered."""
  try:
    ensure_registered(platform)
  except FfiLibraryNotBuiltError:
    return False
  return True


def ffi_platform(backend: str | None = None) -> str:
  """Maps a JAX backend name to the FFI platform whose library is needed."""
  backend = backend or jax.default_backend()
  if backend == "cpu":
    return "cpu"
  if backend in ("gpu", "cuda"):
    return "CUDA"
  raise FfiLibraryNotBuiltError(
    f"no MXFP4 FFI library exists for the {backend!r} backend (only cpu "
    "and CUDA)"
  )


def last_cuda_gemm_path() -> str | None:
  """Which CUDA GEMM ran last in this process: "fp4", "dequant_bf16" or None.

  Chosen by compute capability: MXFP4 runs CUTLASS's block-scaled GEMM on
  10.x (when built with CUTLASS), NVFP4 cuBLASLt's on 10.x / 12.x (or the
  BF16 path where cuBLASLt has no algorithm); benchmarks report it.
  """
  lib = _libraries.get("CUDA")
  if lib is None:
    return None
  return {1: "fp4", 2: "dequant_bf16"}.get(lib.QuartetMxfp4CudaLastGemmPath())
