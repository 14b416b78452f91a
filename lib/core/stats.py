"""Host-side statistics for reports: the Student-t interval of a mean.

Every paired comparison in the reproduce report (per seed, per split, per
validation trajectory) is this interval of the per-unit differences.
"""

import math

import numpy as np

from lib.core import errors


def mean_interval(samples, level: float = 0.95):
  """Mean of independent samples and its two-sided Student-t interval.

  Args:
    samples: 1-D sequence of numbers.
    level: two-sided confidence level in (0, 1).

  Returns:
    (mean, lo, hi) as floats. With fewer than two samples, or a non-finite
    one, lo = hi = NaN (no spread can be estimated); no samples: all NaN.
  """
  from scipy import stats  # Host-side only; keeps `import lib.core` light.

  errors.check(
    0 < level < 1,
    errors.ConfigError,
    f"level={level!r} is a confidence level in (0, 1), e.g. 0.95 (not 95)",
  )
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


def mean_over_seeds(values, *, diverged=None):
  """Each setting's mean over its seeds, NaN unless every seed is usable.

  The rule our experiments choose a setting (an lr, a step size) by: a setting
  whose any seed diverged or ended non-finite is disqualified, whatever its
  other seeds did, so a choice never rests on the seeds that happened to
  survive. `select_best` of the means then never picks it:

      means, ok = stats.mean_over_seeds(result.final("loss"),
                                        diverged=result.diverged)
      best = lib.train.select_best(means)   # None when every setting is out

  Args:
    values: [settings, seeds] final values of the selection metric. The mean
      is taken in their dtype.
    diverged: optional bool [settings, seeds], True where a member diverged.

  Returns:
    (means [settings], ok [settings, seeds]): ok marks the usable seeds
    (finite and not diverged); means is NaN where a row is not all ok.
  """
  x = np.asarray(values)
  if x.ndim != 2:
    raise errors.ShapeError(
      f"values must be [settings, seeds], got shape {x.shape}"
    )
  ok = np.isfinite(x)
  if diverged is not None:
    flags = np.asarray(diverged, bool)
    if flags.size != x.size:
      raise errors.ShapeError(
        f"diverged has shape {flags.shape}, values {x.shape}: one flag per "
        "[setting, seed]"
      )
    ok &= ~flags.reshape(x.shape)
  means = np.where(ok.all(1), np.where(ok, x, 0).mean(1), np.nan)
  return means, ok


def _paired(a, b, what: str):
  """a and b as flat float64 arrays of one length: pairs, never broadcast."""
  a = np.asarray(a, np.float64).reshape(-1)
  b = np.asarray(b, np.float64).reshape(-1)
  if a.size != b.size:
    raise errors.ShapeError(
      f"{what} pairs unit by unit, so both need one value per unit (seed, "
      f"split, round): got {a.size} and {b.size}"
    )
  return a, b


def paired_difference(a, b, level: float = 0.95, sign: float = 1.0) -> dict:
  """sign * (a - b) paired per unit (seed, split): its mean and t interval.

  Returns:
    {"point", "lo", "hi", "by_seed"}: `mean_interval` of the per-unit
    differences and the differences themselves (sign = -1 for "lower is
    better", so that > 0 always means `a` is better).
  """
  a, b = _paired(a, b, "paired_difference(a, b)")
  diff = sign * (a - b)
  point, lo, hi = mean_interval(diff, level)
  return {"point": point, "lo": lo, "hi": hi, "by_seed": diff.tolist()}


def against_every(per: dict) -> dict:
  """Combines per-baseline comparisons into one that must hold against all.

  Args:
    per: baseline name -> {"point", "lo", "hi", ...} (a comparison where > 0
      favours our method, e.g. `paired_difference`), or {"diverged": True}
      for a baseline with no usable run.

  Returns:
    {"baselines": per, "comparator_finite_fraction"} plus, when some baseline
    is usable, the strongest baseline's (smallest point) "point" and "hi",
    its name as "best_baseline", and the lowest "lo" of all usable baselines.
    A diverged baseline sets comparator_finite_fraction below 1, so the
    report says so instead of counting it as beaten. A usable baseline's
    non-finite point (ours not finite) makes "point", "lo" and "hi" NaN: no
    order of the baselines can then pick a "strongest".
  """
  finite = [b for b, p in per.items() if not p.get("diverged", False)]
  out = {
    "baselines": per,
    "comparator_finite_fraction": len(finite) / len(per) if per else 0.0,
  }
  if finite and not all(math.isfinite(per[b]["point"]) for b in finite):
    out.update(best_baseline=None, point=math.nan, lo=math.nan, hi=math.nan)
  elif finite:
    best = min(finite, key=lambda b: per[b]["point"])
    out.update(
      best_baseline=best,
      point=per[best]["point"],
      lo=min(per[b]["lo"] for b in finite),
      hi=per[best]["hi"],
    )
  return out


def against_each(
  ours, baselines: dict, level: float = 0.95, sign: float = 1.0
) -> dict:
  """`ours` against every baseline, each paired per unit (`paired_difference`,
  sign -1 for "lower is better"), combined by `against_every`.

  The claim "ours beats the baselines" holds where every paired interval
  clears the check. A per-unit max over the baselines instead would favour
  them: E[ours - max(b1, b2)] < 0 even when all three are alike. A baseline
  with a non-finite value on some unit is marked {"diverged": True} (its
  comparison kept): never beaten, never the strongest.

  Args:
    ours: [n] per-unit values of our method.
    baselines: name -> [n] values, paired with `ours` unit by unit.
    level: the intervals' confidence level.
    sign: -1 where lower values are better.
  """
  per = {}
  for name, theirs in baselines.items():
    per[name] = paired_difference(ours, theirs, level, sign)
    if not np.all(np.isfinite(np.asarray(theirs, np.float64))):
      per[name]["diverged"] = True
  return against_every(per)


def ratio_interval(slow_times, fast_times, level: float = 0.95):
  """slow / fast, paired per round: geometric mean and its t interval.

  For benchmarks that time two functions in interleaved rounds: the per-round
  log ratios are the paired samples, so a change of machine load between
  rounds cancels.

  Returns:
    (ratio, lo, hi) as floats (exp of `mean_interval` of the log ratios).
  """
  slow, fast = _paired(
    slow_times, fast_times, "ratio_interval(slow_times, fast_times)"
  )
  return geometric_interval(slow / fast, level)


def geometric_interval(values, level: float = 0.95):
  """Geometric mean of positive `values` and the exp of the t interval of
  their logs: (mean, lo, hi) as floats. A zero or non-finite value makes
  them non-finite (log 0 = -inf), never an error."""
  with np.errstate(divide="ignore", invalid="ignore"):
    logs = np.log(np.asarray(values, np.float64))
  mean, lo, hi = mean_interval(logs, level)
  return float(np.exp(mean)), float(np.exp(lo)), float(np.exp(hi))
