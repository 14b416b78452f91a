"""scikit-learn's bundled 8x8 digits (1797 images, 17 grey levels)."""

import numpy as np

from lib.core import errors


def load_digits() -> tuple[np.ndarray, np.ndarray]:
  """Returns the bundled digits as host arrays.

  Returns:
    images: float32 (1797, 8, 8), integer values in [0, 16].
    labels: int32 (1797,), values in 0..9.
  """
  from sklearn import datasets  # Local: keeps `import lib.data` light.

  bunch = datasets.load_digits()
  return bunch.images.astype(np.float32), bunch.target.astype(np.int32)


def split_indices(
  n: int, *, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
  """Deterministic random train/test split of range(n)."""
  if not 0.0 < test_fraction < 1.0:
    raise errors.ConfigError(
      f"test_fraction must be in (0, 1), got {test_fraction}"
    )
  perm = np.random.default_rng(seed).permutation(n)
  n_test = int(round(n * test_fraction))
  return np.sort(perm[n_test:]), np.sort(perm[:n_test])
