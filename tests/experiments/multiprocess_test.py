"""Two processes, one run: process 0 alone writes figures, results, metrics and progress.

The documented localhost set-up (WORKSPACE.md): JAX_COORDINATOR_ADDRESS,
JAX_NUM_PROCESSES, JAX_PROCESS_ID and `--distributed`, 2 processes x 4 CPU devices,
one shared workdir. A `sitecustomize` on each process's path records every
`Figure.savefig` call to a per-process file, so the test sees who wrote figures.
"""

import os

from lib import train as train_lib
from tests import helpers

_SITECUSTOMIZE = """
import os
import matplotlib.figure

_save = matplotlib.figure.Figure.savefig

def _recording_savefig(self, fname, *args, **kwargs):
  with open(os.environ["SAVEFIG_LOG"], "a") as f:
    f.write(str(getattr(fname, "name", fname)) + "\\n")
  return _save(self, fname, *args, **kwargs)

matplotlib.figure.Figure.savefig = _recording_savefig
"""


def test_two_process_hns_toy_writes_one_set_of_outputs(tmp_path):
  hook = tmp_path / "hook"
  hook.mkdir()
  (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
  workdir = tmp_path / "run"
  logs = helpers.run_two_processes(
    "experiments.hns_toy",
    "--config=configs/hns_toy.py:quick,smoke",
    "--config.functionals=('linear',)",
    f"--workdir={workdir}",
    env={
      pid: {
        "PYTHONPATH": os.pathsep.join([str(hook), helpers.REPO_ROOT]),
        "SAVEFIG_LOG": str(tmp_path / f"savefig_{pid}.log"),
      }
      for pid in range(2)
    },
  )

  figures = [tmp_path / f"savefig_{pid}.log" for pid in range(2)]
  assert figures[0].exists() and figures[0].read_text().strip(), logs[0][-2000:]
  assert not figures[1].exists(), figures[1].read_text()
  assert (workdir / "results.json").exists()

  def progress_lines(log):
    return [line for line in log.splitlines() if " steps/s " in line]

  assert progress_lines(logs[0]), logs[0][-2000:]
  assert progress_lines(logs[1]) == [], progress_lines(logs[1])[:3]
  # One metrics stream: every (step, run) row once (process 1 appended none).
  rows = train_lib.read_jsonl(workdir / "linear_ikf" / "lr_sweep")
  keys = [(r["step"], r.get("run")) for r in rows]
  assert len(keys) == len(set(keys)) > 0, keys
