"""HNS H1: Hamiltonian neural solver vs du/dt and next-step CNNs on advection.

Generates exact advection trajectories, trains the integral-kernel functional
H_theta on analytic dH/du labels (relative L2, double backprop) and the CNN
baselines on Richardson du/dt / next states u_{t+1} (or increments:
config.next_step_target), rolls every model out 5x past the training window
and reports rollout relative L2, correlation time and Hamiltonian error (Zhou
& Barati Farimani, NeurIPS 2025, Table 2/4).

Every model trains `config.num_seeds` seeds (one vmapped run stack each);
divergence is counted in every metric and HNS is compared with the strongest
baseline, paired over seeds (see experiments/_hns.py). When the HNS rollout
uses a J the CNNs would not otherwise see (the quick variant's spectral J),
the CNNs get J u as a second input channel (config.cnn.derivative_stencil).

Run: python -m experiments.hns_advection --config configs/hns_advection.py:quick \
  --workdir runs/hns_advection
"""

import jax.numpy as jnp

from experiments import _cli
from experiments import _hns
from lib import pde
from lib import train as train_lib
from lib.core import rng
from lib.pde import comparison

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


def check_config(config) -> None:
  _hns.check_pde_config(config, "advection")


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  grid, train, val = make_data(config)
  results, per_seed, preds, traces = _hns.train_every_kind(
    config, workdir, "hns_advection", grid, train, val
  )
  hns_res = results["hns"]
  for key in ("rollout_error", "hamiltonian_error"):
    for suffix in ("", "_lo", "_hi"):
      results[key + suffix] = hns_res[key + suffix]
  # The claims: HNS vs the strongest baseline (divergence counted), paired
  # over seeds; how many times lower HNS's H error / rollout error is.
  for key, metric in (
    ("h_error_vs_best", "hamiltonian_error"),
    ("rollout_vs_best", "rollout_error"),
  ):
    results[key] = comparison.compare(
      per_seed, metric, config.baselines, higher_is_better=False, ratio=True
    )
  results["h_error_ratio"] = results["h_error_vs_best"]["point"]
  results["cnn_derivative_stencil"] = config.cnn.derivative_stencil
  results["j_stencil"] = config.j_stencil
  return _hns.write(workdir, config, results, val, preds, traces, PAPER)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
