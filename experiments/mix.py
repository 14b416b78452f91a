"""MIX: multi-view time-frequency explanations of a time-series classifier.

Tran et al., "MIX: multi-view time-frequency explanations", NeurIPS 2025 (no
official code). Per dataset (a planted sine-burst task; GunPoint and
ItalyPowerDemand from the UCR files bundled in sktime) a small flax 1-D CNN
is trained on the shared runtime; then for test series (explaining the
predicted class's probability):

- every Haar view r in config.levels is explained by IGV and by OSIGV
  (`lib.explain.views`; `config.osigv_mode` picks OSIGV's segment score:
  "sum" (default, the reported numbers) sums each window's pointwise IGV
  attributions, which satisfies the spec's oracle 4 (L = s gives the sum of
  IGV over each segment); "segment_ig" is the spec's inferred SIG-style
  reading, the IG of the window as a group along a path that moves only
  that window, `explain.segment_ig`; the two agree for a model additive in
  the view's coefficients); the best (view, method) is the one with the lowest
  deletion AUC on the first half of the explained series (view selection);
- on the other half, the best view is compared with time-domain IG (view 0
  IGV) and a random ranking: deletion AUC, insertion AUC, top-k robustness
  under small noise and (synthetic) localisation precision of the planted
  window, paired per series with 95 % t intervals.

Then, on the scoring half, the cross-view refinement (`lib.explain.refine`,
rules inferred): every other view r is re-explained by KIGV with the keystone
taken from the best view's top coefficients and scored against its own IGV on
deletion AUC; and a greedy selection over the top coefficients of every view
(time supports, a budget of k time points) is compared with deleting the k
top time points of the best view, of time-domain IG and of a random ranking.
The greedy search queries the model (C candidates per round); the rankings
do not, so it is an upper reference as much as a competitor.

Choosing the view on one half and scoring on the other keeps the selection
from flattering MIX.

Run: python -m experiments.mix --config configs/mix.py:quick --workdir runs/mix
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import explain
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import stats
from lib.core import tree as tree_lib

DATASETS = ("synthetic",) + explain.data.UCR
# OSIGV's segment score: "sum" of IGV over the window (oracle 4), or
# "segment_ig", the window's group IG (the spec's inferred SIG reading).
OSIGV_MODES = ("sum", "segment_ig")


def check_config(config) -> None:
  _checks.names(config.datasets, DATASETS, "config.datasets")
  _checks.integers(config.levels, "config.levels", minimum=0)
  errors.check(
    0 in config.levels,
    errors.ConfigError,
    f"config.levels={tuple(config.levels)} must include 0 (time-domain IG "
    "is the baseline)",
  )
  _checks.integer(config.window, "config.window")
  _checks.integer(config.stride, "config.stride")
  errors.check(
    config.stride <= config.window,
    errors.ConfigError,
    f"config.stride={config.stride} > config.window={config.window} leaves "
    "points in no OSIGV window",
  )
  errors.check_one_of(config.osigv_mode, OSIGV_MODES, "config.osigv_mode")
  _checks.integer(config.ig_steps, "config.ig_steps")
  _checks.integer(config.num_explain, "config.num_explain", minimum=4)
  _checks.fraction(config.top_fraction, "config.top_fraction")
  _checks.number(config.robust_noise, "config.robust_noise", at_least=0)
  _checks.integer(config.greedy_candidates, "config.greedy_candidates")
  _checks.integer(config.greedy_steps, "config.greedy_steps")
  errors.check_one_of(
    config.budget_rule, ("signed", "abs"), "config.budget_rule"
  )
  _checks.number(config.learning_rate, "config.learning_rate", above=0)
  _checks.integer(config.deletion_points, "config.deletion_points", minimum=2)
  if "synthetic" in config.datasets:
    s = config.synthetic
    _checks.integer(s.num_train, "config.synthetic.num_train", minimum=2)
    # The explained series: the first half picks the view, the rest score.
    _checks.integer(s.num_test, "config.synthetic.num_test", minimum=4)
    _checks.integer(s.start, "config.synthetic.start", minimum=0)
    _checks.integer(s.width, "config.synthetic.width")
    _checks.integer(s.length, "config.synthetic.length")
    errors.check(
      s.start + s.width <= s.length,
      errors.ConfigError,
      f"config.synthetic.start + width = {s.start + s.width} exceeds "
      f"config.synthetic.length={s.length}",
    )
    _checks.multiple_of(
      s.length, 2 ** max(config.levels), "config.synthetic.length"
    )
    _checks.number(s.cycles, "config.synthetic.cycles", above=0)
    _checks.number(s.noise, "config.synthetic.noise", at_least=0)
  errors.check(
    len(config.model.channels) == len(config.model.kernel_sizes),
    errors.ConfigError,
    "config.model.channels and config.model.kernel_sizes differ in length",
  )


def load(config, name):
  multiple = 2 ** max(config.levels)
  if name == "synthetic":
    s = config.synthetic
    x, y, window = explain.sine_burst(
      s.seed,
      s.num_train + s.num_test,
      s.length,
      s.start,
      s.width,
      s.cycles,
      s.noise,
    )
    n = s.num_train
    return (x[:n], y[:n]), (x[n:], y[n:]), 2, window
  (xt, yt), (xs, ys), c = explain.load_ucr(name, multiple)
  return (xt, yt), (xs, ys), c, None


def train_model(config, name, train, num_classes, workdir):
  model = models.CNN1D(
    tuple(config.model.channels), tuple(config.model.kernel_sizes), num_classes
  )
  tx = optax.adam(config.learning_rate)
  x, y = jnp.asarray(train[0]), jnp.asarray(train[1])

  def init_fn(key):
    params = model.init(key, x[0])
    return {"params": params, "opt": tx.init(params)}

  def loss_fn(params, data):
    logits = jax.vmap(lambda s: model.apply(params, s))(data["x"])
    return optax.softmax_cross_entropy_with_integer_labels(
      logits, data["y"]
    ).mean()

  def step_fn(state, data, key, step):
    del key, step
    loss, grad = jax.value_and_grad(loss_fn)(state["params"], data)
    updates, opt = tx.update(grad, state["opt"], state["params"])
    params = optax.apply_updates(state["params"], updates)
    gn = tree_lib.l2_norm(grad)
    return {"params": params, "opt": opt}, {"loss": loss, "grad_norm": gn}

  state, _ = train_lib.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=config.train,
    data={"x": x, "y": y},
    name=name,
  )
  return model, state["params"]


def predict(model, params, x):
  """The predicted class of every series x [N, n] (one jitted program)."""
  logits = jax.vmap(model.apply, (None, 0))
  return np.asarray(
    jax.jit(lambda p, x: jnp.argmax(logits(p, x), -1))(params, x)
  )


def explain_dataset(config, model, params, test, window):
  """Per-series attributions and metrics; returns the summary dict."""
  x_all = np.asarray(test[0][: config.num_explain])  # host: no eager slices
  if len(x_all) < config.num_explain:
    logging.warning(
      "num_explain=%d, but the test split has %d series: explaining all of "
      "them (the first half picks the view, the second half is scored)",
      config.num_explain,
      len(x_all),
    )
  for s in x_all:
    explain.check_series(s, max(config.levels))
  n = x_all.shape[1]
  k = max(1, int(round(config.top_fraction * n)))
  cls = predict(model, params, x_all)
  baseline = np.zeros(n, x_all.dtype)
  root = rng.root_key(config.train.seed)
  noise = config.robust_noise * jax.random.normal(
    rng.stream(root, "robust_noise"), x_all.shape, x_all.dtype
  )
  rand_scores = jax.random.uniform(
    rng.stream(root, "random_scores"), x_all.shape
  )
  points = config.deletion_points

  def osigv(f, x, level, a):
    """OSIGV point scores in view `level` (`a`: x's IGV attributions)."""
    if config.osigv_mode == "segment_ig":
      return explain.osigv_segment_ig(
        f, x, baseline, level, config.window, config.stride, config.ig_steps
      )
    return explain.osigv(a, config.window, config.stride)

  def per_series(x, c, eps, rnd):
    f = lambda s: jax.nn.softmax(model.apply(params, s))[c]
    out = {}
    for level in config.levels:
      a = explain.view_ig(f, x, baseline, level, config.ig_steps)
      a_noisy = explain.view_ig(f, x + eps, baseline, level, config.ig_steps)
      methods = {
        "igv": (a, a_noisy),
        "osigv": (osigv(f, x, level, a), osigv(f, x + eps, level, a_noisy)),
      }
      for m, (sc, sc_noisy) in methods.items():
        key = f"{m}{level}"
        out[f"attr/{key}"] = sc
        out[f"deletion/{key}"] = explain.deletion_auc(
          f, x, baseline, sc, level, points
        )
        out[f"insertion/{key}"] = explain.insertion_auc(
          f, x, baseline, sc, level, points
        )
        out[f"robustness/{key}"] = explain.jaccard_top_k(sc, sc_noisy, k)
        if window is not None:
          t = explain.to_time(sc, level)
          out[f"localisation/{key}"] = explain.localisation_precision(
            t, jnp.asarray(window), int(window.sum())
          )
    out["deletion/random"] = explain.deletion_auc(
      f, x, baseline, rnd, 0, points
    )
    out["insertion/random"] = explain.insertion_auc(
      f, x, baseline, rnd, 0, points
    )
    if window is not None:
      out["localisation/random"] = explain.localisation_precision(
        rnd, jnp.asarray(window), int(window.sum())
      )
    return out

  per = jax.jit(jax.vmap(per_series))(x_all, cls, noise, rand_scores)
  per = {k2: np.asarray(v) for k2, v in per.items()}
  half = x_all.shape[0] // 2
  candidates = [f"{m}{lv}" for lv in config.levels for m in ("igv", "osigv")]
  sel = {c: float(per[f"deletion/{c}"][:half].mean()) for c in candidates}
  best = min(sel, key=sel.get)
  ev = slice(half, None)

  # mean, lo, hi and the per-series values ("seeds": the report's samples).
  band = stats.band

  summary = {
    "best_view": best,
    "selection_deletion": sel,
    "evaluated_series": int(x_all.shape[0] - half),
  }
  scored = np.arange(x_all.shape[0])[ev]
  # The planted burst is in the class-1 series alone: localisation is scored
  # on those (a class-0 series has no burst to find).
  carrying = scored[np.asarray(test[1][: x_all.shape[0]])[scored] == 1]
  for metric in ("deletion", "insertion", "robustness", "localisation"):
    if f"{metric}/{best}" not in per:
      continue
    rows = carrying if metric == "localisation" else scored
    mix, ig = per[f"{metric}/{best}"][rows], per[f"{metric}/igv0"][rows]
    summary[metric] = {
      "mix": band(mix),
      "time_ig": band(ig),
      "mix_minus_time_ig": band(mix - ig),
      "per_view": {
        c: float(per[f"{metric}/{c}"][rows].mean()) for c in candidates
      },
      "series": int(rows.size),
    }
    if f"{metric}/random" in per:
      rnd = per[f"{metric}/random"][rows]
      summary[metric]["random"] = band(rnd)
      summary[metric]["mix_minus_random"] = band(mix - rnd)
  # Deletion: lower is better; report the gain time_ig - mix (> 0 = MIX wins).
  d = summary["deletion"]
  d["gain_over_time_ig"] = band(
    per["deletion/igv0"][ev] - per[f"deletion/{best}"][ev]
  )
  ref = refine(config, model, params, x_all[ev], cls[ev], per, best, ev, k)
  r_other = [lv for lv in config.levels if f"deletion/kigv{lv}" in ref]
  if r_other:
    gains = np.mean(
      [
        per[f"deletion/igv{lv}"][ev] - ref[f"deletion/kigv{lv}"]
        for lv in r_other
      ],
      axis=0,
    )
    summary["kigv"] = {
      "views": r_other,
      "gain_over_igv": band(gains),  # deletion igv_r - kigv_r (> 0: KIGV wins)
      "per_view": {
        f"kigv{lv}": float(ref[f"deletion/kigv{lv}"].mean()) for lv in r_other
      },
    }
  g = ref["budget/greedy"]
  rankings = ("best_view", "time_ig", "random")  # gain > 0: greedy wins
  summary["greedy"] = {
    "budget_points": k,
    "probability": {
      who: band(ref[f"budget/{who}"])
      for who in ("greedy",) + rankings + ("none",)
    },
    **{f"gain_over_{w}": band(ref[f"budget/{w}"] - g) for w in rankings},
    # Greedy against each ranking, paired by series (the claim); against the
    # per-series best of them (context: biased towards the rankings).
    "vs_rankings": stats.against_each(
      g, {w: ref[f"budget/{w}"] for w in rankings}, sign=-1.0
    ),
    "gain_over_best_ranking": band(
      np.min([ref[f"budget/{w}"] for w in rankings], axis=0) - g
    ),
    # What searching across the views adds to the same search in time.
    "time_greedy_probability": band(ref["budget/greedy_time"]),
    "gain_over_time_greedy": band(ref["budget/greedy_time"] - g),
    "rounds_used": float(np.mean(ref["greedy_rounds"])),
  }
  summary["_example"] = {
    "x": x_all[half].tolist(),
    "class": int(cls[half]),
    "time_scores": {
      f"igv{lv}": (  # explain.to_time, in numpy: no eager program
        np.abs(per[f"attr/igv{lv}"][half]) @ np.abs(explain.haar_matrix(n, lv))
      ).tolist()
      for lv in config.levels
    },
  }
  return summary


def refine(config, model, params, x_ev, cls_ev, per, best, ev, k):
  """KIGV of the other views and greedy selection on the scoring half."""
  best_level = int(best.removeprefix("osigv").removeprefix("igv"))
  n = x_ev.shape[1]
  baseline = np.zeros(n, x_ev.dtype)
  best_scores = jnp.asarray(per[f"attr/{best}"][ev])
  igv = {lv: jnp.asarray(per[f"attr/igv{lv}"][ev]) for lv in config.levels}
  rnd = jax.random.uniform(
    rng.stream(rng.root_key(config.train.seed), "greedy_random"), x_ev.shape
  )

  def one(x, c, best_sc, igv_sc, rnd_sc):
    return explain.refine_series(
      lambda s: jax.nn.softmax(model.apply(params, s))[c],
      x,
      baseline,
      best_sc,
      best_level,
      igv_sc,
      rnd_sc,
      levels=config.levels,
      budget=k,
      candidates=min(config.greedy_candidates, n),
      greedy_steps=config.greedy_steps,
      ig_steps=config.ig_steps,
      deletion_points=config.deletion_points,
      budget_rule=config.budget_rule,
    )

  res = jax.jit(jax.vmap(one))(x_ev, cls_ev, best_scores, igv, rnd)
  return {key: np.asarray(v) for key, v in res.items()}


def heat_strips(path, examples, levels) -> None:
  """One example series per dataset with each view's attribution in time."""
  from experiments._plot import plt

  names = list(examples)
  fig, axes = plt.subplots(
    len(levels) + 1,
    len(names),
    figsize=(4.5 * len(names), 1.0 + 0.6 * len(levels)),
    squeeze=False,
    gridspec_kw={"height_ratios": [2.5] + [1] * len(levels)},
  )
  for j, name in enumerate(names):
    ex = examples[name]
    x = np.asarray(ex["x"])
    axes[0, j].plot(x, "k", lw=1)
    axes[0, j].set_xlim(0, len(x) - 1)
    axes[0, j].set_title(f"{name} (class {ex['class']})", fontsize=9)
    axes[0, j].set_xticks([])
    for i, lv in enumerate(levels):
      ax = axes[i + 1, j]
      t = np.asarray(ex["time_scores"][f"igv{lv}"])[None, :]
      ax.imshow(t, aspect="auto", cmap="magma", interpolation="nearest")
      ax.set_yticks([0], [f"view {lv}"], fontsize=7)
      ax.set_xticks([])
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def figure(path, results) -> None:
  from experiments._plot import plt

  names = list(results)
  fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
  for ax, metric in zip(axes, ("deletion", "insertion", "robustness")):
    width = 0.25
    for j, who in enumerate(("mix", "time_ig", "random")):
      vals = [
        results[n][metric].get(who, {}).get("mean", np.nan) for n in names
      ]
      ax.bar(np.arange(len(names)) + j * width, vals, width, label=who)
    ax.set_xticks(np.arange(len(names)) + width, names, fontsize=8)
    better = "lower" if metric == "deletion" else "higher"
    ax.set_title(f"{metric} ({better} is better)")
    ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def run(config, workdir) -> dict:
  check_config(config)
  # Every dataset loads before the workdir is written: a missing optional
  # package (UCR needs sktime) is refused before any training.
  data = {name: load(config, name) for name in config.datasets}
  train_lib.prepare_run(workdir, config)
  results, examples = {}, {}
  sweep = train_lib.Sweep(len(config.datasets), name="mix")
  for name in config.datasets:
    with sweep.run(name):
      train, test, num_classes, window = data[name]
      model, params = train_model(
        config, name, train, num_classes, os.path.join(workdir, name)
      )
      acc = float(np.mean(predict(model, params, test[0]) == test[1]))
      res = explain_dataset(config, model, params, test, window)
      res["test_accuracy"] = acc
      examples[name] = res.pop("_example")
      results[name] = res
      logging.info(
        "%s: accuracy %.3f, best view %s, deletion gain over time IG %.4f "
        "[%.4f, %.4f]",
        name,
        acc,
        res["best_view"],
        res["deletion"]["gain_over_time_ig"]["mean"],
        res["deletion"]["gain_over_time_ig"]["lo"],
        res["deletion"]["gain_over_time_ig"]["hi"],
      )
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figure, os.path.join(workdir, "metrics.png"), results)
  train_lib.draw_figure(
    heat_strips,
    os.path.join(workdir, "heat_strips.png"),
    examples,
    config.levels,
  )
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
