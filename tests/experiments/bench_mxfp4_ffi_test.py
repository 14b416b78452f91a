"""Smoke run of the MXFP4 FFI bench on the CPU library."""

import json
import os
import shutil

import pytest

from configs import bench_mxfp4_ffi as config_lib
from experiments import bench_mxfp4_ffi
from pallas_kernels.mxfp4.ffi import build
from tests import helpers


def test_smoke_run_writes_exact_results(tmp_path):
  if shutil.which("g++") is None:
    pytest.skip("g++ not found")
  build.build_cpu()
  results = bench_mxfp4_ffi.run(
    config_lib.get_config("gpu,smoke"), str(tmp_path)
  )
  assert results["path"] == "cpu"
  (case,) = results["gemm"].values()
  # The CPU GEMM accumulates exact products in fp32: ~1e-7 of the output.
  assert case["max_rel_err"] < 1e-5
  assert case["ms_ffi"] > 0 and case["speedup_vs_bf16_dot"] > 0
  (nv,) = results["nvfp4_gemm"].values()  # the NVFP4 GEMM, same checks
  assert nv["max_rel_err"] < 1e-5 and nv["path"] == "cpu"
  # Unrotated quantization is bit-exact against the jnp reference.
  assert results["quantize"]["quest_norot"]["codes_equal"] == 1.0
  assert results["quantize"]["absmax_sr_norot"]["scales_equal"] == 1.0
  # The custom_vjp through the FFI: same values and grads as the XLA path.
  assert max(results["quartet_linear"].values()) < 1e-5
  with open(os.path.join(tmp_path, "results.json")) as f:
    assert json.load(f)["path"] == "cpu"


def test_gpu_smoke_is_the_quick_smoke_run():
  """`gpu,smoke` (run above, on CPU) and `quick,smoke` differ only in name, so
  the one smoke run covers both; `gpu` itself parses and passes the checks."""
  diff = helpers.config_differences(
    config_lib.get_config("gpu,smoke"), config_lib.get_config("quick,smoke")
  )
  assert set(diff) == {"variant"}, diff
  bench_mxfp4_ffi.check_config(config_lib.get_config("gpu"))
