"""SADL against its baselines at one tuning budget: the paper's comparison.

The paper (Sec. 4, Table 8; Sketch-SGD in App. Figs. 9-11) compares SADL
with compressed baselines at the same bytes per round. Here: sketched SGD
and FetchSGD (one of Table 8's), each at its run's sketch size, and
uncompressed distributed Adam as the bound. This module builds that
comparison as pure functions a sweep runs:

- `make_method`: one compared method by name (SADL, its eps = 1e-8 ablation
  of spec B.5, sketched SGD, FetchSGD, distributed Adam) at a traced lr;
- `quadratic_problem`: spec E.B's power-law quadratic, split over clients;
- `sweep_member`: ONE sweep member, every compared method (each at its own
  sketch size) at one lr rank and one seed, so a whole comparison is one
  vmapped program (`lib.train.run_sweep`): every method of a member sees the
  same round keys, sketches and mini-batches, and members that differ only
  in the lr share them too (the lr choice and the method comparison are
  paired by seed);
- `lr_scores`, `chosen_row`: the lr chosen by final train loss (mean over
  seeds; a diverged seed disqualifies its lr), reported with the whole grid;
- `paired`, `summarize_quadratic`, `summarize_mlp`: the claims' numbers,
  SADL against the best compressed baseline and against Adam.

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Sec. 4; Thm 2.2 and Cor. 2 for the
  dimension sweep; eps finding: spec B.5).
  Rothchild et al. "FetchSGD", ICML 2020 (the FetchSGD baseline).
"""

import itertools
import math
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import rng
from lib.core import stats
from lib.optim.sadl import baselines
from lib.optim.sadl import method as method_lib
from lib.optim.sadl import optimizer
from lib.optim.sadl import rounds

METHODS = (
  "sadl",
  "sadl_eps1e-8",
  "sadl_one_sketch",
  "sketched_sgd",
  "fetchsgd",
  "adam",
)
# SADL's readings, each compared with the baselines: Alg. 2's two
# half-sketches, and one full-b sketch into a plain Adam server.
SADL_VARIANTS = ("sadl", "sadl_one_sketch")
# What SADL is claimed to beat at the same bytes, and the uncompressed bound.
COMPRESSED_BASELINES = ("sketched_sgd", "fetchsgd")
UNCOMPRESSED = "adam"


def lr_key(name: str) -> str:
  """The lr grid a method uses: SADL's variants share SADL's."""
  return "sadl" if name.startswith("sadl") else name


def make_method(
  name: str,
  *,
  dim: int,
  sketch_size: int | None,
  learning_rate,
  hparams: Mapping,
  key: jax.Array,
) -> method_lib.Method:
  """One of the compared methods, `name` in `METHODS`.

  Args:
    name: the method.
    dim: model dimension d.
    sketch_size: b (ignored by uncompressed Adam).
    learning_rate: server lr (float or a traced scalar of a sweep).
    hparams: b1, b2, eps (SADL and Adam) and fetchsgd_rows.
    key: FetchSGD's hash-table key.

  Raises:
    ConfigError: an unknown name, or a sketch size the method refuses.
  """
  if name.startswith("sadl"):  # spec B.5: tiny eps degrades with d
    method = optimizer.sadl(
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=learning_rate,
      b1=hparams["b1"],
      b2=hparams["b2"],
      eps=1e-8 if name == "sadl_eps1e-8" else hparams["eps"],
      split_sketch=name != "sadl_one_sketch",
    )
    return method._replace(name=name)
  if name == "sketched_sgd":
    return baselines.sketched_sgd(
      dim=dim, sketch_size=sketch_size, learning_rate=learning_rate
    )
  if name == "fetchsgd":
    return baselines.fetchsgd(
      key,
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=learning_rate,
      rows=hparams["fetchsgd_rows"],
    )
  if name == UNCOMPRESSED:
    return baselines.distributed_adam(
      dim=dim,
      learning_rate=learning_rate,
      b1=hparams["b1"],
      b2=hparams["b2"],
      eps=hparams["eps"],
    )
  raise errors.ConfigError(f"unknown method {name!r}; known: {METHODS}")


class Problem(NamedTuple):
  """A federated training problem on flat (d,) parameters.

  Attributes:
    dim: d.
    data: the sweep's data: "clients", host arrays with a leading client
      axis (each client's data), and whatever `evaluate` reads.
    loss_fn: (params tree, batch) -> scalar loss.
    batch_fn: (one client's data, key) -> batch (jittable).
    unravel: flat (d,) vector -> params tree.
    init_params: seed index (traced int) -> flat (d,) initial parameters.
    evaluate: (flat params, data) -> dict of scalars, `data` the sweep's.
    local_steps: K local SGD steps per round.
    client_lr: the clients' SGD step.
  """

  dim: int
  data: Any
  loss_fn: Callable
  batch_fn: Callable
  unravel: Callable
  init_params: Callable
  evaluate: Callable
  local_steps: int
  client_lr: float


def quadratic_problem(
  dim: int,
  *,
  num_clients: int,
  exponent: float,
  target_spread: float,
  seed: int,
) -> Problem:
  """Spec E.B's power-law quadratic L = 1/2 sum_i i^-exponent (x_i - t_i)^2.

  Client targets are 1 + spread * (noise - its mean over clients), so the
  mean client loss is 1/2 sum lam (x - 1)^2 + const and its excess over
  that minimum, relative to x = 0 (`loss_ratio`, L_T / L_0), is spec E.B's
  single-client ratio. The intrinsic dimension sum(lam) / max(lam) stays
  ~2.6 whatever d: Thm 2.2 predicts a rate free of d at a fixed sketch size.
  One local step at client lr 1 makes the mean delta the exact gradient.
  """
  lam = np.arange(1, dim + 1, dtype=np.float64) ** -exponent
  noise = np.random.default_rng(seed).normal(size=(num_clients, dim))
  targets = 1.0 + target_spread * (noise - noise.mean(0))
  lam32 = lam.astype(np.float32)
  excess0 = float(0.5 * lam.sum())

  def loss_fn(x, target):
    return 0.5 * jnp.sum(lam32 * (x - target) ** 2)

  def evaluate(x, data):
    del data
    return {"loss_ratio": 0.5 * jnp.sum(lam32 * (x - 1.0) ** 2) / excess0}

  return Problem(
    dim=dim,
    data={"clients": targets.astype(np.float32)},
    loss_fn=loss_fn,
    batch_fn=lambda data, key: data,
    unravel=lambda x: x,
    init_params=lambda seed: jnp.zeros(dim, jnp.float32),
    evaluate=evaluate,
    local_steps=1,
    client_lr=1.0,
  )


class Run(NamedTuple):
  """One compared method of a sweep: its `tag`, method name, b and lr grid."""

  tag: str
  method: str
  sketch_size: int | None
  lrs: tuple


def sweep_member(
  runs, *, problem: Problem, mesh, num_clients: int, hparams, seed: int
):
  """(init_one, step_one, eval_one) of one member for `lib.train.run_sweep`.

  A member is one lr rank and one seed (settings `lr_index` and `seed`) of
  every run in `runs`: run r trains `make_method(r.method)` at lr
  `r.lrs[lr_index]` from `problem.init_params(seed)`, one federated round
  (`rounds.make_round_fn`) per step. The round key is the step key folded
  with the seed, so the sketches R_t and the clients' mini-batches are the
  same for every method and lr of a seed. A run whose loss or parameters go
  non-finite keeps training; its `nonfinite_round` (0: finite so far) keeps
  the first round where it did, and is evaluated with the run's metrics as
  "<tag>/<metric>".

  Args:
    runs: the `Run`s, every one with the same number of lrs.
    problem: the `Problem`.
    mesh: the clients mesh.
    num_clients: C.
    hparams: see `make_method`.
    seed: the config seed; FetchSGD's hash table comes from its stream.
  """

  def methods(lr_index):
    key = rng.stream(rng.root_key(seed), "fetchsgd_table")
    out = {}
    for run in runs:
      lr = jnp.asarray(np.asarray(run.lrs, np.float32))[lr_index]
      out[run.tag] = make_method(
        run.method,
        dim=problem.dim,
        sketch_size=run.sketch_size,
        learning_rate=lr,
        hparams=hparams,
        key=key,
      )
    return out

  def init_one(key, setting):
    del key  # the initial parameters are the seed's, whatever the run
    params = problem.init_params(setting["seed"])
    return {
      tag: {
        "state": rounds.init_state(method, params),
        "nonfinite_round": jnp.zeros([], jnp.int32),
      }
      for tag, method in methods(setting["lr_index"]).items()
    }

  def step_one(member, batch, key, step, setting):
    # The round key comes from the step key: resume is bitwise.
    seed_key = jax.random.fold_in(key, setting["seed"])
    new, metrics = {}, {}
    for tag, method in methods(setting["lr_index"]).items():
      round_fn = rounds.make_round_fn(
        method,
        loss_fn=problem.loss_fn,
        batch_fn=problem.batch_fn,
        unravel=problem.unravel,
        mesh=mesh,
        num_clients=num_clients,
        local_steps=problem.local_steps,
        client_lr=problem.client_lr,
      )
      old = member[tag]["state"]
      # The step (unbatched) counts the rounds: one R_t per seed and round.
      state = rounds.RoundState(step, old.params, old.server)
      state, out = round_fn(state, batch["clients"], seed_key)
      finite = jnp.isfinite(out["loss"]) & jnp.all(jnp.isfinite(state.params))
      was = member[tag]["nonfinite_round"]
      went = jnp.where((was == 0) & ~finite, state.round, was)
      new[tag] = {"state": state, "nonfinite_round": went}
      metrics[f"{tag}/loss"] = out["loss"]
    return new, metrics

  def eval_one(member, data, setting):
    del setting
    out = {}
    for tag, m in member.items():
      for k, v in problem.evaluate(m["state"].params, data).items():
        out[f"{tag}/{k}"] = v
      out[f"{tag}/nonfinite_round"] = m["nonfinite_round"]
    return out

  return init_one, step_one, eval_one


def lr_scores(final, nonfinite):
  """Mean final metric over seeds per lr; +inf where a seed went non-finite.

  Args:
    final: [lrs, seeds] final values of the selection metric (lower wins).
    nonfinite: [lrs, seeds] first non-finite round, 0 for a finite run.

  Returns:
    (scores [lrs], ok [lrs, seeds]): an lr with a diverged seed scores +inf,
    so it loses to any lr whose seeds all stayed finite.
  """
  means, ok = stats.mean_over_seeds(
    np.asarray(final, np.float64), diverged=np.asarray(nonfinite) != 0
  )
  return np.where(np.isnan(means), np.inf, means), ok


def chosen_row(index, *, lrs, scores, ok, nonfinite, metric: str) -> dict:
  """The chosen lr and the whole grid, as results.json reports a method.

  Args:
    index: the chosen lr's index (`lib.train.select_best` of the scores), or
      None when every lr diverged: the method is then reported diverged at
      the lr that stayed finite longest.
    lrs, scores, ok, nonfinite: the grid and `lr_scores`'s outputs.
    metric: the selection metric's name in the `sweep` entries.

  Returns:
    {"index", "lr", "lrs", "diverged", "diverged_round" (the chosen lr's
    first non-finite round, or None), "best_at_edge" (the smallest or
    largest lr of the grid), "sweep": [{"lr", metric, "finite_fraction",
    "nonfinite_rounds"}]}.
  """
  went = np.asarray(nonfinite, np.int64)
  diverged = index is None
  if diverged:  # the lr that survived longest (0 = never went non-finite)
    survived = np.where(went == 0, np.iinfo(np.int64).max, went).min(1)
    index = int(np.argmax(survived))
  first = [int(r) for r in went[index] if r > 0]
  return {
    "index": index,
    "lr": float(lrs[index]),
    "lrs": list(lrs),
    "diverged": diverged,
    "diverged_round": min(first) if first else None,
    "best_at_edge": len(lrs) > 1 and index in (0, len(lrs) - 1),
    "sweep": [
      {
        "lr": float(lr),
        metric: float(scores[i]),
        "finite_fraction": float(ok[i].mean()),
        "nonfinite_rounds": [int(r) for r in went[i]],
      }
      for i, lr in enumerate(lrs)
    ],
  }


def describe(run: Run, *, dim: int, hparams, seed: int) -> dict:
  """A run's bytes_per_round and compression; checks its sketch size.

  The method is built under `jax.eval_shape`, so checking a config runs no
  device op (FetchSGD draws its hash table when it is built).

  Raises:
    ConfigError: a sketch size the method refuses at this d.
  """
  out = {}

  def build():
    key = rng.stream(rng.root_key(seed), "fetchsgd_table")
    method = make_method(
      run.method,
      dim=dim,
      sketch_size=run.sketch_size,
      learning_rate=1.0,
      hparams=hparams,
      key=key,
    )
    out.update(
      bytes_per_round=method.bytes_per_round, compression=method.compression
    )
    return key

  jax.eval_shape(build)
  return out


def method_rows(result, runs, *, metric, select, dim, hparams, seed) -> dict:
  """Each run's row: its lr choice, per-seed finals and mean curves.

  Args:
    result: the `lib.train.SweepResult` of `sweep_member`'s sweep (settings
      `lr_index` x `seed`).
    runs: its `Run`s.
    metric: the evaluation the lr is chosen by (lower wins).
    select: `lib.train.select_best`.
    dim, hparams, seed: as for `describe`.

  Returns:
    tag -> `chosen_row` (less "index") with "per_seed" (eval -> [seeds] at
    the chosen lr), "curves" (eval -> mean over seeds at each evaluation),
    bytes_per_round and compression.
  """
  rows = {}
  for run in runs:
    keys = sorted(
      k.split("/")[-1]
      for k in result.evals
      if k.startswith(f"{run.tag}/") and not k.endswith("/nonfinite_round")
    )
    final = {k: result.final(f"{run.tag}/{k}") for k in keys}
    went = result.final(f"{run.tag}/nonfinite_round").astype(np.int64)
    scores, ok = lr_scores(final[metric], went)
    row = chosen_row(
      select(scores, diverged=~ok.all(1)),
      lrs=run.lrs,
      scores=scores,
      ok=ok,
      nonfinite=went,
      metric=metric,
    )
    i = row.pop("index")
    # [seeds, evals] at the chosen lr, averaged over seeds row by row.
    seeds = {
      k: np.ascontiguousarray(result.trajectory(f"{run.tag}/{k}")[:, i].T)
      for k in keys
    }
    row.update(
      per_seed={k: final[k][i].tolist() for k in keys},
      curves={k: v.mean(0).tolist() for k, v in seeds.items()},
      **describe(run, dim=dim, hparams=hparams, seed=seed),
    )
    rows[run.tag] = row
  return rows


def paired(ours, theirs, *, level: float = 0.95) -> dict:
  """ours - theirs (higher is better) paired by seed, with a t interval.

  A seed where a side is not finite counts as that side's worst outcome
  (-inf); the comparator's finite fraction is reported, so a claim against
  a diverged comparator is refused. With one seed, or a non-finite
  difference, lo/hi are -inf/+inf (no interval).
  """
  ours = np.asarray(ours, float)
  theirs = np.asarray(theirs, float)
  ours = np.where(np.isfinite(ours), ours, -np.inf)
  theirs = np.where(np.isfinite(theirs), theirs, -np.inf)
  with np.errstate(invalid="ignore"):
    out = stats.paired_difference(ours, theirs, level)
  point, lo, hi = out["point"], out["lo"], out["hi"]
  if math.isnan(lo):
    lo, hi = point - math.inf, point + math.inf
  return {
    "point": point,
    "lo": lo,
    "hi": hi,
    "per_seed": out["by_seed"],
    "n": len(out["by_seed"]),
    "level": level,
    "comparator_finite_fraction": float(np.mean(np.isfinite(theirs))),
  }


def _best_of(rows: dict, names, key: str, *, higher_is_better: bool):
  """Name of the best of `names` in `rows` by `key` (diverged counts worst)."""
  present = [n for n in names if n in rows]
  if not present:
    return None

  def score(n):
    v = float(rows[n][key])
    if rows[n]["diverged"] or not math.isfinite(v):
      return -math.inf
    return v if higher_is_better else -v

  return max(present, key=score)


def summarize_quadratic(quad: dict, dims) -> dict:
  """The dimension sweep's claims: SADL over d, vs Adam and the baselines.

  Args:
    quad: "d<d>" -> method -> its row ("loss_ratio", "diverged",
      "compression").
    dims: the dimensions, smallest first.

  Returns:
    sadl_ratio_max, sadl_compression_min, dim_growth (per method, L_T/L_0 at
    the largest d over the smallest), sadl_dim_growth, sadl_gap_to_adam_max,
    adam_diverged and vs_best_baseline (SADL minus the best compressed
    baseline at each d, worst over d, with the baselines' finite fraction);
    one_sketch_vs_best_baseline the same for `sadl_one_sketch` where it ran.
    Where the rows hold "per_seed" L_T/L_0 (one per round-key seed), the
    run-against-run rows get their band (`_worst_band`): vs_best_baseline's
    "lo"/"hi"/"per_seed" (SADL minus every baseline at every d, paired by
    seed) and sadl_gap_to_adam ("point" = sadl_gap_to_adam_max).
  """
  first, last = f"d{dims[0]}", f"d{dims[-1]}"
  keys = [f"d{d}" for d in dims]
  summary = {}
  if not all("sadl" in quad[k] for k in keys):
    return summary
  summary["sadl_ratio_max"] = max(quad[k]["sadl"]["loss_ratio"] for k in keys)
  summary["sadl_compression_min"] = min(
    quad[k]["sadl"]["compression"] for k in keys
  )
  with np.errstate(divide="ignore", invalid="ignore"):
    summary["dim_growth"] = {
      name: float(
        np.float64(quad[last][name]["loss_ratio"])
        / quad[first][name]["loss_ratio"]
      )
      for name in quad[first]
    }
  summary["sadl_dim_growth"] = summary["dim_growth"]["sadl"]
  if all(UNCOMPRESSED in quad[k] for k in keys):
    summary["sadl_gap_to_adam_max"] = max(
      quad[k]["sadl"]["loss_ratio"] - quad[k][UNCOMPRESSED]["loss_ratio"]
      for k in keys
    )
    summary["adam_diverged"] = any(
      quad[k][UNCOMPRESSED]["diverged"] for k in keys
    )
    summary["sadl_gap_to_adam"] = _worst_band(
      {k: (quad[k]["sadl"], quad[k][UNCOMPRESSED]) for k in keys}
    )
  best = {
    k: _best_of(
      quad[k], COMPRESSED_BASELINES, "loss_ratio", higher_is_better=False
    )
    for k in keys
  }
  if all(best.values()):
    for ours in SADL_VARIANTS:
      if not all(ours in quad[k] for k in keys):
        continue
      gaps = {
        k: quad[k][ours]["loss_ratio"] - quad[k][best[k]]["loss_ratio"]
        for k in keys
      }
      worst = max(gaps, key=gaps.get)
      ran = [n for n in COMPRESSED_BASELINES if n in quad[first]]
      finite = [not quad[k][n]["diverged"] for k in keys for n in ran]
      summary[_variant_prefix(ours) + "vs_best_baseline"] = {
        "point": gaps[worst],
        "at": worst,
        "comparator": best[worst],
        "best_baseline": best,
        "sadl_minus_best": gaps,
        "baselines": ran,
        "comparator_finite_fraction": float(np.mean(finite)),
      }
      band = _worst_band(
        {f"{k}/{n}": (quad[k][ours], quad[k][n]) for k in keys for n in ran}
      )
      summary[_variant_prefix(ours) + "vs_best_baseline"].update(
        {k: band[k] for k in ("lo", "hi", "per_seed") if k in band}
      )
  return summary


def _worst_band(pairs: dict) -> dict:
  """The claim "our L_T/L_0 is at most theirs in every pair" as one band.

  Args:
    pairs: label -> (our row, their row), rows with "per_seed" L_T/L_0
      (lower is better), paired by seed.

  Returns:
    {"point", "lo", "hi", "per_seed"}: ours minus theirs, worst (largest)
    over the pairs: `stats.against_every` of the pairs' `paired_difference`
    t intervals (theirs minus ours), turned back to ours minus theirs; the
    point equals the worst difference of the seed means. per_seed: label ->
    ours minus theirs by seed. A non-finite seed or a single seed leaves
    lo/hi NaN (no band); {} where a row has no per-seed values.
  """
  if not all("per_seed" in r for pair in pairs.values() for r in pair):
    return {}
  per, by_seed = {}, {}
  for label, (ours, theirs) in pairs.items():
    ours, theirs = (np.asarray(r["per_seed"], float) for r in (ours, theirs))
    with np.errstate(invalid="ignore"):
      per[label] = stats.paired_difference(theirs, ours)
    by_seed[label] = (ours - theirs).tolist()
  every = stats.against_every(per)
  return {
    "point": -every["point"],
    "lo": -every["hi"],
    "hi": -every["lo"],
    "per_seed": by_seed,
  }


def _variant_prefix(ours: str) -> str:
  """The summary keys' prefix of a SADL variant: "" for Alg. 2's SADL,
  "one_sketch_" for `sadl_one_sketch`."""
  return ours[len("sadl_") :] + "_" if ours != "sadl" else ""


def summarize_mlp(rows: dict, compressions) -> dict:
  """SADL's test accuracy vs Adam and vs every compressed baseline, by seed.

  Args:
    rows: tag ("sadl_10x", "fetchsgd_10x", "adam", ...) -> its row
      ("test_acc", "train_loss", "diverged", "per_seed": {"test_acc": [S]}).
    compressions: the ratios d / b.

  Returns:
    "vs_adam_<r>x": Adam minus SADL (`paired`), and "vs_best_baseline_<r>x":
    SADL minus each compressed baseline combined by `stats.against_every`
    (the point and hi of the strongest baseline, the lowest lo of all, and
    the baselines' finite fraction), named by "comparator"; the same with
    the prefix "one_sketch_" for `sadl_one_sketch` where it ran.
  """
  summary = {}
  for variant, r in itertools.product(SADL_VARIANTS, compressions):
    ours, prefix = f"{variant}_{r}x", _variant_prefix(variant)
    if ours not in rows:
      continue
    acc = rows[ours]["per_seed"]["test_acc"]
    if UNCOMPRESSED in rows:
      adam = rows[UNCOMPRESSED]
      adam_acc = np.asarray(adam["per_seed"]["test_acc"], float)
      gap = paired(adam_acc, acc)
      # Adam minus SADL: the comparator is Adam, so its finite fraction.
      gap["comparator_finite_fraction"] = float(
        0.0 if adam["diverged"] else np.mean(np.isfinite(adam_acc))
      )
      summary[f"{prefix}vs_adam_{r}x"] = gap
    tags = [f"{n}_{r}x" for n in COMPRESSED_BASELINES if f"{n}_{r}x" in rows]
    if not tags:
      continue
    per = {}
    for t in tags:
      if rows[t]["diverged"]:
        per[t] = {"diverged": True}
        continue
      per[t] = paired(acc, rows[t]["per_seed"]["test_acc"])
      # A baseline that diverged on some seed is never the beaten one.
      per[t]["diverged"] = per[t]["comparator_finite_fraction"] < 1
    vs = stats.against_every(per)
    if "best_baseline" in vs:
      best = per[vs["best_baseline"]]
      vs.update(n=best["n"], level=best["level"], per_seed=best["per_seed"])
    vs.update(
      comparator=vs.get("best_baseline"),
      baselines_test_acc={t: rows[t]["test_acc"] for t in tags},
      baselines_train_loss={t: rows[t]["train_loss"] for t in tags},
    )
    summary[f"{prefix}vs_best_baseline_{r}x"] = vs
  return summary
