"""One BLAS thread for the flows tests (see lib.core.threads.single_threaded_blas)."""

import pytest

from lib.core.threads import single_threaded_blas


@pytest.fixture(autouse=True, scope="session")
def _single_threaded_blas():
  import scipy.linalg  # noqa: F401  (loads OpenBLAS so threadpoolctl sees it)

  with single_threaded_blas():
    yield
