"""HNS H0 smoke: the toy-functional experiment runs and writes its outputs."""

import json
import os

import numpy as np

from configs import hns_toy as config_lib
from experiments import hns_toy


def test_smoke_run_writes_results(tmp_path, fast_compile):
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.functionals = ("linear",)
  r = hns_toy.run(config, str(tmp_path))
  lin = r["linear"]
  for model in ("ikf", "mlp"):
    for key in ("grad_mse", "ood_grad_mse", "disc_grad_mse", "f_mse"):
      assert np.isfinite(lin[model][key]), (model, key)
  assert lin["grad_mse_ratio"] > 0
  # A linear IKF's derivative does not depend on u: in- and out-of-
  # distribution coefficients give the same error against x^2.
  np.testing.assert_allclose(
    lin["ikf"]["grad_mse"], lin["ikf"]["ood_grad_mse"], rtol=1e-4
  )
  assert os.path.exists(tmp_path / "functional_derivatives.png")
  with open(tmp_path / "results.json") as f:
    assert json.load(f)["linear"]["ikf"]["num_params"] > 0


def test_quick_config_matches_paper_setting():
  config = config_lib.get_config("quick")
  assert (config.data.num_train, config.data.num_val) == (100, 10)
  assert (config.data.n_x, config.data.lo, config.data.hi) == (100, -1.0, 1.0)
