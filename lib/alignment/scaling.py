"""The samples-per-value law Q*(K): per-value accuracy, Q*, the log-K fit.

Im & Li, "Can DPO Learn Diverse Human Values? A Theoretical Scaling Law"
(NeurIPS 2025; arXiv 2408.03459), Thm 4.2/4.3: with preferences from K
values, last-layer DPO keeps its generalisation error fixed only if the
number of samples per value grows as Q = Theta(log K). K enters the theorems
through union bounds over the values, so the law is about the worst value's
error (every value right), not the mean error.

The measurement, as the paper's Fig. 3 reads it off trained models:

- `value_accuracy`: each value's test accuracy (exact for Gaussian clusters,
  else on sampled test pairs);
- `q_star`: the smallest Q whose accuracy reaches a target, interpolated
  on log Q between the grid points around it;
- `fit_law`: least squares Q* = a + b log K against Q* = a' + b' K;
- `scaling_law`: both, per seed, with seed bands (what results.json holds).

Host-side summaries (`q_star`, `fit_law`, `scaling_law`) are numpy: they
run once per experiment on small arrays and compile nothing.
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.alignment import dpo
from lib.core import stats


def value_accuracy(
  w, w_ref, test, num_values: int, *, beta: float, noise: float | None
):
  """Test accuracy of each value [K]: the mean of P(r > 0) over its pairs.

  Args:
    w, w_ref: the trained and the reference unembedding [V, d].
    test: pairs {"g" [N, d], "y_w" [N], "y_l" [N], "cluster" [N]} (cluster:
      the value of each pair, in [0, K)).
    num_values: K.
    beta: the DPO beta (the sign of r does not depend on it).
    noise: the clusters' spread v when `test["g"]` holds the cluster means:
      each pair counts its exact P(r > 0) (`dpo.population_accuracy`, the
      paper's test error as an expectation); None counts r > 0 on the pairs.
  """
  g, y_w, y_l = test["g"], test["y_w"], test["y_l"]
  if noise is not None:
    right = dpo.population_accuracy(w, w_ref, g, y_w, y_l, noise)
  else:
    right = (dpo.margins(w, w_ref, g, y_w, y_l, beta) > 0).astype(g.dtype)
  total = jax.ops.segment_sum(right, test["cluster"], num_values)
  count = jax.ops.segment_sum(jnp.ones_like(right), test["cluster"], num_values)
  return total / count


def q_star(per_value, accuracy, target: float) -> float:
  """Smallest Q with accuracy >= target, interpolated on log Q.

  Between the last grid point below the target and the first at or above it,
  log Q is interpolated linearly in accuracy (exact when accuracy is linear in
  log Q there). The first grid point when it already reaches the target; NaN
  when no Q reaches it.

  Args:
    per_value: the increasing grid of Q (samples per value).
    accuracy: the accuracy at each Q.
    target: the accuracy to reach.
  """
  q = np.asarray(per_value, np.float64)
  acc = np.asarray(accuracy, np.float64)
  hit = np.flatnonzero(acc >= target)
  if hit.size == 0:
    return float("nan")
  j = int(hit[0])
  if j == 0:
    return float(q[0])
  a0, a1 = acc[j - 1], acc[j]
  t = (target - a0) / (a1 - a0) if a1 > a0 else 1.0
  return float(np.exp(np.log(q[j - 1]) + t * (np.log(q[j]) - np.log(q[j - 1]))))


def fit_law(ks, qs) -> dict:
  """Least-squares fits Q = a + b log K and Q = a' + b' K on finite points.

  Returns {"a", "b", "a_lin", "b_lin", "sse_log", "sse_lin", "points"}: the
  coefficients of both laws, their residual sums of squares and the number
  of finite Q used; NaN coefficients when fewer than 3 points are finite
  (two points fit either law exactly).
  """
  ks, qs = np.asarray(ks, np.float64), np.asarray(qs, np.float64)
  ok = np.isfinite(qs)
  out = {"points": int(ok.sum())}
  if ok.sum() < 3:
    for key in ("a", "b", "a_lin", "b_lin", "sse_log", "sse_lin"):
      out[key] = float("nan")
    return out
  for name, feature in (("log", np.log(ks[ok])), ("lin", ks[ok])):
    design = np.stack([np.ones_like(feature), feature], axis=1)
    coef, *_ = np.linalg.lstsq(design, qs[ok], rcond=None)
    suffix = "" if name == "log" else "_lin"
    out[f"a{suffix}"], out[f"b{suffix}"] = float(coef[0]), float(coef[1])
    out[f"sse_{name}"] = float(np.sum((design @ coef - qs[ok]) ** 2))
  return out


def scaling_law(ks, per_value, accuracy, target: float, fixed_q) -> dict:
  """Q*(K) per seed, the two fitted laws and their seed bands.

  Args:
    ks: the K values (increasing).
    per_value: the Q grid.
    accuracy: [S, len(ks), len(per_value)] accuracy per seed, K and Q (the
      mean over values, or the worst value).
    target: the accuracy Q* must reach.
    fixed_q: a Q of the grid for the accuracy-at-fixed-Q summaries.

  Returns:
    "accuracy": the seed-mean accuracy curve per K; "q_star": Q* per K (seed
    band); "q_star_reached_all"; "fit_a", "fit_b", "fit_a_lin", "fit_b_lin"
    (per-seed fits, banded); "sse_lin_minus_log" (> 0: log K fits better);
    "fit_change_rel": the log-K fit's change from the first K to the last,
    b log(K_last / K_first), over the seed's mean finite Q* (0: flat);
    "accuracy_at_fixed_q" per K, "first_minus_last_k" (paired per seed) and
    "max_rise_in_k", the largest rise of the seed mean from one K to the next
    (<= 0 when non-increasing).
  """
  ks = list(ks)
  acc = np.asarray(accuracy)  # its own dtype: the summaries keep it
  seeds = acc.shape[0]
  stars = np.array(
    [
      [q_star(per_value, acc[s, i], target) for i in range(len(ks))]
      for s in range(seeds)
    ]
  )  # [S, K]
  fits = [fit_law(ks, stars[s]) for s in range(seeds)]
  span = np.log(ks[-1] / ks[0])
  change = []
  for s, f in enumerate(fits):
    level = stars[s][np.isfinite(stars[s])]
    change.append(f["b"] * span / level.mean() if level.size else np.nan)
  at_q = acc[:, :, list(per_value).index(fixed_q)].T  # [K, S]
  mean_k = at_q.mean(axis=1)
  band = lambda key: stats.band([f[key] for f in fits])
  return {
    "accuracy": {
      f"K{k}": [float(v) for v in acc[:, i].mean(0)] for i, k in enumerate(ks)
    },
    "q_star": {f"K{k}": stats.band(stars[:, i]) for i, k in enumerate(ks)},
    "q_star_reached_all": bool(np.all(np.isfinite(stars))),
    "fit_a": band("a"),
    "fit_b": band("b"),
    "fit_a_lin": band("a_lin"),
    "fit_b_lin": band("b_lin"),
    "sse_lin_minus_log": stats.band(
      [f["sse_lin"] - f["sse_log"] for f in fits]
    ),
    "fit_change_rel": stats.band(change),
    "accuracy_at_fixed_q": {
      f"K{k}": stats.band(at_q[i]) for i, k in enumerate(ks)
    },
    "first_minus_last_k": stats.band(at_q[0] - at_q[-1]),
    "max_rise_in_k": float(np.max(np.diff(mean_k))) if len(ks) > 1 else 0.0,
  }
