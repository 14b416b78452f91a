"""The digits split into tasks of disjoint classes."""

import numpy as np
import pytest

from lib.core import errors
from lib.data import digits


def _rows(x, y):
  """(label, pixels) rows in a canonical order: compares multisets."""
  rows = np.concatenate([y[:, None], x], 1).astype(np.float64)
  return rows[np.lexsort(rows.T[::-1])]


def test_class_tasks_partition_each_class_set_once():
  images, labels = digits.load_digits()
  tasks = {"a": range(5), "b": (5, 6, 7, 8, 9)}
  out = digits.class_tasks(tasks, test_fraction=0.3, seed=0)
  assert sorted(out) == sorted(
    f"{v}_{t}_{p}" for v in "xy" for t in "ab" for p in ("train", "test")
  )
  n_test = 0
  for name, classes in tasks.items():
    x_tr, y_tr = out[f"x_{name}_train"], out[f"y_{name}_train"]
    x_te, y_te = out[f"x_{name}_test"], out[f"y_{name}_test"]
    assert x_tr.dtype == np.float32 and y_tr.dtype == np.int32
    assert x_tr.shape == (len(y_tr), 64) and 0 <= x_tr.min() <= x_tr.max() <= 1
    # Train and test together hold every image of these classes once.
    sel = np.isin(labels, list(classes))
    expected = _rows(images[sel].reshape(-1, 64) / 16, labels[sel])
    got = _rows(np.concatenate([x_tr, x_te]), np.concatenate([y_tr, y_te]))
    np.testing.assert_array_equal(got, expected)
    n_test += len(y_te)
  assert n_test == round(0.3 * len(labels))  # One split of all the images.
  again = digits.class_tasks(tasks, test_fraction=0.3, seed=0)
  other = digits.class_tasks(tasks, test_fraction=0.3, seed=1)
  np.testing.assert_array_equal(again["y_a_test"], out["y_a_test"])
  assert not np.array_equal(other["x_a_test"], out["x_a_test"])


@pytest.mark.parametrize(
  "tasks, match",
  [
    ({"a": [0, 11]}, "class 11; digits are 0..9"),
    ({"a": range(5), "b": range(4, 10)}, "class 4 is in tasks 'a' and 'b'"),
    ({"a": []}, "task 'a' has no classes"),
  ],
)
def test_bad_tasks_are_one_line_errors(tasks, match):
  # Class 11 silently gave an empty task, an overlap duplicated images in
  # two "disjoint" tasks, an empty class list an empty task.
  with pytest.raises(errors.ConfigError, match=match):
    digits.class_tasks(tasks, test_fraction=0.3, seed=0)


def test_holdout_partitions_the_training_split_and_leaves_test_alone():
  train, test = digits.split_indices(1797, test_fraction=0.2, seed=3)
  kept, held = digits.holdout(train, fraction=0.25, seed=3)
  # A partition of the training indices, each part sorted, sizes by rounding.
  assert len(held) == round(0.25 * len(train)) and len(kept) + len(held) == len(
    train
  )
  np.testing.assert_array_equal(np.sort(np.concatenate([kept, held])), train)
  assert np.all(np.diff(kept) > 0) and np.all(np.diff(held) > 0)
  assert not np.isin(held, test).any() and not np.isin(kept, test).any()
  # Deterministic in the seed; another seed holds out other images.
  np.testing.assert_array_equal(
    digits.holdout(train, fraction=0.25, seed=3)[1], held
  )
  assert not np.array_equal(
    digits.holdout(train, fraction=0.25, seed=4)[1], held
  )


@pytest.mark.parametrize(
  "n, fraction, match",
  [
    (10, 0.0, r"must be in \(0, 1\)"),
    (10, 1.0, r"must be in \(0, 1\)"),
    (3, 0.1, "leaves 0 held and 3 kept"),
  ],
)
def test_bad_holdout_is_a_one_line_error(n, fraction, match):
  with pytest.raises(errors.ConfigError, match=match):
    digits.holdout(np.arange(n), fraction=fraction, seed=0)
