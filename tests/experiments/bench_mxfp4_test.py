"""bench_mxfp4 smoke: every section runs and reports positive times and ratios."""

import json
import os
import time

import jax.numpy as jnp
import numpy as np

from configs import bench_mxfp4 as config_lib
from experiments import bench_mxfp4


def test_smoke(tmp_path, fast_compile):
  r = bench_mxfp4.run(config_lib.get_config("quick,smoke"), str(tmp_path))
  (row,) = r["linear"].values()
  assert row["quartet_ms"] > 0 and row["quartet_over_dense"] > 0
  assert r["quantize"]["quest_gbps"] > 0 and r["quantize"]["absmax_sr_gbps"] > 0
  (gemm,) = r["gemm"].values()
  assert gemm["xla_over_bf16"] > 0 and gemm["pallas_over_bf16"] > 0  # interpret
  with open(os.path.join(tmp_path, "results.json")) as f:
    assert json.load(f)["backend"] == "cpu"


def test_time_pair_rounds_and_ratio():
  def sleeper(seconds):
    def fn():
      time.sleep(seconds)
      return jnp.zeros(())

    return fn

  f, g = sleeper(0.002), sleeper(0.006)
  tf, tg, ratios = bench_mxfp4._time_pair(f, g, (), repeats=3)
  assert len(ratios) == 3  # min_seconds 0: exactly `repeats` rounds
  assert 2.0 < np.median(ratios) < 4.5  # 3x by construction, sleep jitter aside
  assert tf < tg
  # A long min_seconds stops at 10 x repeats.
  _, _, ratios = bench_mxfp4._time_pair(f, f, (), repeats=2, min_seconds=1e9)
  assert len(ratios) == 20
