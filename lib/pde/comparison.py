"""Seed summaries and paired comparisons of the HNS experiments.

Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers" (NeurIPS 2025),
Tables 2/4/5: each model trains several seeds; a claim compares HNS with the
strongest baseline, divergence counted, paired over seeds (or, when there is
one seed, over its validation trajectories, or over its validation batches
for the official correlation time, whose value is one per batch). The metric
dicts are those of `lib.pde.solver.rollout_metrics`, on the host.

The unit of the official correlation time is (seed, batch): both models of a
pair are rolled out on the same validation batch with the same seed index.
With two or more seeds the interval is over seeds, of the per-seed
(batch-size weighted) mean of the per-batch differences: the batches of one
seed share its trained models, so they are not independent draws of the
seed noise, and counting them as such would narrow the interval. With one
seed it is over that seed's batches (initial-condition noise only); with one
seed and one batch (fewer than `corr_batch` validation trajectories) there is
one unit and no interval.
"""

import numpy as np

from lib.core import stats

NAMES = {
  "hns": "HNS",
  "derivative_cnn": "du/dt CNN",
  "next_step_cnn": "next-step CNN",
}
SCALARS = (
  "rollout_error",
  "rollout_error_finite",
  "correlation_time",
  "correlation_time_per_trajectory",
  "hamiltonian_error",
  "hamiltonian_error_finite",
  "finite_fraction",
  "num_diverged",
)


def summarize(per_seed):
  """Mean over seeds of each scalar metric, the per-seed values and a band.

  `<metric>` is the mean over seeds (inf as soon as one seed has a diverged
  trajectory for the error metrics), `<metric>_seeds` the per-seed values and
  `<metric>_lo/_hi` the Student-t interval of the mean over units (seeds when
  there are two or more, else the trajectories, or for the official
  correlation time the batches, of the one seed; `units`). `num_diverged`
  is the total over seeds of diverged trajectories.
  """
  out = {}
  for k in SCALARS:
    values = [float(m[k]) for m in per_seed]
    out[k] = float(np.mean(values))
    out[f"{k}_seeds"] = values
  for k in ("rollout_error", "correlation_time", "hamiltonian_error"):
    _, out[f"{k}_lo"], out[f"{k}_hi"] = stats.mean_interval(units(per_seed, k))
  diverged_at = [float(m["diverged_at"]) for m in per_seed]
  out["diverged_at_seeds"] = diverged_at
  out["num_diverged"] = int(np.sum(out["num_diverged_seeds"]))
  out["diverged"] = bool(out["finite_fraction"] < 1.0)
  return out


def units(per_seed, metric):
  """Per-unit values of `metric`: one per seed, or, with one seed, one per
  validation batch where the metric has them (`batch_<metric>`: the official
  correlation time), else one per trajectory."""
  if len(per_seed) >= 2:
    return np.asarray([float(m[metric]) for m in per_seed])
  one = per_seed[0]
  key = f"batch_{metric}" if f"batch_{metric}" in one else f"traj_{metric}"
  return np.asarray(one[key], dtype=np.float64)


def unit_name(per_seed, metric):
  """What one unit of `units` is: "seeds", "batches" or "trajectories"."""
  if len(per_seed) >= 2:
    return "seeds"
  return "batches" if f"batch_{metric}" in per_seed[0] else "trajectories"


def compare(per_seed, metric, baselines, *, higher_is_better, ratio):
  """HNS vs every baseline on `metric`, each as a paired interval.

  As `lib.core.stats.against_every`: the point and the high end are the
  strongest baseline's (by mean score, divergence counted), the low end the
  lowest of all baselines' intervals, and the finite fraction the smallest
  of all baselines': a weaker baseline that diverged is reported, never
  counted as beaten (before, only the strongest one's was).

  Args:
    per_seed: {model kind: per-seed metric dicts}, "hns" included.
    metric: "rollout_error", "correlation_time" or "hamiltonian_error".
    baselines: the baseline kinds that were run.
    higher_is_better: True for correlation time.
    ratio: True: the statistic is comparator / HNS per unit (how many times
      smaller HNS's error is), point = geometric mean of the unit ratios and
      the interval exp(t-interval of the log ratios); False: HNS - comparator
      per unit, point = mean difference.

  Returns:
    {"comparator": the strongest kind, "comparator_name", "comparator_value"
    (mean over seeds), "comparator_finite_fraction" (the smallest over the
    baselines), "comparator_diverged", "hns_value", "point", "lo", "hi",
    "units" ("seeds", "batches" or "trajectories": `unit_name`),
    "num_units", "per_unit" (the strongest's per-unit statistic),
    "num_diverged" {kind: diverged trajectories over seeds}, "baselines":
    {kind: {metric, finite_fraction, point, lo, hi, per_unit}}}.
  """

  def score(kind):
    v = float(np.mean([float(m[metric]) for m in per_seed[kind]]))
    return v if higher_is_better else -v

  def finite_fraction(kind):
    return float(np.mean([float(m["finite_fraction"]) for m in per_seed[kind]]))

  hns_units = units(per_seed["hns"], metric)

  def against(kind):
    base_units = units(per_seed[kind], metric)
    with np.errstate(divide="ignore", invalid="ignore"):
      if ratio:
        stat = np.log(base_units) - np.log(hns_units)
      else:
        stat = hns_units - base_units
    point, lo, hi = stats.mean_interval(stat)
    if ratio:
      point, lo, hi = (float(np.exp(v)) for v in (point, lo, hi))
    return {
      "point": float(point),
      "lo": float(lo),
      "hi": float(hi),
      # The per-unit statistic behind the interval (the ratio itself when
      # `ratio`): the reproduce report's seeds-needed column reads it.
      "per_unit": (np.exp(stat) if ratio else stat).tolist(),
    }

  each = {k: against(k) for k in baselines}
  # Strongest first; among equal scores (all inf) the least diverged.
  best = max(baselines, key=lambda k: (score(k), finite_fraction(k)))
  ff = min(finite_fraction(k) for k in baselines)
  return {
    "comparator": best,
    "comparator_name": NAMES[best],
    "comparator_value": float(
      np.mean([float(m[metric]) for m in per_seed[best]])
    ),
    "comparator_finite_fraction": ff,
    "comparator_diverged": bool(ff < 1.0),
    "hns_value": float(np.mean([float(m[metric]) for m in per_seed["hns"]])),
    "point": each[best]["point"],
    # NaN (one unit, or a non-finite statistic) in any baseline's band makes
    # the low end NaN: the report reads it as no band.
    "lo": float(np.min([each[k]["lo"] for k in baselines])),
    "hi": each[best]["hi"],
    "units": unit_name(per_seed["hns"], metric),
    "num_units": len(each[best]["per_unit"]),
    "per_unit": each[best]["per_unit"],
    # Diverged trajectories over all seeds, per model: the official
    # correlation time can hide them (a diverged batch looks correlated).
    "num_diverged": {
      k: int(sum(int(m["num_diverged"]) for m in per_seed[k]))
      for k in ("hns", *baselines)
    },
    "baselines": {
      k: {
        metric: float(np.mean([float(m[metric]) for m in per_seed[k]])),
        "finite_fraction": finite_fraction(k),
        **each[k],
      }
      for k in baselines
    },
  }
