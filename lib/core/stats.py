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
