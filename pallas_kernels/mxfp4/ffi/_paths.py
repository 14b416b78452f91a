"""Where the MXFP4 FFI libraries are built and looked for (no jax import)."""

import os
import pathlib

SRC_DIR = pathlib.Path(__file__).resolve().parent
DEFAULT_OUT = SRC_DIR / "_build"
CPU_LIB = "libquartet_mxfp4_cpu.so"
CUDA_LIB = "libquartet_mxfp4_cuda.so"
BUILD_COMMAND = "python -m pallas_kernels.mxfp4.ffi.build"


def default_out_dir() -> pathlib.Path:
  """`$QUARTET_MXFP4_FFI_DIR` if set, else `pallas_kernels/mxfp4/ffi/_build`."""
  env = os.environ.get("QUARTET_MXFP4_FFI_DIR")
  return pathlib.Path(env) if env else DEFAULT_OUT
