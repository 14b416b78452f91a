"""HNS H1: Hamiltonian neural solver vs du/dt and next-step CNNs on advection.

Generates exact advection trajectories, trains the integral-kernel functional
H_theta on analytic dH/du labels (relative L2, double backprop) and the CNN
baselines on Richardson du/dt / next-step increments, rolls every model out
5x past the training window and reports rollout relative L2, correlation
time and Hamiltonian error (Zhou & Barati Farimani, NeurIPS 2025, Table 2/4).

Run: python -m experiments.hns_advection --config configs/hns_advection.py:quick \
  --workdir runs/hns_advection
"""

import os

import jax.numpy as jnp
from absl import logging

from experiments import _cli
from experiments import _hns
from lib import pde
from lib import train as train_lib
from lib.core import rng

PAPER = {"hns_rollout": 0.0039, "cnn_rollout": 0.048, "h_error_ratio": 165.0}


def make_data(config):
  """Exact trajectories: train [B, train_steps + 1, n], val [B, R + 1, n]."""
  p = config.pde
  grid = pde.periodic_grid(p.n_x, p.length)
  root = rng.root_key(config.train.seed)
  sample = lambda name, num: pde.sample_sine_params(
    rng.stream(root, name),
    num,
    num_modes=p.num_modes,
    max_amplitude=p.max_amplitude,
    max_wavenumber=p.max_wavenumber,
  )
  t_train = jnp.arange(p.train_steps + 1) * p.dt
  t_val = jnp.arange(p.rollout_steps + 1) * p.dt
  train = pde.advection_trajectories(
    sample("train_ics", p.num_train), grid.x, t_train, length=p.length
  )
  val = pde.advection_trajectories(
    sample("val_ics", p.num_val), grid.x, t_val, length=p.length
  )
  return grid, train, val


def run(config, workdir) -> dict:
  grid, train, val = make_data(config)
  logging.info("data: train %s, val %s", train.shape, val.shape)
  results, preds, traces = {}, {}, {}
  for kind in ("hns", *config.baselines):
    results[kind], preds[kind], traces[kind] = _hns.train_and_rollout(
      kind, config, grid, train, val, workdir
    )
  base = results.get("derivative_cnn", {})
  hns_res = results["hns"]
  results["rollout_error"] = hns_res["rollout_error"]
  results["hamiltonian_error"] = hns_res["hamiltonian_error"]
  results["h_error_ratio"] = base.get("hamiltonian_error", float("nan")) / max(
    hns_res["hamiltonian_error"], 1e-30
  )
  results["paper"] = PAPER
  rollout_path, h_path = _hns.figures(workdir, config, val, preds, traces)
  results["figures"] = [
    os.path.basename(rollout_path),
    os.path.basename(h_path),
  ]
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run)
