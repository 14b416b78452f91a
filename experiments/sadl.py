r"""SADL vs sketched SGD, FetchSGD and uncompressed Adam on a clients mesh.

Clients are the devices of the `clients` axis of a `jax.make_mesh` mesh; each
round runs K local steps per client under `jax.shard_map` and averages the
messages with `lax.pmean` (lib/optim/sadl/rounds.py). A round is a step of
`lib.train.train`: every method is one training run in its own sub-workdir
(checkpointed, resumable bitwise, SIGTERM-safe), and every method gets the
same learning-rate budget: its grid of lrs (the same number for every
method) x seeds is one vmapped run (the round function under `vmap`), the lr
is chosen by final *train* loss (mean over seeds), and runs that went
non-finite are recorded with the round where they did (never dropped).

Two parts:
  (i) spec E.B's power-law quadratic dimension sweep: with eps = 1e-3, SADL's
      loss after T rounds does not grow with d at a fixed sketch size b
      (dimension-free rate, the paper's Thm 2.2 / Cor. 2), compared with the
      best compressed baseline and with uncompressed Adam at every d;
  (ii) an MLP on the bundled digits with 8 clients (IID or label-sharded):
      final loss / test accuracy against bytes sent per client, SADL against
      the best compressed baseline at each compression, paired by seed.
The paper's ResNet/ViT/BERT results need GPUs and days; they are out of CPU
reach and not claimed here.

Run: python -m experiments.sadl --config configs/sadl.py:quick --workdir runs/sadl
"""

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging
from jax.flatten_util import ravel_pytree

from experiments import _cli
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import stats as stats_lib
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.optim import sadl as sadl_lib

METHODS = ("sadl", "sadl_eps1e-8", "sketched_sgd", "fetchsgd", "adam")
# What SADL is claimed to beat at the same bytes, and the uncompressed bound.
COMPRESSED_BASELINES = ("sketched_sgd", "fetchsgd")
UNCOMPRESSED = "adam"

# ----------------------------------------------------------------------------
# Methods
# ----------------------------------------------------------------------------


def lr_key(name: str) -> str:
  """The `lrs` entry of a method: SADL's eps ablation shares SADL's grid."""
  return "sadl" if name.startswith("sadl") else name


def make_method(
  name, *, dim, sketch_size, cfg, key, learning_rate
) -> sadl_lib.Method:
  """Builds one of the compared methods from a config section.

  `learning_rate` may be a traced scalar (one lr of a vmapped sweep).
  """
  if name in ("sadl", "sadl_eps1e-8"):  # spec B.5: tiny eps degrades with d
    method = sadl_lib.sadl(
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=learning_rate,
      b1=cfg.b1,
      b2=cfg.b2,
      eps=cfg.eps if name == "sadl" else 1e-8,
    )
    return method._replace(name=name)
  if name == "sketched_sgd":
    return sadl_lib.sketched_sgd(
      dim=dim, sketch_size=sketch_size, learning_rate=learning_rate
    )
  if name == "fetchsgd":
    return sadl_lib.fetchsgd(
      key,
      dim=dim,
      sketch_size=sketch_size,
      learning_rate=learning_rate,
      rows=cfg.fetchsgd_rows,
    )
  if name == UNCOMPRESSED:
    return sadl_lib.distributed_adam(
      dim=dim, learning_rate=learning_rate, b1=cfg.b1, b2=cfg.b2, eps=cfg.eps
    )
  raise errors.ConfigError(f"unknown method {name!r}; known: {METHODS}")


def check_part(part, where: str) -> None:
  """Method names, lr grids (one budget for all) and seeds of a part."""
  for name in part.methods:
    train_lib.check_one_of(name, METHODS, f"{where}.methods")
  sizes = {}
  for name in part.methods:
    key = lr_key(name)
    lrs = part.lrs.get(key)
    errors.check(
      lrs is not None and len(lrs) > 0,
      errors.ConfigError,
      f"{where}.lrs has no learning rates for {key!r}",
    )
    errors.check(
      all(isinstance(lr, int | float) and lr > 0 for lr in lrs),
      errors.ConfigError,
      f"{where}.lrs.{key}={tuple(lrs)} must be positive numbers",
    )
    sizes[key] = len(lrs)
  errors.check(
    len(set(sizes.values())) <= 1,
    errors.ConfigError,
    f"{where}.lrs must give every method the same number of learning rates "
    f"(a fair tuning budget), got {sizes}",
  )
  errors.check(
    isinstance(part.seeds, int) and part.seeds >= 1,
    errors.ConfigError,
    f"{where}.seeds={part.seeds!r} must be an int >= 1",
  )


# ----------------------------------------------------------------------------
# One method = one vmapped (lr x seed) grid trained by lib.train.train
# ----------------------------------------------------------------------------


def _num(x) -> float:
  """A metrics.jsonl value as a float ('nan'/'inf' are written as strings)."""
  return float(x)


def train_grid(
  *,
  make_round,
  init_one,
  lrs,
  num_seeds: int,
  data,
  eval_one,
  mesh,
  config,
  workdir: str,
  name: str,
) -> dict:
  """Trains one method at every (lr, seed) as one vmapped `train` run.

  Args:
    make_round: lr (traced scalar) -> round_fn(state, client_data, key).
    init_one: (lr, seed index) -> RoundState (traceable).
    lrs: the learning rates tried.
    num_seeds: seeds per lr; seed s folds s into the round key (and picks
      its own initial parameters in `init_one`).
    data: {"clients": client-sharded arrays, ...}: the `train` data.
    eval_one: (RoundState, data) -> dict of scalars (jittable).
    mesh: the client mesh (replicated state lives on it).
    config: the training ConfigDict (rounds = num_steps).
    workdir: this method's sub-workdir.
    name: `run` column prefix, e.g. "mlp/sadl_10x".

  Returns:
    {"runs": run names, "lr": [R], "seed": [R], "final": {metric: [R]},
     "nonfinite_round": [R] (0: stayed finite), "curves": {metric: [R, T]},
     "steps": [T]} over the R = len(lrs) * num_seeds runs, lr-major.
  """
  num_lrs = len(lrs)
  lr_of = np.repeat(np.asarray(lrs, np.float32), num_seeds)
  seed_of = np.tile(np.arange(num_seeds, dtype=np.int32), num_lrs)
  runs = tuple(f"lr{lr:g}/seed{s}" for lr in lrs for s in range(num_seeds))

  def init_fn(key):
    del key  # the initial parameters are fixed per seed by `init_one`
    rounds = jax.vmap(init_one)(lr_of, seed_of)
    return {"rounds": rounds, "nonfinite_round": jnp.zeros(len(runs), "int32")}

  def step_fn(state, batch, key, step):
    del step  # the round counter lives in the state
    rounds = state["rounds"]
    # [R] lr-major -> [lrs, seeds]: seeds outside, lrs inside, so each seed's
    # round key (and with it R_t and the mini-batches) is drawn once and
    # shared by its lrs, which makes the lr comparison paired.
    grid = jax.tree.map(
      lambda x: x.reshape(num_lrs, num_seeds, *x.shape[1:]),
      (rounds.params, rounds.server),
    )
    done = rounds.round[0]  # every run of the stack has done the same rounds

    def per_seed(seed, params, server):
      # The round key comes from the step key: resume is bitwise.
      seed_key = jax.random.fold_in(key, seed)

      def per_lr(lr, p, sv):
        one = sadl_lib.RoundState(done, p, sv)
        return make_round(lr)(one, batch["clients"], seed_key)

      return jax.vmap(per_lr)(jnp.asarray(lrs, jnp.float32), params, server)

    new, metrics = jax.vmap(per_seed, in_axes=(0, 1, 1), out_axes=1)(
      jnp.arange(num_seeds), *grid
    )
    new, metrics = jax.tree.map(
      lambda x: x.reshape(len(runs), *x.shape[2:]), (new, metrics)
    )
    finite = jnp.isfinite(metrics["loss"]) & jnp.all(
      jnp.isfinite(new.params), axis=-1
    )
    went = (state["nonfinite_round"] == 0) & ~finite
    nonfinite = jnp.where(went, new.round, state["nonfinite_round"])
    metrics = {"loss": metrics["loss"], "nonfinite_round": nonfinite}
    return {"rounds": new, "nonfinite_round": nonfinite}, metrics

  def eval_fn(state, data):
    return jax.vmap(lambda s: eval_one(s, data))(state["rounds"])

  _, history = train_lib.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=config,
    data=data,
    eval_fn=eval_fn,
    mesh=mesh,
    name=name,
    runs=runs,
    finite_keys=(),  # divergence is an outcome: recorded per run below
  )
  col = {f"{name}/{r}": i for i, r in enumerate(runs)}
  eval_keys = sorted(jax.eval_shape(lambda: eval_one(init_one(0.0, 0), data)))
  steps = sorted({r["step"] for r in history if eval_keys[0] in r})
  at = {s: i for i, s in enumerate(steps)}
  curves = {k: np.full((len(runs), len(steps)), np.nan) for k in eval_keys}
  nonfinite = np.zeros(len(runs), np.int64)
  last = max((r["step"] for r in history), default=0)
  for row in history:
    i = col.get(row.get("run"))
    if i is None:
      continue
    if eval_keys[0] in row:
      for k in eval_keys:
        curves[k][i, at[row["step"]]] = _num(row[k])
    if row["step"] == last and "nonfinite_round" in row:
      nonfinite[i] = int(_num(row["nonfinite_round"]))
  return {
    "runs": runs,
    "lr": lr_of.astype(np.float64).tolist(),
    "seed": seed_of.tolist(),
    "final": {k: v[:, -1] for k, v in curves.items()},  # evaluated at the end
    "nonfinite_round": nonfinite,
    "curves": curves,
    "steps": steps,
  }


def select_lr(grid: dict, lrs, num_seeds: int, metric: str) -> dict:
  """The lr with the lowest mean final `metric` over seeds (train metric).

  A run that went non-finite scores +inf, so an lr with a diverged seed loses
  to any lr whose seeds all stayed finite. If every lr diverged, the method is
  reported diverged: the chosen lr is the one that stayed finite longest.

  Returns:
    {"index": chosen lr index, "lr", "diverged" (every lr diverged),
     "diverged_round" (the chosen lr's first non-finite round, or None),
     "best_at_edge" (chosen lr is the smallest or largest of the grid),
     "sweep": [{"lr", metric, "finite_fraction", "nonfinite_rounds"}]}.
  """
  final = np.asarray(grid["final"][metric], np.float64)
  went = np.asarray(grid["nonfinite_round"]).reshape(len(lrs), num_seeds)
  values = final.reshape(len(lrs), num_seeds)
  ok = (went == 0) & np.isfinite(values)
  scores = np.where(ok.all(1), np.where(ok, values, 0).mean(1), np.inf)
  diverged = bool(np.all(~np.isfinite(scores)))
  if diverged:  # the lr that survived longest (0 = never went non-finite)
    survived = np.where(went == 0, np.iinfo(np.int64).max, went).min(1)
    index = int(np.argmax(survived))
  else:
    index = int(np.argmin(scores))
  rounds = [int(r) for r in went[index] if r > 0]
  return {
    "index": index,
    "lr": float(lrs[index]),
    "diverged": diverged,
    "diverged_round": min(rounds) if rounds else None,
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


def chosen(grid: dict, choice: dict, num_seeds: int, key: str) -> np.ndarray:
  """Per-seed final values of `key` at the chosen lr."""
  i = choice["index"]
  return np.asarray(grid["final"][key], np.float64)[
    i * num_seeds : (i + 1) * num_seeds
  ]


def chosen_curve(grid: dict, choice: dict, num_seeds: int, key: str) -> list:
  """Mean over seeds of the curve of `key` at the chosen lr."""
  i = choice["index"]
  rows = grid["curves"][key][i * num_seeds : (i + 1) * num_seeds]
  return np.mean(rows, 0).tolist()


def paired(
  ours, theirs, *, higher_is_better: bool, level: float = 0.95
) -> dict:
  """ours - theirs paired by seed: mean and a Student-t interval.

  A seed where ours is not finite counts as the worst outcome; one where the
  comparator is not finite is counted in `comparator_finite_fraction` (and
  its difference is +-inf in our favour, which the claim then refuses).
  With one seed, lo/hi are -inf/+inf (no interval from one seed).
  """
  ours, theirs = np.asarray(ours, float), np.asarray(theirs, float)
  worst = -np.inf if higher_is_better else np.inf
  ours = np.where(np.isfinite(ours), ours, worst)
  theirs = np.where(np.isfinite(theirs), theirs, worst)
  with np.errstate(invalid="ignore"):
    diff = ours - theirs
  mean, lo, hi = stats_lib.mean_interval(diff, level)
  if math.isnan(lo):  # One seed, or a non-finite difference: no interval.
    lo, hi = mean - math.inf, mean + math.inf
  return {
    "point": mean,
    "lo": lo,
    "hi": hi,
    "per_seed": diff.tolist(),
    "n": diff.size,
    "level": level,
    "comparator_finite_fraction": float(np.mean(np.isfinite(theirs))),
  }


# ----------------------------------------------------------------------------
# (i) Power-law quadratic dimension sweep
# ----------------------------------------------------------------------------


def quadratic_problem(config, d):
  """Client targets, the jittable loss and the L_T/L_0 eval at dimension d."""
  q = config.quadratic
  lam = np.arange(1, d + 1, dtype=np.float64) ** -q.exponent
  # Client targets 1 + spread * (noise - its mean over clients): the average
  # client loss is 1/2 sum lam (x - 1)^2 + const, so the excess loss ratio is
  # comparable to spec E.B's single-client L_T / L_0.
  noise = np.random.default_rng(config.seed).normal(
    size=(config.num_clients, d)
  )
  targets = 1.0 + q.target_spread * (noise - noise.mean(0))
  lam32 = jnp.asarray(lam, jnp.float32)
  excess0 = float(0.5 * lam.sum())

  def loss_fn(x, target):
    return 0.5 * jnp.sum(lam32 * (x - target) ** 2)

  def eval_one(state, data):
    del data
    excess = 0.5 * jnp.sum(lam32 * (state.params - 1.0) ** 2)
    return {"loss_ratio": excess / excess0}

  return dict(
    loss_fn=loss_fn,
    batch_fn=lambda data, key: data,
    unravel=lambda x: x,
    params0=np.zeros((q.seeds, d), np.float32),
    data=targets.astype(np.float32),
    eval_one=eval_one,
    local_steps=1,
    client_lr=1.0,
  )


def run_part_method(
  name, *, part, problem, sketch_size, mesh, config, root, workdir, tag
):
  """Trains `name` over its lr grid x seeds on `problem`; returns the grid."""
  d = int(problem["params0"].shape[-1])
  table_key = rng.stream(root, "fetchsgd_table")

  def method_at(lr):
    return make_method(
      name,
      dim=d,
      sketch_size=sketch_size,
      cfg=part,
      key=table_key,
      learning_rate=lr,
    )

  def make_round(lr):
    return sadl_lib.make_round_fn(
      method_at(lr),
      loss_fn=problem["loss_fn"],
      batch_fn=problem["batch_fn"],
      unravel=problem["unravel"],
      mesh=mesh,
      num_clients=config.num_clients,
      local_steps=problem["local_steps"],
      client_lr=problem["client_lr"],
    )

  params0 = problem["params0"]

  def init_one(lr, seed):
    return sadl_lib.init_state(method_at(lr), jnp.asarray(params0)[seed])

  lrs = tuple(part.lrs[lr_key(name)])
  return train_grid(
    make_round=make_round,
    init_one=init_one,
    lrs=lrs,
    num_seeds=part.seeds,
    data=problem["sharded"],
    eval_one=problem["eval_one"],
    mesh=mesh,
    config=part.train,
    workdir=os.path.join(workdir, tag),
    name=tag,
  )


def run_quadratic(config, mesh, root, workdir, sweep) -> dict:
  q = config.quadratic
  out = {}
  for d in q.dims:
    problem = quadratic_problem(config, d)
    problem["sharded"] = {
      "clients": sadl_lib.shard_clients(problem["data"], mesh)
    }
    sadl_lib.check_client_data(
      problem["sharded"]["clients"], mesh, config.num_clients
    )
    row = {}
    for name in q.methods:
      tag = f"quadratic/d{d}/{name}"
      with sweep.run(tag):
        grid = run_part_method(
          name,
          part=q,
          problem=problem,
          sketch_size=q.sketch_size,
          mesh=mesh,
          config=config,
          root=root,
          workdir=workdir,
          tag=tag,
        )
      lrs = tuple(q.lrs[lr_key(name)])
      choice = select_lr(grid, lrs, q.seeds, "loss_ratio")
      method = make_method(
        name, dim=d, sketch_size=q.sketch_size, cfg=q, key=root, learning_rate=1
      )
      ratios = chosen(grid, choice, q.seeds, "loss_ratio")
      row[name] = {
        "loss_ratio": float(np.mean(ratios)),
        "per_seed": ratios.tolist(),
        "lr": choice["lr"],
        "lrs": list(lrs),
        "best_at_edge": choice["best_at_edge"],
        "diverged": choice["diverged"],
        "diverged_round": choice["diverged_round"],
        "sweep": choice["sweep"],
        "bytes_per_round": method.bytes_per_round,
        "compression": method.compression,
        "curve_rounds": grid["steps"],
        "curve": chosen_curve(grid, choice, q.seeds, "loss_ratio"),
      }
      logging.info(
        "quadratic d=%d %s: L_T/L_0 = %.4f at lr %g%s",
        d,
        name,
        row[name]["loss_ratio"],
        choice["lr"],
        " (diverged)" if choice["diverged"] else "",
      )
    out[f"d{d}"] = row
  return out


def best_of(rows: dict, names, key: str, *, higher_is_better: bool):
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
  """Headline numbers for the claims: SADL vs itself over d, vs baselines."""
  first, last = f"d{dims[0]}", f"d{dims[-1]}"
  keys = [f"d{d}" for d in dims]
  summary = {}
  if not all("sadl" in quad[k] for k in keys):
    return summary
  ratios = [quad[k]["sadl"]["loss_ratio"] for k in keys]
  summary["sadl_ratio_max"] = max(ratios)
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
  best = {
    k: best_of(
      quad[k], COMPRESSED_BASELINES, "loss_ratio", higher_is_better=False
    )
    for k in keys
  }
  if all(best.values()):
    gaps = {
      k: quad[k]["sadl"]["loss_ratio"] - quad[k][best[k]]["loss_ratio"]
      for k in keys
    }
    worst = max(gaps, key=gaps.get)
    ran = [n for n in COMPRESSED_BASELINES if n in quad[first]]
    finite = [not quad[k][n]["diverged"] for k in keys for n in ran]
    summary["vs_best_baseline"] = {
      # SADL's L_T/L_0 minus the best compressed baseline's, worst over d.
      "point": gaps[worst],
      "at": worst,
      "comparator": best[worst],
      "best_baseline": best,
      "sadl_minus_best": gaps,
      "baselines": ran,
      "comparator_finite_fraction": float(np.mean(finite)),
    }
  return summary


# ----------------------------------------------------------------------------
# (ii) MLP on digits, 8 clients
# ----------------------------------------------------------------------------


def digits_problem(config, root):
  """8-client digits split, the MLP loss, per-seed initial params, the eval."""
  m = config.mlp
  images, labels = load_digits()
  x = images.reshape(len(images), -1) / 16.0
  train_idx, test_idx = split_indices(
    len(x), test_fraction=m.test_fraction, seed=config.seed
  )
  c = config.num_clients
  per_client = (len(train_idx) // c) // 2 * 2
  order = np.random.default_rng(config.seed).permutation(train_idx)
  if m.non_iid:
    # Sort by label, cut into 2C shards, give client i shards i and i + C.
    order = order[np.argsort(labels[order], kind="stable")]
    shards = order[: c * per_client].reshape(2 * c, per_client // 2)
    client_idx = np.concatenate([shards[:c], shards[c:]], axis=1)
  else:
    client_idx = order[: c * per_client].reshape(c, per_client)

  model = models.MLP((m.hidden,), num_outputs=10)
  init = jax.jit(model.init)  # one compile instead of one per eager op
  flat = []
  for s in range(m.seeds):
    params = init(rng.stream(root, "mlp_init", s), jnp.zeros((1, 64)))
    flat.append(np.asarray(ravel_pytree(params)[0]))
  _, unravel = ravel_pytree(params)

  def loss_fn(p, batch):
    logits = model.apply(p, batch["x"])
    return optax.softmax_cross_entropy_with_integer_labels(
      logits, batch["y"]
    ).mean()

  def batch_fn(client_data, key):
    idx = jax.random.randint(key, (m.batch_size,), 0, per_client)
    return jax.tree.map(lambda a: a[idx], client_data)

  def eval_one(state, data):
    p = unravel(state.params)
    logits = model.apply(p, data["test"]["x"])
    return {
      "train_loss": loss_fn(p, data["train"]),
      "test_acc": jnp.mean(jnp.argmax(logits, -1) == data["test"]["y"]),
      "params_l2": jnp.linalg.norm(state.params),
    }

  return dict(
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    unravel=unravel,
    params0=np.stack(flat),
    data={"x": x[client_idx], "y": labels[client_idx]},
    train={"x": x[train_idx], "y": labels[train_idx]},
    test={"x": x[test_idx], "y": labels[test_idx]},
    eval_one=eval_one,
    local_steps=m.local_steps,
    client_lr=m.client_lr,
  )


def mlp_tags(m, d):
  """(method, tag, sketch size) of every MLP run: each compression, Adam once."""
  out = []
  for name in m.methods:
    if name == UNCOMPRESSED:
      out.append((name, name, None))
    else:
      out += [(name, f"{name}_{r}x", max(2, d // r)) for r in m.compressions]
  return out


def run_mlp(config, mesh, root, workdir, sweep, problem) -> dict:
  m = config.mlp
  problem["sharded"] = {
    "clients": sadl_lib.shard_clients(problem["data"], mesh),
    "train": problem["train"],
    "test": problem["test"],
  }
  sadl_lib.check_client_data(
    problem["sharded"]["clients"], mesh, config.num_clients
  )
  d = int(problem["params0"].shape[-1])
  out = {
    "dim": d,
    "clients_per_device": config.num_clients // mesh.size,
    "seeds": m.seeds,
  }
  for name, tag, b in mlp_tags(m, d):
    with sweep.run(f"mlp/{tag}"):
      grid = run_part_method(
        name,
        part=m,
        problem=problem,
        sketch_size=b,
        mesh=mesh,
        config=config,
        root=root,
        workdir=workdir,
        tag=f"mlp/{tag}",
      )
    lrs = tuple(m.lrs[lr_key(name)])
    choice = select_lr(grid, lrs, m.seeds, "train_loss")
    method = make_method(
      name, dim=d, sketch_size=b, cfg=m, key=root, learning_rate=1.0
    )
    per_seed = {
      k: chosen(grid, choice, m.seeds, k).tolist()
      for k in ("train_loss", "test_acc", "params_l2")
    }
    bytes_round = method.bytes_per_round
    out[tag] = {
      **{k: float(np.mean(v)) for k, v in per_seed.items()},
      "per_seed": per_seed,
      "lr": choice["lr"],
      "lrs": list(lrs),
      "best_at_edge": choice["best_at_edge"],
      "diverged": choice["diverged"],
      "diverged_round": choice["diverged_round"],
      "sweep": choice["sweep"],
      "bytes_per_round": bytes_round,
      "compression": method.compression,
      "curve_bytes": [s * bytes_round for s in grid["steps"]],
      "curve_test_acc": chosen_curve(grid, choice, m.seeds, "test_acc"),
      "curve_train_loss": chosen_curve(grid, choice, m.seeds, "train_loss"),
    }
    logging.info(
      "mlp %s: train loss %.4f, test acc %.4f at lr %g%s",
      tag,
      out[tag]["train_loss"],
      out[tag]["test_acc"],
      choice["lr"],
      " (diverged)" if choice["diverged"] else "",
    )
  out.update(summarize_mlp(out, m))
  return out


def summarize_mlp(out: dict, m) -> dict:
  """SADL vs Adam and vs the best compressed baseline, paired by seed."""
  summary = {}
  for r in m.compressions:
    ours = f"sadl_{r}x"
    if ours not in out:
      continue
    if UNCOMPRESSED in out:
      gap = paired(
        out[UNCOMPRESSED]["per_seed"]["test_acc"],
        out[ours]["per_seed"]["test_acc"],
        higher_is_better=True,
      )
      # Adam's accuracy minus SADL's: the comparator is Adam here.
      adam = np.asarray(out[UNCOMPRESSED]["per_seed"]["test_acc"], float)
      gap["comparator_finite_fraction"] = float(
        0.0 if out[UNCOMPRESSED]["diverged"] else np.mean(np.isfinite(adam))
      )
      summary[f"vs_adam_{r}x"] = gap
    tags = {f"{n}_{r}x": n for n in COMPRESSED_BASELINES}
    rows = {t: out[t] for t in tags if t in out}
    best = best_of(rows, rows, "test_acc", higher_is_better=True)
    if best is None:
      continue
    vs = paired(
      out[ours]["per_seed"]["test_acc"],
      out[best]["per_seed"]["test_acc"],
      higher_is_better=True,
    )
    vs.update(
      comparator=best,
      baselines=sorted(rows),
      baselines_test_acc={t: rows[t]["test_acc"] for t in rows},
      baselines_train_loss={t: rows[t]["train_loss"] for t in rows},
      # Every baseline's chosen run finite (a "yes" must not rest on one that
      # diverged).
      comparator_finite_fraction=float(
        np.mean([not rows[t]["diverged"] for t in rows])
      ),
    )
    summary[f"vs_best_baseline_{r}x"] = vs
  return summary


# ----------------------------------------------------------------------------
# Figure and entry point
# ----------------------------------------------------------------------------


def plot(results, config, path):
  from experiments._plot import plt

  fig, axes = plt.subplots(1, 2, figsize=(11, 4))
  quad = results.get("quadratic", {})
  if quad:
    dims = list(config.quadratic.dims)
    for name in config.quadratic.methods:
      ys = [quad[f"d{d}"][name]["loss_ratio"] for d in dims]
      axes[0].plot(dims, ys, "o-", label=name)
    axes[0].set(
      xscale="log",
      yscale="log",
      xlabel="dimension d",
      ylabel="L_T / L_0 (best lr of the grid)",
      title=f"power-law quadratic, b={config.quadratic.sketch_size}",
    )
    axes[0].legend(fontsize=8)
  mlp = results.get("mlp", {})
  for tag, row in mlp.items():
    if isinstance(row, dict) and "curve_bytes" in row:
      axes[1].plot(row["curve_bytes"], row["curve_test_acc"], label=tag)
  if mlp:
    axes[1].set(
      xscale="log",
      xlabel="bytes per client (up + down)",
      ylabel="test accuracy (mean over seeds)",
      title=f"digits MLP, {config.num_clients} clients"
      + (" (non-IID)" if config.mlp.non_iid else ""),
    )
    axes[1].legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


def check_config(config) -> None:
  """Every name and grid at once, before any data, training or write."""
  for p in ("quadratic", "mlp"):
    if config[p].enabled:
      check_part(config[p], f"config.{p}")
  sadl_lib.check_mesh(
    sadl_lib.make_client_mesh(config.mesh_clients), config.num_clients
  )


def run(config, workdir) -> dict:
  check_config(config)
  mesh = sadl_lib.make_client_mesh(config.mesh_clients)
  root = rng.root_key(config.seed)
  problem = digits_problem(config, root) if config.mlp.enabled else None
  # Every method's sketch size at every d before the first round.
  for d in config.quadratic.dims if config.quadratic.enabled else ():
    for name in config.quadratic.methods:
      make_method(
        name,
        dim=d,
        sketch_size=config.quadratic.sketch_size,
        cfg=config.quadratic,
        key=root,
        learning_rate=1.0,
      )
  if problem is not None:
    d = int(problem["params0"].shape[-1])
    for name, _, b in mlp_tags(config.mlp, d):
      make_method(
        name, dim=d, sketch_size=b, cfg=config.mlp, key=root, learning_rate=1.0
      )
  # config.json once every check (the sketch sizes need the data's d) holds.
  train_lib.prepare_run(workdir, config)
  logging.info(
    "%d clients on %d devices (%d processes)",
    config.num_clients,
    mesh.size,
    jax.process_count(),
  )
  num_runs = 0
  if config.quadratic.enabled:
    num_runs += len(config.quadratic.dims) * len(config.quadratic.methods)
  if problem is not None:
    num_runs += len(mlp_tags(config.mlp, int(problem["params0"].shape[-1])))
  sweep = train_lib.Sweep(num_runs, name="sadl")
  results = {
    "num_clients": config.num_clients,
    "devices": int(mesh.size),
    "processes": jax.process_count(),
  }
  if config.quadratic.enabled:
    results["quadratic"] = run_quadratic(config, mesh, root, workdir, sweep)
    results["quadratic"].update(
      summarize_quadratic(results["quadratic"], list(config.quadratic.dims))
    )
  if problem is not None:
    results["mlp"] = run_mlp(config, mesh, root, workdir, sweep, problem)
  path = os.path.join(workdir, "sadl.png")
  plot(results, config, path)
  results["figure"] = path
  return train_lib.write_results(workdir, results)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
