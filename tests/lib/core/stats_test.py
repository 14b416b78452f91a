"""lib.core.stats: the Student-t interval against a table value."""

import math

import numpy as np

from lib.core import stats


def test_mean_interval_matches_the_t_table():
  # Samples 1, 2, 3: mean 2, sd 1; t(0.975, df=2) = 4.302653 (t table).
  mean, lo, hi = stats.mean_interval([1.0, 2.0, 3.0])
  half = 4.302652729911275 / math.sqrt(3)
  np.testing.assert_allclose([mean, lo, hi], [2.0, 2 - half, 2 + half], 1e-9)


def test_mean_interval_without_a_spread_is_nan():
  assert math.isnan(stats.mean_interval([0.5])[1])
  assert math.isnan(stats.mean_interval([0.5, math.inf])[2])
  assert all(math.isnan(v) for v in stats.mean_interval([]))


def test_ratio_interval_is_the_geometric_mean_of_paired_ratios():
  # Rounds whose load doubles every round: the paired ratio is exactly 3.
  fast = np.array([1.0, 2.0, 4.0, 8.0])
  ratio, lo, hi = stats.ratio_interval(3.0 * fast, fast)
  np.testing.assert_allclose([ratio, lo, hi], [3.0, 3.0, 3.0], rtol=1e-12)
  # Ratios 2 and 8: geometric mean 4 (not the arithmetic 5), band around it.
  ratio, lo, hi = stats.ratio_interval([2.0, 8.0], [1.0, 1.0])
  np.testing.assert_allclose(ratio, 4.0, rtol=1e-12)
  assert lo < 4.0 < hi
