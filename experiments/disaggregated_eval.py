"""Disaggregated evaluation under a causal lens (Pfohl et al., NeurIPS 2025).

"Understanding challenges to the interpretation of disaggregated evaluations
of algorithmic fairness" (arXiv 2506.04193): a Bayes-optimal model is
generally unequal across groups when P(X), P(Y) or P(Y|X) differ by group;
pair disaggregated metrics with causal assumptions and weighted comparisons.
For every named setting of the paper's simulators (`lib.evaluation`), on a
held-out evaluation set:

- models: f(X, A) (the DGP's closed-form P(Y | X, A) in the causal family;
  logistic regression on polynomial features x A otherwise) and the
  group-agnostic f(X) (logistic regression on polynomial features of X);
- per group and metric: the unweighted disparity (group 1 - group 0) and
  T_a(V) = metric(group a) - metric(population weighted by P(A=a | V)) for
  V in {X, Y, R = logit of the evaluated model's score} (as the official
  evaluate.py), P(A | V) by logistic regression;
- the relative comparison f(X, A) - f(X) per group (paired);
- calibration-in-the-large per group, unweighted and with 1/P(S | .) weights
  (selection settings: models trained with them, `selection_eval`);
- 95 % percentile-bootstrap intervals over evaluation rows (P(A | V) fitted
  once, not refitted per resample [ours]): P(A | X) and P(A | Y) on the
  training rows, P(A | R) cross-fitted on the evaluation rows (`folds`), as
  the official notebooks.

Where the official notebooks (causal_evaluation/colab/simulation_fit_models,
simulation_selection) do otherwise [ours, not yet config modes]:
- P(A | R)'s cross_val_predict there runs an inner grid search over the
  model's hyperparameters; here the polynomial logistic model is fixed.
- Selection settings (`config.selection_eval`): "population" follows the
  official notebook (models fitted on selected training rows, scored on the
  population); its 1/P(S | .) view (the same models trained with those
  weights) is ours: the notebook only plots calibration curves. "selected"
  is our earlier design (the population's P(Y | X, A) on selected rows).
- There f(X), f(X, A) and a per-group (stratified) model are gradient
  boosting with a cross-validated grid; no stratified model here.

No training loop runs here (closed-form and Newton-fitted models), so the
experiment is one jitted evaluation per setting; results.json holds every
number, `forest.png` the statistics with their intervals per setting.

Run: python -m experiments.disaggregated_eval \
  --config configs/disaggregated_eval.py:quick --workdir runs/disaggregated_eval
"""

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import evaluation as ev
from lib import train as train_lib
from lib.core import errors
from lib.core import rng

GROUPS = (0, 1)


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  if config.settings or not config.csv_path:  # () with a CSV: the CSV alone
    _checks.names(config.settings, tuple(ev.SETTINGS), "config.settings")
  for key in ("n_train", "n_eval"):
    _checks.integer(config[key], f"config.{key}", minimum=100)
  _checks.integer(config.resamples, "config.resamples", minimum=2)
  _checks.integer(config.folds, "config.folds", minimum=2)
  _checks.one_of(
    config.selection_eval, ("population", "selected"), "config.selection_eval"
  )
  _checks.fraction(config.level, "config.level")
  _checks.fraction(config.threshold, "config.threshold")
  _checks.integer(config.degree, "config.degree")
  _checks.number(config.margin, "config.margin", above=0)
  for role in ("score", "label", "group"):
    errors.check(
      not config.csv_path or bool(config.csv_columns[role]),
      errors.ConfigError,
      f"config.csv_columns.{role} must name a column of config.csv_path",
    )
  values = config.csv_group_values
  errors.check(
    isinstance(values, tuple | list) and len(values) in (0, 2),
    errors.ConfigError,
    f"config.csv_group_values={values!r} must be () or the two values of "
    "the group column meaning group 0 and group 1",
  )


def _x_features(x, degree):
  return ev.polynomial_features(x, degree)


def _xa_features(x, a, degree):
  f = ev.polynomial_features(x, degree)
  return jnp.concatenate([f, f * a[:, None].astype(f.dtype)], axis=-1)


def draw(config, name, key):
  """(train, eval) dicts of one setting. Selection settings train on selected
  rows; the evaluation rows are the population's (`selection_eval`
  "population", the official notebook's) or selected too ("selected")."""
  st = ev.setting(name)
  k_train, k_eval = jax.random.split(key)
  # Selection keeps about half the draws: draw enough to fill both sets.
  factor = 1 if st.selection == "none" else 3
  out = []
  for k, n in ((k_train, config.n_train), (k_eval, config.n_eval)):
    select = st.selection != "none"
    if out and config.selection_eval == "population":
      select = False  # the evaluation rows: the whole population
    d = {k2: np.asarray(v) for k2, v in ev.simulate(k, st, factor * n).items()}
    d = d if select else {k2: v[:n] for k2, v in d.items()}
    if select:
      keep = np.flatnonzero(d["s"] == 1)[:n]
      errors.check(
        keep.size == n,
        errors.ConfigError,
        f"{name}: only {keep.size} of {factor * n} draws selected, need {n}",
      )
      d = {k2: v[keep] for k2, v in d.items()}
    out.append(d)
  return st, out[0], out[1]


def models(config, st, train, evald, w=None) -> dict:
  """Scores of f(X, A) and f(X) on the evaluation rows; `w`: training-row
  weights (1/P(S | .) for the population view of a selection setting).

  f(X, A) is the DGP's P(Y | X, A) (Bayes-optimal) in the causal family,
  unless the models learn from selected rows evaluated on the population.
  """
  fitted = st.family != "causal" or (
    st.selection != "none" and config.selection_eval == "population"
  )
  return _models(not fitted, config.degree, train, evald, w)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _models(closed_form: bool, deg: int, train, evald, w) -> dict:
  # One standardisation for train and eval rows (features are unsupervised).
  x_all = jnp.concatenate([train["x"], evald["x"]])
  f_all = _x_features(x_all, deg)
  fx = ev.fit_logistic(f_all[: len(train["x"])], train["y"], w)
  p_x = ev.predict_logistic(fx, f_all[len(train["x"]) :])
  if closed_form:
    p_xa = evald["p_y"]  # the DGP's P(Y | X, A): Bayes-optimal
  else:
    a_all = jnp.concatenate([train["a"], evald["a"]])
    fa_all = _xa_features(x_all, a_all, deg)
    fxa = ev.fit_logistic(fa_all[: len(train["x"])], train["y"], w)
    p_xa = ev.predict_logistic(fxa, fa_all[len(train["x"]) :])
  return {"xa": p_xa, "x": p_x}


def _statistic(counts, args) -> dict:
  """Every statistic of one bootstrap resample (flat keys 'model/stat/metric').

  `counts` [n] is each row's multiplicity in the resample (ones for the point
  estimate), so every statistic is a weighted one over fixed rows. The rows
  are sorted by each model's score once, outside (args["order"]): every
  weighting of that model (groups, P(A | V), 1/P(S | .)) in every resample
  reuses the order for the AUC, so no resample sorts.
  """
  thr, out = args["threshold"], {}
  for m, s in args["p"].items():
    rows = args["order"][m]
    ss, y, a, c = s[rows], args["y"][rows], args["a"][rows], counts[rows]
    ties = args["ties"][m]
    metrics = lambda w, ss=ss, y=y, t=ties: ev.group_metrics(
      ss, y, w, thr, True, t
    )
    in_group = {g: c * (a == g).astype(ss.dtype) for g in GROUPS}
    by_group = {g: metrics(in_group[g]) for g in GROUPS}
    for k in ev.METRICS:
      out[f"{m}/group0/{k}"] = by_group[0][k]
      out[f"{m}/group1/{k}"] = by_group[1][k]
      out[f"{m}/disparity/{k}"] = by_group[1][k] - by_group[0][k]
    for v, pv in {**args["p_a"], "R": args["p_r"][m]}.items():
      pv = pv[rows]
      for g in GROUPS:
        pg = pv if g == 1 else 1 - pv
        t = ev.t_statistic(
          ss, y, a, g, pg, thr, True, ties, counts=c, own=by_group[g]
        )
        for k in ev.METRICS:
          out[f"{m}/T{g}({v})/{k}"] = t[k]
    for g in GROUPS:
      w = in_group[g]
      out[f"{m}/calibration/group{g}"] = ev.calibration_in_the_large(ss, y, w)
      if args["ipw"] is not None or args["ipw_p"] is not None:
        # "selected": these rows weighted by 1/P(S | .); "population": the
        # model trained with those weights, scored on these rows.
        sw = ss if args["ipw_p"] is None else args["ipw_p"][m][rows]
        ww = w if args["ipw"] is None else w * args["ipw"][rows]
        out[f"{m}/calibration_ipw/group{g}"] = ev.calibration_in_the_large(
          sw, y, ww
        )
      out[f"{m}/group{g}_log_loss_rows"] = by_group[g]["log_loss"]
  for g in GROUPS:
    out[f"relative/group{g}/log_loss"] = out.pop(
      f"xa/group{g}_log_loss_rows"
    ) - out.pop(f"x/group{g}_log_loss_rows")
  return out


@functools.partial(jax.jit, static_argnums=(0, 1))
def _bootstrap_args(
  degree: int, folds: int, scores: dict, y, a, x, fit
) -> dict:
  """P(A = 1 | V), fitted once (not per resample); each score's order.

  As the official notebooks: P(A | X) and P(A | Y) are fitted on the
  training rows `fit` (dict x, y, a; None: in sample on these rows), and
  P(A | R) out of sample on these rows (`folds`-fold cross-fitting, the
  official cross_val_predict), with R each model's own score, R = logit f
  (evaluate.py): T(R) of f(X) weights on f(X)'s score, of f(X, A) on its.
  """
  own = lambda v: None if fit is None else (fit[v], fit["a"])
  p_a = {"Y": ev.group_probability(y, a, "binary", fit=own("y"))}
  if x is not None:
    p_a["X"] = ev.group_probability(x, a, "poly", degree, fit=own("x"))
  p_r = {}
  for m, s in scores.items():
    s = jnp.clip(s, 1e-7, 1 - 1e-7)
    r = jnp.log(s) - jnp.log1p(-s)
    p_r[m] = ev.group_probability(r, a, "poly", degree, folds=folds)
  order = {m: jnp.argsort(s) for m, s in scores.items()}
  return {
    "p": scores,
    "order": order,
    "ties": {m: ev.tie_bounds(p[order[m]]) for m, p in scores.items()},
    "y": y,
    "a": a,
    "p_a": p_a,
    "p_r": p_r,
  }


def evaluate(
  config,
  scores: dict,
  y,
  a,
  x=None,
  ipw=None,
  key=None,
  ipw_scores=None,
  fit=None,
) -> dict:
  """Bootstrap every statistic of the scores; flat keys 'model/stat/metric'.

  `fit`: the training rows (dict x, y, a) P(A | X) and P(A | Y) are fitted
  on; None fits them on these rows.

  Calibration after 1/P(S | .) weighting: of `scores` on these rows
  weighted by `ipw`, or of `ipw_scores` (models trained with those weights).
  """
  y = np.asarray(y, np.int32)
  a = np.asarray(a, np.int32)
  n = y.shape[0]
  for p in scores.values():
    ev.check_inputs(p, y, a, ipw)
  args = _bootstrap_args(config.degree, config.folds, scores, y, a, x, fit)
  args["ipw"] = None if ipw is None else jnp.asarray(ipw)
  args["ipw_p"] = ipw_scores
  args["threshold"] = jnp.asarray(config.threshold, jnp.float32)
  if key is None:
    key = rng.stream(rng.root_key(config.seed), "bootstrap")
  flat = ev.bootstrap(
    _statistic,
    n,
    key,
    config.resamples,
    args=args,
    level=config.level,
    by="counts",
  )
  nested = {}
  for k, v in flat.items():
    node = nested
    parts = k.split("/")
    for part in parts[:-1]:
      node = node.setdefault(part, {})
    node[parts[-1]] = v
  return nested


def run_setting(config, name, key) -> dict:
  st, train, evald = draw(config, name, rng.stream(key, "data"))
  scores = models(config, st, train, evald)
  ipw = ipw_p = None
  if st.selection != "none" and config.selection_eval == "population":
    ipw_p = models(config, st, train, evald, 1.0 / train["p_s"])
  elif st.selection != "none":
    ipw = 1.0 / evald["p_s"]
  res = evaluate(
    config,
    scores,
    evald["y"],
    evald["a"],
    evald["x"],
    ipw,
    key=rng.stream(key, "bootstrap"),
    ipw_scores=ipw_p,
    fit={k: train[k] for k in ("x", "y", "a")},
  )
  res["sizes"] = {
    "train": int(len(train["y"])),
    "eval": int(len(evald["y"])),
    "group1_fraction": float(np.mean(evald["a"])),
  }
  return res


def forest_figure(path, results, margin) -> None:
  """Each statistic's point estimate and its interval, drawn as given.

  A percentile interval need not contain the point estimate (a skewed
  statistic, few resamples): the interval is drawn from lo to hi as it is,
  and a point outside it is drawn hollow, never as a negative error bar.
  """
  from experiments._plot import plt

  names = [n for n in results if n != "margin"]
  stats = ("disparity", "T1(X)", "T1(Y)", "T1(R)")
  metrics = (("xa", "log_loss"), ("x", "recall"))
  fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(names) * 4 + 1))
  for ax, (model, metric) in zip(axes, metrics):
    rows, labels = 0, []
    for n in names:
      for j, s in enumerate(stats):
        v = results[n][model].get(s, {}).get(metric)
        if v is not None:  # T1(X) is absent for a CSV without x.
          inside = v["lo"] <= v["mean"] <= v["hi"]
          ax.hlines(rows, v["lo"], v["hi"], color=f"C{j}", lw=1.2)
          ax.plot(
            v["mean"],
            rows,
            "o",
            color=f"C{j}",
            mfc=f"C{j}" if inside else "white",
            ms=3,
          )
        labels.append(f"{n}: {s}")
        rows += 1
    ax.axvline(0, color="k", lw=0.8)
    ax.axvspan(-margin, margin, color="gray", alpha=0.15)
    ax.set_yticks(range(rows), labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_title(
      f"f({'X, A' if model == 'xa' else 'X'}) {metric}: 95% CI "
      "(hollow: point outside its interval)",
      fontsize=9,
    )
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def run(config, workdir) -> dict:
  check_config(config)
  # The user's CSV is read and checked first, before minutes of simulation
  # and before the workdir is written (a config.json naming a bad csv_path
  # would refuse the corrected rerun).
  data = None
  if config.csv_path:
    data = ev.load_csv(
      config.csv_path,
      dict(config.csv_columns),
      tuple(config.csv_group_values),
    )
  train_lib.prepare_run(workdir, config)
  results = {}
  root = rng.root_key(config.seed)
  sweep = train_lib.Sweep(len(config.settings), name="disaggregated_eval")
  for name in config.settings:
    with sweep.run(name):
      results[name] = run_setting(config, name, rng.stream(root, name))
    d = results[name]["xa"]["disparity"]["log_loss"]
    t = results[name]["xa"]["T1(X)"]["log_loss"]
    logging.info(
      "%s: log-loss disparity %.4f [%.4f, %.4f], T1(X) %.4f [%.4f, %.4f]",
      name,
      d["mean"],
      d["lo"],
      d["hi"],
      t["mean"],
      t["lo"],
      t["hi"],
    )
  if data is not None:
    scores = {"xa": data["p"], "x": data["p"]}
    results["csv"] = evaluate(
      config, scores, data["y"], data["a"], data.get("x")
    )
    d = results["csv"]["xa"]["disparity"]["log_loss"]
    logging.info(
      "%s (%d rows): log-loss disparity %.4f [%.4f, %.4f]",
      config.csv_path,
      len(data["y"]),
      d["mean"],
      d["lo"],
      d["hi"],
    )
  results["margin"] = config.margin
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(
    forest_figure, os.path.join(workdir, "forest.png"), results, config.margin
  )
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
