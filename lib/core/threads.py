"""Host thread limits."""

import contextlib
import os


def single_threaded_blas():
  """Context manager limiting BLAS/LAPACK (scipy's OpenBLAS) to one thread.

  jax's CPU slogdet, LU and triangular solves call scipy's OpenBLAS; on a small shared machine
  its spin-waiting threads fight XLA's own (measured: the dense-flow training step ran at ~1
  step/s vs ~70 steps/s single-threaded). The env var covers a BLAS not yet loaded,
  threadpoolctl (a scikit-learn dependency) one already loaded.
  """
  os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
  try:
    from threadpoolctl import threadpool_limits
  except ImportError:  # pragma: no cover
    return contextlib.nullcontext()
  return threadpool_limits(limits=1, user_api="blas")
