"""A user's own features: bad input is a one-line error naming the problem."""

import numpy as np
import pytest

from lib import continual
from lib.core import errors


def _arrays(n=20):
  x = np.random.default_rng(0).standard_normal((n, 3))
  return x, np.arange(n) % 2, np.arange(n) // (n // 2)


def test_two_dimensional_labels_are_a_shape_error_even_with_nans():
  # One-hot labels holding a NaN failed with numpy's "cannot convert float
  # NaN to integer" while inferring num_classes, before the shape check.
  x, _, t = _arrays()
  onehot = np.full((20, 2), np.nan)
  with pytest.raises(errors.ShapeError, match="labels must be 1-D"):
    continual.from_arrays(x, onehot, t)


def test_save_load_roundtrip_and_bad_labels(tmp_path):
  x, y, t = _arrays()
  np.savez(tmp_path / "f.npz", features=x, labels=np.eye(2)[y], task_ids=t)
  with pytest.raises(errors.ShapeError, match="f.npz labels must be 1-D"):
    continual.load_feature_file(str(tmp_path / "f.npz"))
  np.savez(tmp_path / "g.npz", features=x, labels=y, task_ids=t)
  tasks = continual.load_feature_file(str(tmp_path / "g.npz"), test_fraction=0)
  # Every row lands in training (bias column appended), none in test.
  assert tasks.num_train == 20 and len(tasks.y_test) == 0
  np.testing.assert_array_equal(tasks.x_train[0][:, -1], 1.0)


@pytest.mark.parametrize("fraction", [-0.5, 1.0, 1.5])
def test_test_fraction_outside_unit_interval_is_refused(fraction):
  # -0.5 held out idx[:-5] (the complement of a 5-row train split) and 1.5
  # left no training rows, both silently.
  x, y, t = _arrays()
  with pytest.raises(errors.ConfigError, match="test_fraction"):
    continual.from_arrays(x, y, t, test_fraction=fraction)
