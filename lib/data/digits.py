"""scikit-learn's bundled 8x8 digits (1797 images, 17 grey levels)."""

from collections.abc import Sequence

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


def holdout(
  indices: np.ndarray, *, fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
  """Deterministic random (kept, held) split of `indices`, each sorted.

  Holds a validation part out of a training split (e.g. `split_indices`'s
  train part) to choose hyperparameters on, so that the test part stays
  unseen and identical with or without the hold-out. The permutation is
  drawn from the stream (seed, 1), apart from `split_indices`'s (seed).
  """
  indices = np.asarray(indices)
  if not 0.0 < fraction < 1.0:
    raise errors.ConfigError(
      f"holdout fraction must be in (0, 1), got {fraction}"
    )
  n_held = int(round(len(indices) * fraction))
  if not 0 < n_held < len(indices):
    raise errors.ConfigError(
      f"holdout fraction {fraction} of {len(indices)} indices leaves "
      f"{n_held} held and {len(indices) - n_held} kept: both need at least one"
    )
  perm = np.random.default_rng((seed, 1)).permutation(len(indices))
  return np.sort(indices[perm[n_held:]]), np.sort(indices[perm[:n_held]])


def class_tasks(
  tasks: dict[str, Sequence[int]], *, test_fraction: float, seed: int
) -> dict[str, np.ndarray]:
  """The digits as tasks of disjoint classes, each with train and test parts.

  One random train/test split of all images (`split_indices`), then per task
  the images of its classes, e.g. tasks={"a": range(5), "b": range(5, 10)}:
  NanoAdam's pretraining task (digits 0-4) and fine-tuning task (5-9).

  Returns:
    "x_<task>_<part>": float32 (n, 64), grey levels / 16 in [0, 1], and
    "y_<task>_<part>": int32 (n,) digit labels, for part in train, test.

  Raises:
    ConfigError: a task without classes, a class outside 0..9, or a class
      in two tasks.

  References:
    Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small Weights"
    (NanoAdam), NeurIPS 2025 (fine-tuning on a new task, forgetting the old).
  """
  seen = {}
  for name, classes in tasks.items():
    classes = list(classes)
    errors.check(
      len(classes) > 0, errors.ConfigError, f"task {name!r} has no classes"
    )
    for c in classes:
      errors.check(
        c in range(10),
        errors.ConfigError,
        f"task {name!r} has class {c!r}; digits are 0..9",
      )
      errors.check(
        c not in seen,
        errors.ConfigError,
        f"class {c} is in tasks {seen.get(c)!r} and {name!r}; tasks hold "
        "disjoint classes",
      )
      seen[c] = name
  images, labels = load_digits()
  x = images.reshape(len(images), -1) / 16.0
  train, test = split_indices(len(x), test_fraction=test_fraction, seed=seed)
  out = {}
  for name, classes in tasks.items():
    for part, idx in (("train", train), ("test", test)):
      sel = idx[np.isin(labels[idx], list(classes))]
      out[f"x_{name}_{part}"] = x[sel].astype(np.float32)
      out[f"y_{name}_{part}"] = labels[sel].astype(np.int32)
  return out
