"""Builds the Quartet MXFP4 FFI shared libraries (never run at import time).

Run from the repository root:

  python -m pallas_kernels.mxfp4.ffi.build [--cpu]    # CPU library (g++)
  python -m pallas_kernels.mxfp4.ffi.build --cuda     # CPU + CUDA (nvcc)

Outputs go to `pallas_kernels/mxfp4/ffi/_build/` (git-ignored; override with
`--out` or the `QUARTET_MXFP4_FFI_DIR` environment variable, which the loader
reads too). A library newer than its sources is not rebuilt unless `--force`.

The CUDA library links the CUDA runtime statically and opens cuBLASLt with
dlopen at first use, so it compiles with nvcc alone and loads on machines
without a GPU. When `cublasLt.h` is found (`--cublas-include`,
`$CUBLAS_INCLUDE_DIR`, or the `nvidia-cublas` wheel's `nvidia/cu13/include`),
the build checks the hand-written cuBLASLt declarations against it.

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time

from pallas_kernels.mxfp4.ffi._paths import BUILD_COMMAND
from pallas_kernels.mxfp4.ffi._paths import CPU_LIB
from pallas_kernels.mxfp4.ffi._paths import CUDA_LIB
from pallas_kernels.mxfp4.ffi._paths import SRC_DIR
from pallas_kernels.mxfp4.ffi._paths import default_out_dir

__all__ = [
  "BUILD_COMMAND",
  "build_cpu",
  "build_cuda",
  "find_cublas_include",
  "find_cutlass_include",
  "find_nvcc",
  "main",
]

CPU_SOURCES = ("mxfp4_cpu.cc", "mxfp4_math.h", "ffi_shapes.h")
CUDA_SOURCES = (
  "mxfp4_cuda.cu",
  "mxfp4_math.h",
  "ffi_shapes.h",
  "cublaslt_api.h",
  "mxfp4_cutlass.cu",
)
# Constants the C++/CUDA sources take from the Python reference (one value,
# one place); a change there rebuilds the libraries.
REFERENCE = SRC_DIR.parent / "reference.py"
# CUTLASS's block-scaled MXFP4 GEMM (mxfp4_cutlass.cu), one object per
# Blackwell family (its kernels are architecture-specific): gencode -> define.
CUTLASS_TARGETS = {
  "100a": "QUARTET_CUTLASS_SM100",
  "120a": "QUARTET_CUTLASS_SM120",
}
# sm_90a: Hopper (dequantise + BF16 cuBLASLt fallback); sm_100a: B200/GB200;
# sm_120a: RTX 50xx. The "a" targets enable the architecture-specific
# instructions (hardware FP4 conversions) that the FP4 path relies on.
GENCODES = ("90a", "100a", "120a")


def ffi_include_dir() -> str:
  # jaxlib ships the XLA FFI headers; importing jax.ffi does not start a
  # backend.
  import jax.ffi  # pylint: disable=g-import-not-at-top

  return jax.ffi.include_dir()


def find_cublas_include(explicit: str | None = None) -> str | None:
  """Returns a directory holding cublasLt.h, or None."""
  candidates = [explicit, os.environ.get("CUBLAS_INCLUDE_DIR")]
  for pkg in ("nvidia.cu13", "nvidia.cublas"):
    try:
      spec = importlib.util.find_spec(pkg)
    except ModuleNotFoundError:
      spec = None
    if spec is not None and spec.submodule_search_locations:
      for loc in spec.submodule_search_locations:
        candidates.append(os.path.join(loc, "include"))
  cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
  if cuda_home:
    candidates.append(os.path.join(cuda_home, "include"))
  nvcc = find_nvcc()
  if nvcc:
    candidates.append(
      str(pathlib.Path(nvcc).resolve().parent.parent / "include")
    )
  for c in candidates:
    if c and os.path.isfile(os.path.join(c, "cublasLt.h")):
      return c
  return None


def find_cutlass_include(explicit: str | None = None) -> list[str] | None:
  """CUTLASS's include directories (cutlass/ + cute/, and its util headers):
  `explicit` or `$CUTLASS_DIR` (a CUTLASS checkout: include/ and
  tools/util/include/), else the `nvidia-cutlass` wheel's copy
  (`cutlass_library/source/...`); None when there is none."""
  roots = [explicit, os.environ.get("CUTLASS_DIR")]
  try:
    spec = importlib.util.find_spec("cutlass_library")
  except ModuleNotFoundError:
    spec = None
  for loc in (spec.submodule_search_locations or []) if spec else []:
    roots.append(os.path.join(loc, "source"))
  for root in roots:
    if not root:
      continue
    inc = os.path.join(root, "include")
    util = os.path.join(root, "tools", "util", "include")
    if os.path.isfile(os.path.join(inc, "cutlass", "cutlass.h")) and (
      os.path.isfile(os.path.join(util, "cutlass", "util", "packed_stride.hpp"))
    ):
      return [inc, util]
  return None


def find_nvcc() -> str | None:
  """nvcc: `$NVCC`, else on PATH, else the `nvidia-cuda-nvcc` wheel's
  (`nvidia/cu13/bin/nvcc`, which finds the wheels' CUDA headers and static
  runtime next to it); None when there is none."""
  found = os.environ.get("NVCC") or shutil.which("nvcc")
  if found:
    return found
  for pkg in ("nvidia.cu13", "nvidia.cuda_nvcc"):
    try:
      spec = importlib.util.find_spec(pkg)
    except ModuleNotFoundError:
      spec = None
    for loc in (spec.submodule_search_locations or []) if spec else []:
      path = os.path.join(loc, "bin", "nvcc")
      if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
  return None


def reference_defines() -> list[str]:
  """-D flags carrying the reference's constants into the C++/CUDA sources.

  QUEST_SIGMA_SCALE is rounded to float32 here and printed with 9
  significant digits, which read back as that same float32.
  """
  # Lazy like jax.ffi above: the reference imports jax.
  from pallas_kernels.mxfp4 import reference

  (scale,) = struct.unpack("f", struct.pack("f", reference.QUEST_SIGMA_SCALE))
  return [f"-DQUARTET_QUEST_SIGMA_SCALE={scale:.8e}f"]


def _up_to_date(out: pathlib.Path, sources) -> bool:
  if not out.exists():
    return False
  paths = [SRC_DIR / s for s in sources] + [REFERENCE]
  newest = max(p.stat().st_mtime for p in paths)
  return out.stat().st_mtime >= newest


def _compile(cmd: list[str], out: pathlib.Path) -> float:
  """Runs `cmd` (which writes to its last argument) and installs atomically."""
  out.parent.mkdir(parents=True, exist_ok=True)
  # Concurrent test workers may build at once: compile to a private file and
  # rename, so a reader never sees a half-written library.
  fd, tmp = tempfile.mkstemp(suffix=".so", dir=out.parent)
  os.close(fd)
  start = time.perf_counter()
  try:
    proc = subprocess.run(
      [*cmd, tmp], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
      raise RuntimeError(
        f"building {out.name} failed:\n$ {' '.join(cmd)} {tmp}\n"
        f"{proc.stdout}{proc.stderr}"
      )
    os.replace(tmp, out)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)
  return time.perf_counter() - start


def build_cpu(out_dir=None, *, force: bool = False) -> pathlib.Path:
  """Builds the CPU handler library with g++; returns its path."""
  out = pathlib.Path(out_dir or default_out_dir()) / CPU_LIB
  if not force and _up_to_date(out, CPU_SOURCES):
    return out
  cxx = os.environ.get("CXX", "g++")
  cmd = [
    cxx,
    "-O2",
    "-std=c++17",
    "-shared",
    "-fPIC",
    # Same float32 operation sequence as the reference: no FMA contraction
    # beyond the fmaf() calls written in the source.
    "-ffp-contract=off",
    "-fvisibility=hidden",
    *reference_defines(),
    "-isystem",
    ffi_include_dir(),
    str(SRC_DIR / "mxfp4_cpu.cc"),
    "-o",
  ]
  _compile(cmd, out)
  return out


def build_cuda(
  out_dir=None,
  *,
  force: bool = False,
  gencodes=GENCODES,
  cublas_include: str | None = None,
  cutlass_dir: str | None = None,
) -> pathlib.Path:
  """Builds the CUDA handler library with nvcc; returns its path.

  With CUTLASS's headers (`find_cutlass_include`) the MXFP4 GEMM gets its
  Blackwell paths (mxfp4_cutlass.cu, one object for sm_100a and one for
  sm_120a, compiled concurrently: about a minute and 4 GB of memory each);
  without them the library still builds and MXFP4 takes dequantise + BF16
  everywhere.
  """
  out = pathlib.Path(out_dir or default_out_dir()) / CUDA_LIB
  if not force and _up_to_date(out, CUDA_SOURCES):
    return out
  nvcc = find_nvcc()
  if not nvcc:
    raise RuntimeError(
      "nvcc not found: install the CUDA toolkit (>= 12.8) or the "
      "nvidia-cuda-nvcc wheel (requirements-dev.txt)"
    )
  common = [
    nvcc,
    "-O2",
    "-std=c++17",
    "-Xcompiler",
    "-fPIC,-fvisibility=hidden,-ffp-contract=off",
    "--fmad=false",
    *reference_defines(),
  ]
  inc = find_cublas_include(cublas_include)
  main = [*common, "-isystem", ffi_include_dir()]
  if inc:
    main += ["-DQUARTET_CHECK_CUBLASLT_H=1", "-isystem", inc]
  for g in gencodes:
    main += ["-gencode", f"arch=compute_{g},code=sm_{g}"]
  cutlass = find_cutlass_include(cutlass_dir)
  objects = []
  with tempfile.TemporaryDirectory() as tmp:
    targets = [g for g in CUTLASS_TARGETS if g in gencodes] if cutlass else []
    jobs = []
    for g in targets:  # compiled concurrently: about a minute each
      obj = os.path.join(tmp, f"mxfp4_cutlass_sm{g}.o")
      cmd = [*common, "--expt-relaxed-constexpr", "-c"]
      for d in cutlass:
        cmd += ["-isystem", d]
      cmd += [
        f"-D{CUTLASS_TARGETS[g]}=1",
        "-gencode",
        f"arch=compute_{g},code=sm_{g}",
        str(SRC_DIR / "mxfp4_cutlass.cu"),
        "-o",
        obj,
      ]
      jobs.append(
        (
          cmd,
          subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
          ),
        )
      )
      objects.append(obj)
      main.append(f"-D{CUTLASS_TARGETS[g]}=1")
    for cmd, proc in jobs:
      out_text, _ = proc.communicate()
      if proc.returncode != 0:
        raise RuntimeError(
          f"compiling mxfp4_cutlass.cu failed:\n$ {' '.join(cmd)}\n{out_text}"
        )
    cmd = [
      *main,
      "-shared",
      # Static cudart: the library loads on machines without the CUDA runtime
      # (the CPU-only test suite dlopens it to check its symbols).
      "-cudart",
      "static",
      str(SRC_DIR / "mxfp4_cuda.cu"),
      *objects,
      "-ldl",
      "-o",
    ]
    _compile(cmd, out)
  return out


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument(
    "--cpu", action="store_true", help="CPU library only (the default)"
  )
  parser.add_argument("--cuda", action="store_true", help="also build CUDA")
  parser.add_argument("--out", default=None, help="output directory")
  parser.add_argument("--force", action="store_true", help="always rebuild")
  parser.add_argument("--cublas-include", default=None)
  args = parser.parse_args(argv)
  if args.cpu and args.cuda:
    parser.error("--cpu and --cuda are exclusive (--cuda builds both)")
  start = time.perf_counter()
  path = build_cpu(args.out, force=args.force)
  print(f"built {path} ({time.perf_counter() - start:.1f}s)")
  if args.cuda:
    start = time.perf_counter()
    path = build_cuda(
      args.out, force=args.force, cublas_include=args.cublas_include
    )
    print(f"built {path} ({time.perf_counter() - start:.1f}s)")
  return 0


if __name__ == "__main__":
  sys.exit(main())
