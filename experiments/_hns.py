"""Shared pieces of the HNS experiment binaries (hns_advection, hns_kdv).

Not an experiment: the two binaries train and roll out the same three model kinds (HNS,
derivative CNN, next-step CNN) and draw the same figures, so that code lives once, here.

References:
  Zhou & Barati Farimani. Hamiltonian Neural PDE Solvers. NeurIPS 2025.
"""

import os

import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from lib import train as train_lib
from lib.core import tree as tree_lib
from lib.pde import solver


def make_optimizer(config):
  schedule = optax.warmup_cosine_decay_schedule(
    0.0,
    config.lr,
    warmup_steps=config.warmup_steps,
    decay_steps=max(config.train.num_steps, config.warmup_steps + 1),
  )
  return optax.adamw(schedule, weight_decay=config.weight_decay)


def train_and_rollout(kind, config, grid, train, val, workdir):
  """Trains one model kind and rolls it out on the validation ICs."""
  p = config.pde
  model_config = config.hns if kind == "hns" else config.cnn
  model = solver.build_model(kind, model_config, p.length)
  u, target = solver.training_targets(
    kind, config.pde_name, train, grid, p.dt, label_stencil=config.label_stencil
  )
  task = train_lib.Task(
    **solver.task_parts(
      kind, model, grid, u, target, batch_size=config.batch_size
    )
  )
  state, history = train_lib.fit(
    task,
    make_optimizer(config),
    workdir=os.path.join(workdir, kind),
    config=config.train,
    name=kind,
  )
  pred = solver.rollout(
    kind,
    model,
    state.params,
    val[:, 0],
    grid,
    dt=p.dt,
    num_steps=p.rollout_steps,
    stencil=config.j_stencil,
  )
  m = solver.rollout_metrics(
    config.pde_name, pred, val, grid, stencil=config.h_stencil
  )
  result = {k: float(v) for k, v in m.items() if jnp.ndim(v) == 0}
  result["final_train_loss"] = history[-1]["loss"] if history else float("nan")
  result["num_params"] = int(tree_lib.num_params(state.params))
  result["steps_per_sec"] = history[-1].get("steps_per_sec", 0.0)
  traces = (np.asarray(m["h_true_trace"]), np.asarray(m["h_pred_trace"]))
  logging.info("%s: %s", kind, result)
  return result, np.asarray(pred[: config.num_plot]), traces


def figures(workdir, config, val, preds, traces):
  """Space-time rollouts (truth / models) and the mean H[u_t] over time."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

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
  rollout_path = os.path.join(workdir, "rollout.png")
  fig.savefig(rollout_path, dpi=100)
  plt.close(fig)

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
  ax.set_ylabel("|H[u_hat_t] - H[u_t]| / |H[u_t]|")
  ax.legend()
  fig.tight_layout()
  h_path = os.path.join(workdir, "hamiltonian.png")
  fig.savefig(h_path, dpi=100)
  plt.close(fig)
  return rollout_path, h_path
