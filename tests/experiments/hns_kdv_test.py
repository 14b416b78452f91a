"""HNS H2 smoke: KdV data by ETDRK4, training, rollouts, correlation times."""

import os

import numpy as np

from configs import hns_kdv as config_lib
from experiments import hns_kdv


def test_smoke_run_writes_results(tmp_path, fast_compile):
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.baselines = ("derivative_cnn",)
  r = hns_kdv.run(config, str(tmp_path))
  steps = config.pde.rollout_steps
  for key in ("hns_corr_time", "cnn_corr_time"):
    assert 0 <= r[key] <= steps + 1
  assert r["corr_time_gap"] == r["hns_corr_time"] - r["cnn_corr_time"]
  assert np.isfinite(r["hns"]["hamiltonian_error"])
  for fig in r["figures"]:
    assert os.path.exists(tmp_path / fig)


def test_data_are_kdv_trajectories():
  config = config_lib.get_config("smoke")
  grid, train, val = hns_kdv.make_data(config)
  p = config.pde
  assert train.shape == (p.num_train, p.train_steps + 1, p.n_x)
  assert val.shape == (p.num_val, p.rollout_steps + 1, p.n_x)
  # The spatial mean is a KdV invariant.
  mean = np.asarray(val).mean(axis=-1)
  np.testing.assert_allclose(mean, mean[:, :1] * np.ones_like(mean), atol=1e-5)
