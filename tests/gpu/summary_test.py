"""tests/gpu/summary.py on a planted run folder: counts, goals, missing parts."""

import json

from tests.gpu import summary

PYTEST_XML = """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="t" name="ok"/>
<testcase classname="t" name="bad"><failure message="codes differ: 0.998"/></testcase>
<testcase classname="t" name="off"><skipped message="needs a GPU"/></testcase>
</testsuite></testsuites>"""


def _write(path, obj):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(obj if isinstance(obj, str) else json.dumps(obj))


def test_summary_of_a_planted_gpu_run(tmp_path, capsys):
  _write(
    tmp_path / "logs" / "machine.log", "jax backend device: 0.11.2 gpu H200\n"
  )
  _write(
    tmp_path / "steps.tsv",
    "gpu_tests\tok\t12\tnote\nbench_cdflow\ttimeout(9s)\t9\t\n",
  )
  _write(tmp_path / "pytest.xml", PYTEST_XML)
  _write(tmp_path / "tests_report.jsonl", '{"test": "k", "codes_equal": 1.0}\n')
  linear = {"quartet_over_dense": 1.2, "ratio_iqr": [1.1, 1.3]}
  linear.update(quartet_ms=12.0, dense_ms=10.0)
  _write(
    tmp_path / "bench_mxfp4" / "results.json",
    {
      "linear": {"T8192_K8192_N8192_pallas": linear, "T1_K1_N1_ffi": {"error": "E"}},
      "gemm": {},
      "quantize": {"copy_gbps": 4000.0, "xla_quest_fraction_of_copy": 0.4,
                   "pallas_quest_fraction_of_copy": 0.6},
    },
  )  # fmt: skip
  train = {"speedup": 2.5, "speedup_lo": 1.5, "speedup_hi": 3.5}
  train.update(ours_s_per_step=1e-3, official_s_per_step=2.5e-3)
  _write(
    tmp_path / "bench_hns" / "results.json",
    {
      "ratios": {},
      "peer": {"train": train, "rollout": train, "loss_rel_diff": 0.0,
               "grad_rel_max_err": 1e-6},
    },
  )  # fmt: skip
  assert summary.main(["summary.py", str(tmp_path), "42"]) == 0
  text = capsys.readouterr().out
  assert "GPU run" in text and "passed 1, failed 1, skipped 1" in text
  assert "FAILED t::bad: codes differ: 0.998" in text
  assert "linear T1_K1_N1_ffi: ERROR E" in text
  assert "| bench_cdflow | timeout(9s) | 9 |" in text
  assert "bench_cdflow" in text and "no results" in text  # missing file
  goals = json.loads((tmp_path / "summary.json").read_text())["goals"]
  assert [g["met"] for g in goals] == [True, True, "unresolved"]
  assert "pallas_quest_fraction_of_copy 0.6" == goals[1]["value"]
