"""Breast-cancer splits: stratified, disjoint, standardised on train only."""

import numpy as np
import pytest

from lib import data
from lib.core import errors


def test_splits_are_stratified_and_standardised_on_train():
  x, y, xt, yt = data.breast_cancer_splits(2, 0.2, seed=0)
  # 569 tumours, 212 malignant and 357 benign: round(0.2 n_c) of each class.
  assert x.shape == (2, 569 - 42 - 71, 31) and xt.shape == (2, 113, 31)
  np.testing.assert_array_equal((yt == -1).sum(1), [42, 42])
  np.testing.assert_array_equal((yt == 1).sum(1), [71, 71])
  assert set(np.unique(y)) == {-1.0, 1.0}
  # Train features: mean 0 and std 1 per feature; the bias column is ones.
  np.testing.assert_allclose(x[..., :30].mean(1), 0.0, atol=1e-12)
  np.testing.assert_allclose(x[..., :30].std(1), 1.0, atol=1e-9)
  np.testing.assert_array_equal(x[..., 30], 1.0)
  np.testing.assert_array_equal(xt[..., 30], 1.0)
  # Train and test rows of one split are disjoint tumours; splits differ.
  rows = lambda a: {tuple(np.round(r, 6)) for r in a}
  assert not rows(x[0]) & rows(xt[0])
  assert rows(xt[0]) != rows(xt[1])


@pytest.mark.parametrize(
  "splits, fraction, match",
  [
    (1, 1.5, "test_fraction"),
    (1, -0.1, "test_fraction"),
    (0, 0.2, "num_splits"),
  ],
)
def test_bad_split_settings_are_one_line_errors(splits, fraction, match):
  # test_fraction 1.5 left no training rows and standardised by the mean of
  # nothing (NaN, with numpy warnings); 0 splits raised np.stack's ValueError.
  with pytest.raises(errors.ConfigError, match=match):
    data.breast_cancer_splits(splits, fraction, seed=0)
