"""bench_hns smoke: steps/s of HNS and the CNN baseline and their ratios."""

import json

import numpy as np

from configs import bench_hns as config_lib
from experiments import bench_hns


def test_smoke_writes_ratios(tmp_path, fast_compile):
  r = bench_hns.run(config_lib.get_config("smoke"), str(tmp_path))
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
