"""One BLAS thread for the flows tests.

jax's CPU slogdet/LU/triangular solves call scipy's OpenBLAS, whose worker
threads spin against XLA's on a loaded 2-core machine (we measured 50x
slowdowns of dense-flow steps).
"""

import pytest


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
  import scipy.linalg  # noqa: F401  (loads OpenBLAS so threadpoolctl sees it)
  from threadpoolctl import threadpool_limits

  with threadpool_limits(limits=1, user_api="blas"):
    yield
