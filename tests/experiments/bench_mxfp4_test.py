"""bench_mxfp4 smoke: every section runs and reports positive times and ratios."""

import json
import os

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
