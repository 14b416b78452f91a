"""HNS H2: KdV data by ETDRK4, training, rollouts, the best-baseline comparison."""

import os

import numpy as np
import pytest

from configs import hns_kdv as config_lib
from experiments import hns_kdv
from lib.core import errors
from lib.pde import comparison
from tests import helpers


def _seed(corr, h_err, finite):
  """One seed's rollout metrics, per trajectory, as rollout_metrics returns."""
  corr, h_err = np.asarray(corr, float), np.asarray(h_err, float)
  finite = np.asarray(finite)
  h_err = np.where(finite, h_err, np.inf)
  return {
    "correlation_time": corr.mean(),
    "hamiltonian_error": h_err.mean(),
    "finite_fraction": finite.mean(),
    "traj_correlation_time": corr,
    "traj_hamiltonian_error": h_err,
  }


def test_compare_counts_divergence_and_pairs_units():
  ok = [True, True]
  per_seed = {
    "hns": [_seed([10, 12], [1, 1], ok), _seed([11, 13], [2, 2], ok)],
    # Diverged on one trajectory per seed: inf H error, early decorrelation.
    "derivative_cnn": [
      _seed([3, 30], [1, 1], [True, False]),
      _seed([2, 30], [1, 1], [True, False]),
    ],
    "next_step_cnn": [_seed([9, 9], [4, 4], ok), _seed([8, 12], [4, 8], ok)],
  }
  baselines = ("derivative_cnn", "next_step_cnn")
  corr = comparison.compare(
    per_seed, "correlation_time", baselines, higher_is_better=True, ratio=False
  )
  # Mean correlation times 16.5 (du/dt, diverged) vs 9.5: the strongest
  # baseline is the diverged one, and the report must then read "no".
  assert corr["comparator"] == "derivative_cnn"
  assert corr["comparator_finite_fraction"] == 0.5
  assert corr["comparator_diverged"]
  # Paired over seeds: HNS - du/dt per seed = (11 - 16.5, 12 - 16) = -5.5, -4.
  d = np.asarray([-5.5, -4.0])
  half = 12.706204736174696 * np.std(d, ddof=1) / np.sqrt(2)  # t_{.975, 1}
  np.testing.assert_allclose(
    [corr["point"], corr["lo"], corr["hi"]],
    [d.mean(), d.mean() - half, d.mean() + half],
  )
  assert corr["units"] == "seeds" and corr["num_units"] == 2
  # On H error the diverged baseline scores inf: the next-step CNN is the
  # comparator; ratio = geometric mean of (4 / 1, 6 / 2).
  h = comparison.compare(
    per_seed, "hamiltonian_error", baselines, higher_is_better=False, ratio=True
  )
  assert h["comparator"] == "next_step_cnn" and not h["comparator_diverged"]
  np.testing.assert_allclose(h["point"], np.sqrt(4.0 * 3.0))
  # One seed: the units are the trajectories of that seed.
  one = {k: v[:1] for k, v in per_seed.items()}
  h1 = comparison.compare(
    one, "hamiltonian_error", baselines, higher_is_better=False, ratio=True
  )
  assert h1["units"] == "trajectories" and h1["num_units"] == 2
  np.testing.assert_allclose([h1["point"], h1["lo"], h1["hi"]], 4.0)


def test_every_baseline_diverged_is_flagged():
  per_seed = {
    "hns": [_seed([5, 5], [1, 1], [True, True])],
    "derivative_cnn": [_seed([1, 2], [1, 1], [False, False])],
    "next_step_cnn": [_seed([1, 1], [1, 1], [True, False])],
  }
  h = comparison.compare(
    per_seed,
    "hamiltonian_error",
    ("derivative_cnn", "next_step_cnn"),
    higher_is_better=False,
    ratio=True,
  )
  # All inf: the least diverged one, flagged, with no finite ratio.
  assert h["comparator"] == "next_step_cnn" and h["comparator_diverged"]
  assert not np.isfinite(h["point"])


def test_smoke_run_writes_results(tmp_path, fast_compile):
  config = config_lib.get_config("smoke")
  with config.unlocked():  # two kinds keep it short; compare() is tested above
    config.baselines = ("next_step_cnn",)
  r = hns_kdv.run(config, str(tmp_path))
  steps = config.pde.rollout_steps
  corr = r["corr_time_vs_best"]
  times = {b: r[b]["correlation_time"] for b in config.baselines}
  assert corr["comparator"] == max(times, key=times.get)
  assert 0 <= r["hns_corr_time"] <= steps + 1
  np.testing.assert_allclose(
    r["corr_time_gap"], r["hns_corr_time"] - corr["comparator_value"]
  )
  # One seed: the interval is over the validation trajectories.
  assert corr["units"] == "trajectories"
  assert corr["num_units"] == config.pde.num_val
  assert corr["lo"] <= corr["point"] <= corr["hi"]
  assert 0.0 <= r["hns"]["finite_fraction"] <= 1.0
  for fig in r["figures"]:
    assert os.path.exists(tmp_path / fig)
  helpers.check_claim_keys("hns_kdv", tmp_path)


def test_bad_config_fails_before_any_data(tmp_path):
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.cnn.derivative_stencil = "fourier"
  with pytest.raises(errors.ConfigError, match="config.cnn.derivative_stencil"):
    hns_kdv.run(config, str(tmp_path))


def test_data_are_kdv_trajectories():
  config = config_lib.get_config("smoke")
  grid, train, val = hns_kdv.make_data(config)
  p = config.pde
  assert train.shape == (p.num_train, p.train_steps + 1, p.n_x)
  assert val.shape == (p.num_val, p.rollout_steps + 1, p.n_x)
  # The spatial mean is a KdV invariant.
  mean = np.asarray(val).mean(axis=-1)
  np.testing.assert_allclose(mean, mean[:, :1] * np.ones_like(mean), atol=1e-5)
