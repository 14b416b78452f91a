"""bench_hns smoke: steps/s of HNS and the CNN baseline and their ratios."""

import json

import numpy as np
import pytest

from configs import bench_hns as config_lib
from experiments import bench_hns
from tests import helpers


def test_smoke_writes_ratios(tmp_path, fast_compile):
  r = bench_hns.run(config_lib.get_config("gpu,smoke"), str(tmp_path))
  for kind in ("hns", "derivative_cnn"):
    assert r[kind]["train_steps_per_sec"] > 0
    assert r[kind]["rollout_steps_per_sec"] > 0
  ratios = r["ratios"]
  np.testing.assert_allclose(
    ratios["train_hns_over_cnn"],
    r["hns"]["train_steps_per_sec"]
    / r["derivative_cnn"]["train_steps_per_sec"],
  )
  with open(tmp_path / "results.json") as f:
    assert set(json.load(f)["ratios"]) == set(ratios)


def test_default_model_is_the_official_nf_layout():
  from lib.pde import hns

  config = config_lib.get_config("paper")
  assert dict(config.hns) == {**hns.OFFICIAL_NF, "film_hidden": (32, 32)}
  assert config.peer_repo == ""  # peer mode is opt-in


def test_peer_repo_that_is_not_the_official_code_fails_in_one_line(tmp_path):
  from lib.core import errors

  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.peer_repo = str(tmp_path)
  with pytest.raises(errors.ConfigError, match="config.peer_repo"):
    bench_hns.check_config(config)


def test_gpu_smoke_is_the_smoke_run():
  """`gpu,smoke` (run above, on CPU) and `smoke` differ only in name, so
  the one smoke run covers both; `gpu` itself parses and passes the checks."""
  diff = helpers.config_differences(
    config_lib.get_config("gpu,smoke"), config_lib.get_config("smoke")
  )
  assert set(diff) == {"variant"}, diff
  bench_hns.check_config(config_lib.get_config("gpu"))


def test_omega0_is_checked():
  from lib.core import errors

  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.hns.omega0 = 0.0  # SIREN's frequency: sin(0 x) = 0
  with pytest.raises(errors.ConfigError, match=r"config\.hns\.omega0=0\.0"):
    bench_hns.check_config(config)
