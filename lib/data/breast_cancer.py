"""scikit-learn's bundled breast-cancer data (569 tumours, 30 features)."""

import numpy as np

from lib.core import errors


def breast_cancer_splits(num_splits: int, test_fraction: float, seed: int):
  """Stratified train/test splits, standardised with train statistics.

  Split s draws its test set with `np.random.default_rng(seed + s)`:
  round(test_fraction * n_c) tumours of each class c. Features are
  standardised by the train split's mean and standard deviation, then a
  bias column of ones is appended; labels are in {-1, +1} (1: benign).

  Returns:
    (x, y, x_test, y_test) host arrays stacked over splits: [S, n, 31],
    [S, n], [S, n_test, 31], [S, n_test] (test rows in index order).

  Raises:
    ConfigError: num_splits < 1 or test_fraction outside [0, 1).
  """
  errors.check(
    num_splits >= 1,
    errors.ConfigError,
    f"num_splits must be >= 1, got {num_splits}",
  )
  errors.check(
    0.0 <= test_fraction < 1.0,
    errors.ConfigError,
    f"test_fraction must be in [0, 1), got {test_fraction}",
  )
  from sklearn import datasets  # Local: keeps `import lib.data` light.

  x, y = datasets.load_breast_cancer(return_X_y=True)
  xs, ys, xts, yts = [], [], [], []
  for s in range(num_splits):
    r = np.random.default_rng(seed + s)
    test = np.concatenate(
      [
        r.permutation(np.flatnonzero(y == c))[
          : int(round(test_fraction * np.sum(y == c)))
        ]
        for c in (0, 1)
      ]
    )
    train = np.setdiff1d(np.arange(len(y)), test)
    mean, std = x[train].mean(0), x[train].std(0) + 1e-12
    f = lambda idx, mean=mean, std=std: np.concatenate(
      [(x[idx] - mean) / std, np.ones((len(idx), 1))], 1
    )
    xs.append(f(train))
    ys.append(2.0 * y[train] - 1)
    xts.append(f(np.sort(test)))
    yts.append(2.0 * y[np.sort(test)] - 1)
  return tuple(np.stack(a) for a in (xs, ys, xts, yts))
