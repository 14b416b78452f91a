"""Host-side statistics for reports: the Student-t interval of a mean.

Every paired comparison in the reproduce report (per seed, per split, per
validation trajectory) is this interval of the per-unit differences.
"""

import numpy as np


def mean_interval(samples, level: float = 0.95):
  """Mean of independent samples and its two-sided Student-t interval.

  Args:
    samples: 1-D sequence of numbers.
    level: two-sided confidence level.

  Returns:
    (mean, lo, hi) as floats. With fewer than two samples, or a non-finite
    one, lo = hi = NaN (no spread can be estimated); no samples: all NaN.
  """
  from scipy import stats  # Host-side only; keeps `import lib.core` light.

  x = np.asarray(samples, dtype=np.float64).reshape(-1)
  if x.size == 0:
    return float("nan"), float("nan"), float("nan")
  mean = float(np.mean(x))
  if x.size < 2 or not np.all(np.isfinite(x)):
    return mean, float("nan"), float("nan")
  half = float(
    stats.t.ppf(0.5 + level / 2, df=x.size - 1)
    * np.std(x, ddof=1)
    / np.sqrt(x.size)
  )
  return mean, mean - half, mean + half


def band(samples, level: float = 0.95) -> dict:
  """{"mean", "lo", "hi", "seeds"}: `mean_interval` plus the samples, the
  results.json layout a seed-banded claim reads (`metric.mean`, `.lo`, `.hi`)."""
  mean, lo, hi = mean_interval(samples, level)
  values = [float(v) for v in np.asarray(samples, np.float64).reshape(-1)]
  return {"mean": mean, "lo": lo, "hi": hi, "seeds": values}


def ratio_interval(slow_times, fast_times, level: float = 0.95):
  """slow / fast, paired per round: geometric mean and its t interval.

  For benchmarks that time two functions in interleaved rounds: the per-round
  log ratios are the paired samples, so a change of machine load between
  rounds cancels.

  Returns:
    (ratio, lo, hi) as floats (exp of `mean_interval` of the log ratios).
  """
  log_ratio = np.log(np.asarray(slow_times, np.float64)) - np.log(
    np.asarray(fast_times, np.float64)
  )
  mean, lo, hi = mean_interval(log_ratio, level)
  return float(np.exp(mean)), float(np.exp(lo)), float(np.exp(hi))
