"""Shared pieces of the HNS experiment binaries (hns_toy, hns_advection, hns_kdv).

Not an experiment: the binaries train stacks of runs (seeds, learning rates) the
same way, the two PDE binaries train and roll out the same three model kinds
(HNS, derivative CNN, next-step CNN), compare HNS with the strongest baseline and
draw the same figures, so that code lives once, here.

How a comparison is made honest (issue 14):
- Divergence is counted, never dropped (`lib.pde.solver.rollout_metrics`): a
  diverged trajectory's error is +inf and its correlation time is at most the
  step it diverged at; every model reports its finite fraction.
- The comparator of a claim is the baseline with the best mean metric over seeds
  (divergence counted), named in results.json with its finite fraction: a claim
  whose comparator diverged on any trajectory reads "no" in the report, and a
  baseline cannot look strong by diverging (its score counts the divergence).
  With errors inf where diverged this is the best non-diverged baseline; on
  correlation time, a partly diverged baseline that still tracks longest is
  kept as the comparator (and flagged) rather than swapped for a weaker one.
- The interval is a paired Student-t interval over units: seeds when there are
  two or more (each seed's model pair evaluated on the same validation set),
  else the validation trajectories of the one seed (initial-condition noise
  only; the claim's note says so), or its validation batches for the official
  correlation time (`config.corr_time="official"`, one value per batch of
  `config.corr_batch`; see `lib.pde.comparison`).
- The official correlation time lets a diverged batch look correlated (a NaN
  step never counts as below 0.8): every model reports num_diverged beside it.

References:
  Zhou & Barati Farimani. Hamiltonian Neural PDE Solvers. NeurIPS 2025.
"""

import os

import jax
import numpy as np
import optax
from absl import logging

from experiments import _checks
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import tree as tree_lib
from lib.pde import comparison
from lib.pde import derivatives
from lib.pde import hns as hns_lib
from lib.pde import metrics as pde_metrics
from lib.pde import solver

BASELINES = ("derivative_cnn", "next_step_cnn")


def check_seeds(num_seeds) -> None:
  errors.check(
    isinstance(num_seeds, int)
    and not isinstance(num_seeds, bool)
    and num_seeds >= 1,
    errors.ConfigError,
    f"config.num_seeds={num_seeds!r} must be an integer >= 1",
  )


def check_pde_config(config, pde_name: str) -> None:
  """Validates names and options of a PDE experiment before any data."""
  train_lib.check_one_of(config.pde_name, (pde_name,), "config.pde_name")
  errors.check(
    len(config.baselines) > 0,
    errors.ConfigError,
    f"config.baselines is empty; choose from {list(BASELINES)}",
  )
  for b in config.baselines:
    train_lib.check_one_of(b, BASELINES, "config.baselines")
  errors.check(
    len(set(config.baselines)) == len(config.baselines),
    errors.ConfigError,
    f"config.baselines={tuple(config.baselines)} repeats a name",
  )
  for key in ("j_stencil", "label_stencil", "h_stencil"):
    train_lib.check_one_of(config[key], derivatives.STENCILS, f"config.{key}")
  train_lib.check_one_of(
    config.cnn.derivative_stencil,
    ("",) + derivatives.STENCILS,
    "config.cnn.derivative_stencil",
  )
  train_lib.check_one_of(config.hns.film, hns_lib.FILMS, "config.hns.film")
  train_lib.check_one_of(
    config.hns.kernel_type, hns_lib.KERNELS, "config.hns.kernel_type"
  )
  errors.check(
    config.hns.proj_dim % 2 == 0,
    errors.ConfigError,
    f"config.hns.proj_dim={config.hns.proj_dim} must be even",
  )
  check_seeds(config.num_seeds)
  train_lib.check_one_of(
    config.corr_time, pde_metrics.CORRELATION_TIMES, "config.corr_time"
  )
  train_lib.check_one_of(
    config.next_step_target,
    solver.NEXT_STEP_TARGETS,
    "config.next_step_target",
  )
  train_lib.check_one_of(
    config.snapshot_sampling,
    solver.SNAPSHOT_SAMPLINGS,
    "config.snapshot_sampling",
  )
  _checks.integer(config.corr_batch, "config.corr_batch")
  p = config.pde
  for key in ("num_train", "train_steps", "rollout_steps", "num_modes"):
    _checks.integer(p[key], f"config.pde.{key}")
  _checks.integer(p.n_x, "config.pde.n_x", minimum=2)
  _checks.integer(p.max_wavenumber, "config.pde.max_wavenumber")
  for key in ("length", "dt", "max_amplitude") + (
    ("solver_dt",) if "solver_dt" in p else ()
  ):
    _checks.number(p[key], f"config.pde.{key}", above=0)
  for key in ("width", "num_layers", "proj_dim", "film_kernel_size"):
    _checks.integer(config.hns[key], f"config.hns.{key}")
  _checks.number(config.hns.omega0, "config.hns.omega0", above=0)
  _checks.integer(config.cnn.kernel_size, "config.cnn.kernel_size")
  _checks.integers(config.cnn.channels, "config.cnn.channels")
  _checks.integer(config.batch_size, "config.batch_size")
  _checks.number(config.lr, "config.lr", above=0)
  train_lib.check_one_of(config.schedule, SCHEDULES, "config.schedule")
  for kind in ("hns",) + tuple(config.baselines):
    errors.check(
      kind in config.official_lr,
      errors.ConfigError,
      f"config.official_lr has no rate for the model {kind!r}",
    )
    _checks.number(
      config.official_lr[kind], f"config.official_lr.{kind}", above=0
    )
  _checks.integer(config.lr_step_epochs, "config.lr_step_epochs")
  _checks.number(config.lr_gamma, "config.lr_gamma", above=0)
  _checks.number(config.weight_decay, "config.weight_decay", at_least=0)
  _checks.integer(config.warmup_steps, "config.warmup_steps", minimum=0)
  if "h_filter" in p:
    _checks.number(p.h_filter, "config.pde.h_filter", above=0)
    errors.check(
      p.h_filter <= 1,
      errors.ConfigError,
      f"config.pde.h_filter={p.h_filter} is the fraction of the generated "
      "trajectories kept: it must be in (0, 1]",
    )
    for key in ("num_train", "num_val"):
      errors.check(
        num_kept(p, key) >= 2,
        errors.ConfigError,
        f"config.pde.h_filter={p.h_filter} keeps "
        f"{num_kept(p, key)} of config.pde.{key}={p[key]} "
        "trajectories; it must keep at least 2",
      )
  errors.check(
    config.pde.num_val >= 2,
    errors.ConfigError,
    f"config.pde.num_val={config.pde.num_val} must be >= 2 (the interval "
    "of a one-seed comparison is over validation trajectories)",
  )


SCHEDULES = ("official", "cosine")


def num_kept(p, key: str) -> int:
  """How many of config.pde[key] generated trajectories the H filter
  (config.pde.h_filter, KdV) keeps; all of them without one."""
  return int(p[key] * p.h_filter) if "h_filter" in p else p[key]


def learning_rate(config, kind):
  """The learning-rate schedule of model `kind` (configs/common.py
  `hns_pde_defaults`, config.schedule).

  "official": modules/train_module.py `configure_optimizers`,
  StepLR(step_size=100, gamma=0.8) stepped once per epoch, at the
  per-model rate of the official yaml; an epoch is ceil(training
  trajectories / batch_size) steps (the loader keeps its short last batch;
  the trajectories are those the H filter keeps, `num_kept`). "cosine"
  (ours): warmup, then cosine decay to 0 at the last step.
  """
  if config.schedule == "official":
    steps_per_epoch = -(-num_kept(config.pde, "num_train") // config.batch_size)
    return optax.exponential_decay(
      config.official_lr[kind],
      transition_steps=config.lr_step_epochs * steps_per_epoch,
      decay_rate=config.lr_gamma,
      staircase=True,
    )
  return optax.warmup_cosine_decay_schedule(
    0.0,
    config.lr,
    warmup_steps=config.warmup_steps,
    decay_steps=max(config.train.num_steps, config.warmup_steps + 1),
  )


def make_optimizer(config, kind):
  """AdamW (weight decay config.weight_decay) at `learning_rate`."""
  return optax.adamw(
    learning_rate(config, kind), weight_decay=config.weight_decay
  )


def train_runs(
  *,
  init_fn,
  loss_fn,
  tx,
  workdir,
  config,
  name,
  runs,
  seeds,
  data=None,
  batch_fn=None,
  lrs=None,
  sequential=False,
):
  """Trains R runs of one model as one sweep (`lib.train.run_sweep`).

  Run r draws its init, batch and loss keys from stream ("seed", seeds[r]) of
  the loop's keys, so a run is the same whichever stack it is trained in (a
  seed of a learning-rate sweep equals that seed trained alone at that rate).

  Args:
    init_fn: key -> params of one run.
    loss_fn: (params, batch, key) -> (loss, aux) of one run.
    tx: the optax optimizer; with `lrs`, one with unit learning rate.
    workdir, config, name: as `lib.train.train`.
    runs: R run names (the `run` column of metrics.jsonl).
    seeds: R integers.
    data: training data (placed once, shared by the runs).
    batch_fn: (data, key, step, order_key) -> batch of one run, `key` this
      step's and `order_key` the run's (the same at every step: an epoch
      order); None: the whole `data` is every run's batch.
    lrs: None, or R learning rates multiplying tx's updates.
    sequential: step the runs one after the other (`lax.map`) instead of
      vmapped: the same numbers up to float rounding. For compute-bound
      models: XLA:CPU runs R vmapped copies of the toy's cubic IKF kernel
      (an MLP over 100 x 100 (x, u) points) 1.4-3x slower than R sequential
      ones (measured).

  Returns:
    (SweepResult whose state is the stacked TrainState, finite [R] bool
    array: the run's final loss and parameters are finite). Divergence of a
    run is an outcome reported by the caller, not an error: a diverged run
    runs on (its NaN rollout counts as diverged in every metric).
  """
  num_runs = len(runs)
  settings = train_lib.sweep_stack(
    names=runs,
    seed=np.asarray(seeds, np.int32),
    lr=np.ones(num_runs) if lrs is None else np.asarray(lrs),
  )

  def run_key(key, setting):
    return rng.stream(key, "seed", setting["seed"])

  def init_one(key, setting):
    return train_lib.create_state(init_fn(run_key(key, setting)), tx)

  def step_one(state, batch, key, step, setting):
    del step
    key = rng.stream(run_key(key, setting), "loss")
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, aux), grads = grad_fn(state.params, batch, key)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    updates = jax.tree.map(lambda u: setting["lr"] * u, updates)
    params = optax.apply_updates(state.params, updates)
    metrics = {
      "loss": loss,
      "grad_norm": tree_lib.l2_norm(grads),
      "update_norm": tree_lib.l2_norm(updates),
      "param_norm": tree_lib.l2_norm(params),
      **aux,
    }
    return train_lib.TrainState(state.step + 1, params, opt_state), metrics

  batch_one = None
  if batch_fn is not None:
    order_root = train_lib.order_key(config)

    def batch_one(data, key, step, setting):
      order_key = run_key(order_root, setting)
      return batch_fn(data, run_key(key, setting), step, order_key)

  result = train_lib.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=workdir,
    config=config,
    data=data,
    batch_one=batch_one,
    name=name,
    watch=(),
    freeze_diverged=False,
    vectorize=not sequential,
  )
  finite = np.asarray(
    jax.jit(jax.vmap(tree_lib.all_finite))(result.state.params)
  )
  if result.rows:
    finite = finite & np.isfinite(final_losses(result))
  return result, finite


@jax.jit
def run_slice(tree, i):
  """Run i of a stacked pytree (jitted, `i` traced: one program per stack)."""
  return jax.tree.map(lambda a: a[i], tree)


def final_losses(result):
  """Last logged training loss of each run of a sweep (NaN when none)."""
  steps, loss = result.logged("loss")
  return loss[-1] if steps.size else np.full(len(result.settings), np.nan)


def seed_runs(num_seeds):
  return tuple(f"seed{s}" for s in range(num_seeds))


def rollout_metrics_fn(config, grid):
  """`solver.rollout_metrics` of this PDE and grid, jitted: one program for
  every model kind and seed (eagerly, each of its ~100 ops compiles alone)."""
  return jax.jit(
    lambda pred, true: solver.rollout_metrics(
      config.pde_name,
      pred,
      true,
      grid,
      stencil=config.h_stencil,
      corr_time=config.corr_time,
      corr_batch=config.corr_batch,
    )
  )


def train_and_rollout(kind, config, grid, train, val, workdir, metrics_fn):
  """Trains config.num_seeds runs of one model kind and rolls each out.

  Returns:
    (summary dict for results.json, per-seed metric dicts of host arrays,
    seed 0's first `num_plot` predicted trajectories, seed 0's H traces).
  """
  p = config.pde
  model_config = config.hns if kind == "hns" else config.cnn
  model = solver.build_model(kind, model_config, p.length)
  u, target = solver.training_targets(
    kind,
    config.pde_name,
    train,
    grid,
    p.dt,
    label_stencil=config.label_stencil,
    next_step_target=config.next_step_target,
  )
  parts = solver.task_parts(
    kind,
    model,
    grid,
    u,
    target,
    batch_size=config.batch_size,
    sampling=config.snapshot_sampling,
  )
  runs = seed_runs(config.num_seeds)
  swept, train_finite = train_runs(
    init_fn=parts["init_fn"],
    loss_fn=parts["loss_fn"],
    tx=make_optimizer(config, kind),
    workdir=os.path.join(workdir, kind),
    config=config.train,
    name=kind,
    runs=runs,
    seeds=range(config.num_seeds),
    data=parts["data"],
    batch_fn=parts["batch_fn"],
  )
  per_seed, plot, traces = [], None, None
  for s in range(config.num_seeds):
    pred = solver.rollout(
      kind,
      model,
      run_slice(swept.state.params, s),
      val[:, 0],
      grid,
      dt=p.dt,
      num_steps=p.rollout_steps,
      stencil=config.j_stencil,
      next_step_target=config.next_step_target,
    )
    m = jax.device_get(metrics_fn(pred, val))
    per_seed.append(m)
    if s == 0:
      plot = np.asarray(pred[: config.num_plot])
      traces = (np.asarray(m["h_true_trace"]), np.asarray(m["h_pred_trace"]))
  result = comparison.summarize(per_seed)
  result["final_train_loss_seeds"] = [float(v) for v in final_losses(swept)]
  result["final_train_loss"] = float(np.mean(result["final_train_loss_seeds"]))
  result["train_finite_seeds"] = [bool(f) for f in train_finite]
  result["num_params"] = int(
    tree_lib.num_params(run_slice(swept.state.params, 0))
  )
  rows = swept.rows
  result["steps_per_sec"] = rows[-1].get("steps_per_sec", 0.0) if rows else 0.0
  logging.info("%s: %s", kind, result)
  return result, per_seed, plot, traces


def train_every_kind(config, workdir, name, grid, train, val):
  """HNS then each of config.baselines: trained, rolled out, summarized.

  Returns:
    (results {kind: summary}, per_seed {kind: [metric dicts]}, preds {kind:
    seed 0's plotted trajectories}, traces {kind: seed 0's H traces}).
  """
  logging.info("data: train %s, val %s", train.shape, val.shape)
  kinds = ("hns", *config.baselines)
  sweep = train_lib.Sweep(len(kinds), name=name)
  results, per_seed, preds, traces = {}, {}, {}, {}
  metrics_fn = rollout_metrics_fn(config, grid)
  for kind in kinds:
    with sweep.run(f"{kind} ({config.num_seeds} seeds)"):
      results[kind], per_seed[kind], preds[kind], traces[kind] = (
        train_and_rollout(kind, config, grid, train, val, workdir, metrics_fn)
      )
  # The ceiling of this discretisation: HNS with the exact dH/du.
  p = config.pde
  oracle = solver.oracle_rollout(
    config.pde_name,
    val[:, 0],
    grid,
    dt=p.dt,
    num_steps=p.rollout_steps,
    stencil=config.j_stencil,
    label_stencil=config.label_stencil,
  )
  results["oracle"] = comparison.summarize(
    [jax.device_get(metrics_fn(oracle, val))]
  )
  results["oracle"]["units"] = "validation batches (one oracle, no seeds)"
  logging.info("oracle HNS (exact dH/du): %s", results["oracle"])
  return results, per_seed, preds, traces


def write(workdir, config, results, val, preds, traces, paper):
  """Adds the seeds, the paper's numbers and the figures; writes results."""
  results["num_seeds"] = config.num_seeds
  results["paper"] = paper
  results["figures"] = list(FIGURES)
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figures, workdir, config, val, preds, traces)
  return results


FIGURES = ("rollout.png", "hamiltonian.png")


def figures(workdir, config, val, preds, traces):
  """Space-time rollouts (truth / models) and the mean H[u_t] over time."""
  from experiments._plot import plt

  p = config.pde
  extent = (0.0, p.length, p.rollout_steps * p.dt, 0.0)
  panels = {"truth": np.asarray(val[0]), **{k: v[0] for k, v in preds.items()}}
  vmax = float(np.max(np.abs(panels["truth"])))
  fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 4))
  for ax, (name, field) in zip(axes, panels.items()):
    field = np.where(np.isfinite(field), field, np.nan)
    ax.imshow(
      field, aspect="auto", extent=extent, cmap="RdBu_r", vmin=-vmax, vmax=vmax
    )
    ax.set_title(name)
    ax.set_xlabel("x")
  axes[0].set_ylabel("t")
  fig.tight_layout()
  rollout_path = os.path.join(workdir, FIGURES[0])
  train_lib.save_figure(fig, rollout_path, dpi=100)

  # Relative drift of the batch-mean H on a log scale: a blown-up baseline
  # would otherwise flatten every other curve.
  t = np.arange(p.rollout_steps + 1) * p.dt
  fig, ax = plt.subplots(figsize=(5, 3.5))
  for name, (h_true, h_pred) in traces.items():
    drift = np.abs(h_pred - h_true) / np.maximum(np.abs(h_true), 1e-12)
    ax.semilogy(
      t[1:], np.where(np.isfinite(drift), drift, np.nan)[1:], label=name
    )
  ax.axvline(p.train_steps * p.dt, color="grey", ls=":", lw=1)
  ax.set_xlabel("t")
  ax.set_ylabel("|H[u_hat_t] - H[u_t]| / |H[u_t]| (non-diverged)")
  ax.legend()
  fig.tight_layout()
  h_path = os.path.join(workdir, FIGURES[1])
  train_lib.save_figure(fig, h_path, dpi=100)
