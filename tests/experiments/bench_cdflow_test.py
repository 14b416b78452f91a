"""bench_cdflow smoke: tiny sizes, checks the JSON and figure (no timing claims)."""

import json
import os

from configs import bench_cdflow as config_lib
from experiments import bench_cdflow
from tests import helpers


def test_smoke_writes_ratios_and_figure(tmp_path):
  config = config_lib.get_config("gpu,smoke")
  r = bench_cdflow.run(config, str(tmp_path))
  assert set(r["per_n"]) == {str(n) for n in config.sizes}
  for row in r["per_n"].values():
    for key in (
      "logdet_speedup",
      "inverse_speedup_vs_solve",
      "forward_speedup",
    ):
      assert row[key] > 0
  with open(tmp_path / "bench.json") as f:
    assert json.load(f)["reference_n"] == config.reference_n
  assert os.path.exists(tmp_path / "bench_cdflow.png")
  helpers.check_claim_keys("bench_cdflow", tmp_path)


def test_gpu_smoke_is_the_smoke_run():
  """`gpu,smoke` (run above, on CPU) and `smoke` differ only in name, so
  the one smoke run covers both; `gpu` itself parses and passes the checks."""
  diff = helpers.config_differences(
    config_lib.get_config("gpu,smoke"), config_lib.get_config("smoke")
  )
  assert set(diff) == {"variant"}, diff
  bench_cdflow.check_config(config_lib.get_config("gpu"))
