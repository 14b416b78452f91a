"""bench_mxfp4 smoke: every section runs and reports positive times and ratios."""

import json
import os

from configs import bench_mxfp4 as config_lib
from experiments import bench_mxfp4
from tests import helpers


def test_gpu_variant_smoke_on_cpu(tmp_path, fast_compile):
  """`gpu,smoke` on CPU: every section and implementation the GPU run times
  (Pallas in interpret mode, the CPU FFI library) reports positive ratios."""
  helpers.ffi_library("cpu")
  config = config_lib.get_config("gpu,smoke")
  r = bench_mxfp4.run(config, str(tmp_path))
  assert set(r["linear"]) == {
    f"T64_K64_N64{f'_{i}' if i else ''}" for i in config.linear_implementations
  }
  for row in r["linear"].values():
    assert row["quartet_ms"] > 0 and row["quartet_over_dense"] > 0, row
  q = r["quantize"]
  assert q["copy_gbps"] > 0
  for impl in config.quantize_implementations:
    for method in ("quest", "absmax_sr"):
      key = f"{impl}_{method}" if impl else method
      assert q[f"{key}_gbps"] > 0 and q[f"{key}_fraction_of_copy"] > 0, q
  (gemm,) = r["gemm"].values()
  for impl in config.gemm_implementations:  # Pallas: interpret mode here
    assert gemm[f"{impl}_over_bf16"] > 0, gemm
    assert gemm[f"{impl}_quantize_gemm_over_bf16"] > 0, gemm
  with open(os.path.join(tmp_path, "results.json")) as f:
    assert json.load(f)["backend"] == "cpu"
  helpers.check_claim_keys("bench_mxfp4", tmp_path)


def test_gpu_smoke_covers_quick_smoke():
  """quick,smoke (the reproduce report's smoke run) differs from the gpu,smoke
  run above only by its name and by implementation lists that gpu,smoke
  includes, so that one run covers both."""
  gpu = config_lib.get_config("gpu,smoke")
  quick = config_lib.get_config("quick,smoke")
  diff = helpers.config_differences(gpu, quick)
  assert diff.pop("variant") == ("gpu", "quick")
  for key, (in_gpu, in_quick) in diff.items():
    assert key.endswith("implementations") and set(in_quick) <= set(in_gpu)
  bench_mxfp4.check_config(quick)
