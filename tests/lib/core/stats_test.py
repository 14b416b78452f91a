"""lib.core.stats: the Student-t interval against a table value."""

import math

import numpy as np
import pytest

from lib.core import errors
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


def test_mean_over_seeds_disqualifies_a_setting_with_any_bad_seed():
  values = np.array(
    [
      [0.5, 0.25, np.nan],  # a non-finite seed: out
      [1.0, 2.0, 3.0],  # diverged on its last seed (below): out
      [4.0, 0.5, 1.5],  # usable: (4 + 0.5 + 1.5) / 3 = 2
      [0.75, 0.25, 0.5],  # usable: 0.5
    ]
  )
  diverged = np.zeros((4, 3), bool)
  diverged[1, 2] = True
  means, ok = stats.mean_over_seeds(values, diverged=diverged)
  np.testing.assert_array_equal(means, [np.nan, np.nan, 2.0, 0.5])
  np.testing.assert_array_equal(ok.sum(1), [2, 2, 3, 3])
  # Without the divergence flags the second row counts: its mean is 2 too.
  means, _ = stats.mean_over_seeds(values)
  np.testing.assert_array_equal(means, [np.nan, 2.0, 2.0, 0.5])


def test_mean_over_seeds_keeps_the_dtype_and_wants_two_axes():
  x = np.array([[1.5, 2.5]], np.float32)
  assert stats.mean_over_seeds(x)[0].dtype == np.float32
  with pytest.raises(errors.ShapeError, match=r"\[settings, seeds\]"):
    stats.mean_over_seeds([1.0, 2.0])


@pytest.mark.parametrize("fn", [stats.paired_difference, stats.ratio_interval])
def test_paired_statistics_refuse_unpaired_lengths(fn):
  # Three seeds against one: numpy would broadcast the one value over all
  # three and report an interval over "pairs" that do not exist.
  with pytest.raises(errors.ShapeError, match="got 3 and 1"):
    fn([1.0, 2.0, 3.0], [1.0])
  with pytest.raises(errors.ShapeError, match="got 3 and 2"):
    fn([1.0, 2.0, 3.0], [1.0, 2.0])


@pytest.mark.parametrize("level", [95, 0.0, 1.0, -0.5])
def test_a_level_outside_zero_one_is_refused(level):
  # t.ppf(0.5 + 95 / 2) is NaN: the interval came back NaN, silently.
  with pytest.raises(errors.ConfigError, match="level"):
    stats.mean_interval([1.0, 2.0, 3.0], level=level)
  with pytest.raises(errors.ConfigError, match="level"):
    stats.paired_difference([1.0, 2.0], [0.0, 1.0], level=level)


def test_against_each_pairs_every_baseline_and_keeps_the_strictest():
  ours = np.array([1.0, 2.0, 3.0])
  # b1: differences 1, 1, 1 (no spread); b2: 0, 1, 2 (mean 1, s 1).
  out = stats.against_each(ours, {"b1": ours - 1, "b2": np.ones(3)})
  half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} s / sqrt(n)
  assert out["point"] == pytest.approx(1.0)
  assert out["lo"] == pytest.approx(1.0 - half)  # the lowest of both
  np.testing.assert_allclose(out["baselines"]["b2"]["by_seed"], [0, 1, 2])
  assert out["comparator_finite_fraction"] == 1.0
  # Lower is better: sign -1 turns each difference around.
  low = stats.against_each(ours, {"b2": np.ones(3)}, sign=-1.0)
  assert low["point"] == pytest.approx(-1.0)
  assert low["hi"] == pytest.approx(-1.0 + half)


@pytest.mark.parametrize("order", [("b1", "bad"), ("bad", "b1")])
def test_a_baseline_with_a_non_finite_unit_is_diverged_in_any_order(order):
  # Before, the outcome hung on dict order: listed second, the NaN baseline
  # was skipped by min() and the claim passed on b1 alone with a finite
  # fraction of 1; listed first, ours read as not finite.
  ours = np.array([1.0, 2.0, 3.0])
  values = {"b1": ours - 1, "bad": np.array([0.0, np.nan, 1.0])}
  out = stats.against_each(ours, {k: values[k] for k in order})
  assert out["baselines"]["bad"]["diverged"] is True
  assert "diverged" not in out["baselines"]["b1"]
  assert out["comparator_finite_fraction"] == 0.5
  assert out["best_baseline"] == "b1" and out["point"] == pytest.approx(1.0)
  # An infinite loss is a diverged baseline as well, never one beaten.
  inf = stats.against_each(ours, {"b": np.array([0.0, np.inf, 1.0])}, sign=-1)
  assert inf["comparator_finite_fraction"] == 0.0 and "point" not in inf


def test_ours_not_finite_makes_the_combined_point_nan():
  ours = np.array([1.0, np.nan, 3.0])
  out = stats.against_each(ours, {"b1": np.zeros(3), "b2": np.ones(3)})
  assert out["comparator_finite_fraction"] == 1.0
  assert math.isnan(out["point"]) and math.isnan(out["lo"])
  assert out["best_baseline"] is None


def test_against_each_has_no_bias_where_a_per_seed_max_has_one():
  # Three identically distributed methods: against each baseline the mean
  # difference is ~0; against the per-seed better of two it is -E|b1-b2|/2.
  r = np.random.default_rng(0)
  ours, b1, b2 = r.normal(size=(3, 20_000))
  out = stats.against_each(ours, {"b1": b1, "b2": b2})
  assert abs(out["point"]) < 0.03
  max_based = np.mean(ours - np.maximum(b1, b2))
  assert max_based == pytest.approx(-1 / math.sqrt(math.pi), abs=0.03)
