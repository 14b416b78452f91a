"""HNS H1 smoke: advection training, rollouts, metrics, figures."""

import os

import numpy as np

from configs import hns_advection as config_lib
from experiments import hns_advection


def test_smoke_run_writes_results(tmp_path, fast_compile):
  config = config_lib.get_config("smoke")
  r = hns_advection.run(config, str(tmp_path))
  for kind in ("hns", "derivative_cnn", "next_step_cnn"):
    res = r[kind]
    assert res["finite_fraction"] == 1.0, kind
    assert np.isfinite(res["rollout_error"]) and res["rollout_error"] > 0
    assert 0 < res["correlation_time"] <= config.pde.rollout_steps + 1
    assert os.path.exists(tmp_path / kind / "metrics.jsonl")
  assert r["rollout_error"] == r["hns"]["rollout_error"]
  assert np.isclose(
    r["h_error_ratio"],
    r["derivative_cnn"]["hamiltonian_error"] / r["hns"]["hamiltonian_error"],
  )
  for fig in r["figures"]:
    assert os.path.exists(tmp_path / fig)
  assert (tmp_path / "results.json").exists()


def test_paper_config_matches_paper():
  config = config_lib.get_config()
  p = config.pde
  assert (p.n_x, p.length, p.dt) == (128, 16.0, 0.02)
  assert p.train_steps * p.dt == 4.0 and p.rollout_steps * p.dt == 20.0
  assert (p.num_train, p.num_val) == (1024, 256)
