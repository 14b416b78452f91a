r"""SADL vs sketched SGD, FetchSGD and uncompressed Adam on a clients mesh.

Clients are the devices of the `clients` axis of a `jax.make_mesh` mesh; each
round runs K local steps per client under `jax.shard_map` and averages the
messages with `lax.pmean` (lib/optim/sadl/rounds.py). A round is a step of a
`lib.train.run_sweep` sweep, checkpointed, resumable bitwise and SIGTERM-safe.
Every method gets the same learning-rate budget (the same number of lrs), and
one sweep member is one lr rank and one seed of EVERY compared method
(lib.optim.sadl.compare.sweep_member), so each dimension of the quadratic and
the whole MLP comparison is one vmapped program whose methods share the round
keys. Each method's lr is chosen by a mean over seeds: on the quadratic by its
final L_T/L_0; on the MLP by `config.mlp.lr_selection`, "validation" (the
final error on a part of the training split held out of every client,
`config.mlp.val_fraction`; the test split is the same either way and never
chooses) or "train_loss" (the final training loss, every training image on
a client: the protocol until 2026-12-06). Runs that went non-finite are
recorded with the round where they did (never dropped).

Two parts:
  (i) spec E.B's power-law quadratic dimension sweep: with eps = 1e-3, SADL's
      loss after T rounds does not grow with d at a fixed sketch size b
      (dimension-free rate, the paper's Thm 2.2 / Cor. 2), compared with the
      best compressed baseline and with uncompressed Adam at every d;
  (ii) an MLP on the bundled digits with 8 clients (IID or label-sharded):
      final loss / test accuracy against bytes sent per client, SADL against
      every compressed baseline at each compression, paired by seed.
SADL runs twice in both: as Alg. 2 ("sadl": two half-sketches, one per Adam
moment) and with one sketch of all b rows into a plain Adam server
("sadl_one_sketch"), the paper not saying how its experiments split b.
The paper's ResNet/ViT/BERT results need GPUs and days; they are out of CPU
reach and not claimed here.

Run: python -m experiments.sadl --config configs/sadl.py:quick --workdir runs/sadl
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging
from jax.flatten_util import ravel_pytree

from experiments import _checks
from experiments import _cli
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.data.digits import holdout
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.optim import sadl as sadl_lib
from lib.optim.sadl import compare

UNCOMPRESSED = compare.UNCOMPRESSED


def check_part(part, where: str) -> None:
  """Method names, lr grids (one budget for all) and seeds of a part."""
  sizes = {}
  for name in part.methods:
    train_lib.check_one_of(name, compare.METHODS, f"{where}.methods")
    key = compare.lr_key(name)
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
  for key in ("b1", "b2"):
    _checks.number(part[key], f"{where}.{key}", at_least=0, below=1)
  _checks.number(part.eps, f"{where}.eps", above=0)
  _checks.integer(part.fetchsgd_rows, f"{where}.fetchsgd_rows")
  if "hidden" in part:  # the MLP part
    _checks.integer(part.hidden, f"{where}.hidden")
    _checks.integer(part.local_steps, f"{where}.local_steps")
    _checks.number(part.client_lr, f"{where}.client_lr", above=0)
    _checks.fraction(part.test_fraction, f"{where}.test_fraction")
    _checks.lr_selection(part, where)
  else:  # the quadratic part
    _checks.integers(part.dims, f"{where}.dims")
    _checks.integer(part.sketch_size, f"{where}.sketch_size", minimum=2)
    _checks.number(part.exponent, f"{where}.exponent")
    _checks.number(part.target_spread, f"{where}.target_spread", at_least=0)


def digits_problem(config) -> compare.Problem:
  """8-client digits split, the MLP loss, per-seed initial params, the eval.

  With `config.mlp.lr_selection` "validation", `val_fraction` of the training
  split is held out of every client and evaluated as "val_error"; the test
  split is the same in both modes.
  """
  m = config.mlp
  images, labels = load_digits()
  x = images.reshape(len(images), -1) / 16.0
  train_idx, test_idx = split_indices(
    len(x), test_fraction=m.test_fraction, seed=config.seed
  )
  held = {}
  if m.lr_selection == "validation":
    train_idx, val_idx = holdout(
      train_idx, fraction=m.val_fraction, seed=config.seed
    )
    held["val"] = {"x": x[val_idx], "y": labels[val_idx]}
  c = config.num_clients
  per_client = (len(train_idx) // c) // 2 * 2
  errors.check(
    per_client >= 2,
    errors.ConfigError,
    f"config.mlp: {len(train_idx)} training images over {c} clients leave "
    f"{per_client} per client (2 at least): lower config.mlp.test_fraction "
    f"({m.test_fraction})"
    + (
      f" or config.mlp.val_fraction ({m.val_fraction})"
      if m.lr_selection == "validation"
      else ""
    ),
  )
  order = np.random.default_rng(config.seed).permutation(train_idx)
  if m.non_iid:
    # Sort by label, cut into 2C shards, give client i shards i and i + C.
    order = order[np.argsort(labels[order], kind="stable")]
    shards = order[: c * per_client].reshape(2 * c, per_client // 2)
    client_idx = np.concatenate([shards[:c], shards[c:]], axis=1)
  else:
    client_idx = order[: c * per_client].reshape(c, per_client)

  model = models.MLP((m.hidden,), num_outputs=10)
  unravel = {}

  def init_params(seed):  # traced inside the sweep's init: no eager op
    key = rng.stream(rng.root_key(config.seed), "mlp_init", seed)
    flat, unravel["fn"] = ravel_pytree(model.init(key, jnp.zeros((1, 64))))
    return flat

  dim = jax.eval_shape(init_params, 0).shape[0]  # also records the unravel

  def loss_fn(p, batch):
    logits = model.apply(p, batch["x"])
    return optax.softmax_cross_entropy_with_integer_labels(
      logits, batch["y"]
    ).mean()

  def batch_fn(client_data, key):
    idx = jax.random.randint(key, (m.batch_size,), 0, per_client)
    return jax.tree.map(lambda a: a[idx], client_data)

  def accuracy(p, part):
    return jnp.mean(jnp.argmax(model.apply(p, part["x"]), -1) == part["y"])

  def evaluate(flat, data):
    p = unravel["fn"](flat)
    out = {
      "train_loss": loss_fn(p, data["train"]),
      "test_acc": accuracy(p, data["test"]),
      "params_l2": jnp.linalg.norm(flat),
    }
    if "val" in data:
      out["val_error"] = 1.0 - accuracy(p, data["val"])
    return out

  return compare.Problem(
    dim=dim,
    data={
      "clients": {"x": x[client_idx], "y": labels[client_idx]},
      "train": {"x": x[train_idx], "y": labels[train_idx]},
      "test": {"x": x[test_idx], "y": labels[test_idx]},
      **held,
    },
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    unravel=lambda flat: unravel["fn"](flat),
    init_params=init_params,
    evaluate=evaluate,
    local_steps=m.local_steps,
    client_lr=m.client_lr,
  )


def quadratic_runs(q) -> list:
  """The quadratic's runs: every method at the part's sketch size."""
  lrs = q.lrs
  return [
    compare.Run(n, n, q.sketch_size, tuple(lrs[compare.lr_key(n)]))
    for n in q.methods
  ]


def mlp_runs(m, dim: int) -> list:
  """The MLP's runs: each compressed method at every ratio, Adam once."""
  out = []
  for n in m.methods:
    lrs = tuple(m.lrs[compare.lr_key(n)])
    if n == UNCOMPRESSED:
      out.append(compare.Run(n, n, None, lrs))
    else:
      out += [
        compare.Run(f"{n}_{r}x", n, max(2, dim // r), lrs)
        for r in m.compressions
      ]
  return out


def compare_methods(runs, *, part, problem, metric, config, mesh, workdir, tag):
  """One sweep: every run at every (lr, seed) in one vmapped program.

  Returns:
    (rows, steps): tag -> the run's row at its best lr by the final
    `metric`, lower wins (`compare.method_rows`), and the evaluated rounds.
  """
  clients = sadl_lib.shard_clients(problem.data["clients"], mesh)
  sadl_lib.check_client_data(clients, mesh, config.num_clients)
  init_one, step_one, eval_one = compare.sweep_member(
    runs,
    problem=problem,
    mesh=mesh,
    num_clients=config.num_clients,
    hparams=part,
    seed=config.seed,
  )
  settings = train_lib.sweep_grid(
    lr_index=range(len(runs[0].lrs)), seed=range(part.seeds)
  )
  result = train_lib.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=os.path.join(workdir, tag),
    config=part.train,
    data={**problem.data, "clients": clients},
    eval_one=eval_one,
    name=tag,
    watch=(),  # divergence is recorded per method, inside each member
    freeze_diverged=False,
    mesh=mesh,
  )
  rows = compare.method_rows(
    result,
    runs,
    metric=metric,
    select=train_lib.select_best,
    dim=problem.dim,
    hparams=part,
    seed=config.seed,
  )
  return rows, result.steps.tolist()


def _log(text: str, row: dict) -> None:
  diverged = " (diverged)" if row["diverged"] else ""
  logging.info("%s at lr %g%s", text, row["lr"], diverged)


def run_quadratic(config, mesh, workdir, sweep) -> dict:
  q = config.quadratic
  out = {}
  for d in q.dims:
    problem = compare.quadratic_problem(
      d,
      num_clients=config.num_clients,
      exponent=q.exponent,
      target_spread=q.target_spread,
      seed=config.seed,
    )
    with sweep.run(f"quadratic/d{d}"):
      rows, steps = compare_methods(
        quadratic_runs(q),
        part=q,
        problem=problem,
        metric="loss_ratio",
        config=config,
        mesh=mesh,
        workdir=workdir,
        tag=f"quadratic/d{d}",
      )
    for name, row in rows.items():
      ratios = row.pop("per_seed")["loss_ratio"]
      curve = row.pop("curves")["loss_ratio"]
      row.update(
        loss_ratio=float(np.mean(ratios)),
        per_seed=ratios,
        curve_rounds=steps,
        curve=curve,
      )
      _log(f"quadratic d={d} {name}: L_T/L_0 = {row['loss_ratio']:.4f}", row)
    out[f"d{d}"] = rows
  out.update(compare.summarize_quadratic(out, list(q.dims)))
  return out


def run_mlp(config, mesh, workdir, sweep, problem) -> dict:
  m = config.mlp
  metric = _checks.LR_SELECTION[m.lr_selection]
  with sweep.run("mlp"):
    rows, steps = compare_methods(
      mlp_runs(m, problem.dim),
      part=m,
      problem=problem,
      metric=metric,
      config=config,
      mesh=mesh,
      workdir=workdir,
      tag="mlp",
    )
  for tag, row in rows.items():
    curves = row.pop("curves")
    row.update({k: float(np.mean(v)) for k, v in row["per_seed"].items()})
    row.update(
      curve_bytes=[s * row["bytes_per_round"] for s in steps],
      curve_test_acc=curves["test_acc"],
      curve_train_loss=curves["train_loss"],
    )
    val = f", val error {row['val_error']:.4f}" if "val_error" in row else ""
    _log(
      f"mlp {tag}: train loss {row['train_loss']:.4f}{val}, test acc "
      f"{row['test_acc']:.4f}",
      row,
    )
  out = {
    "dim": problem.dim,
    "clients_per_device": config.num_clients // mesh.size,
    "seeds": m.seeds,
    # What chose each method's lr (config.mlp.lr_selection) and the images
    # each part holds.
    "lr_selection": metric,
    "split_sizes": {
      k: int(v["y"].shape[0]) for k, v in problem.data.items() if k != "clients"
    },
    **rows,
  }
  out.update(compare.summarize_mlp(rows, m.compressions))
  return out


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
  problem = digits_problem(config) if config.mlp.enabled else None
  # Every method's sketch size at every d before the first round.
  q = config.quadratic
  parts = [(q, quadratic_runs(q), d) for d in q.dims if q.enabled]
  if problem is not None:
    parts.append((config.mlp, mlp_runs(config.mlp, problem.dim), problem.dim))
  for part, runs, d in parts:
    for r in runs:
      compare.describe(r, dim=d, hparams=part, seed=config.seed)
  # config.json once every check (the sketch sizes need the data's d) holds.
  train_lib.prepare_run(workdir, config)
  logging.info(
    "%d clients on %d devices (%d processes)",
    config.num_clients,
    mesh.size,
    jax.process_count(),
  )
  num_sweeps = (len(q.dims) if q.enabled else 0) + (problem is not None)
  sweep = train_lib.Sweep(num_sweeps, name="sadl")
  results = {
    "num_clients": config.num_clients,
    "devices": int(mesh.size),
    "processes": jax.process_count(),
  }
  if q.enabled:
    results["quadratic"] = run_quadratic(config, mesh, workdir, sweep)
  if problem is not None:
    results["mlp"] = run_mlp(config, mesh, workdir, sweep, problem)
  path = os.path.join(workdir, "sadl.png")
  results["figure"] = path
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(plot, results, config, path)
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
