"""Two processes, one run: process 0 alone writes figures, results, metrics and progress.

The documented localhost set-up (WORKSPACE.md): JAX_COORDINATOR_ADDRESS,
JAX_NUM_PROCESSES, JAX_PROCESS_ID and `--distributed`, 2 processes x 4 CPU devices,
one shared workdir. A `sitecustomize` on each process's path records every
`Figure.savefig` call to a per-process file, so the test sees who wrote figures.
"""

import os
import socket
import subprocess
import sys

from lib import train as train_lib
from tests.helpers import REPO_ROOT

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


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_two_process_hns_toy_writes_one_set_of_outputs(tmp_path):
  hook = tmp_path / "hook"
  hook.mkdir()
  (hook / "sitecustomize.py").write_text(_SITECUSTOMIZE)
  port = _free_port()
  workdir = tmp_path / "run"
  procs = []
  for pid in range(2):
    env = dict(
      os.environ,
      JAX_PLATFORMS="cpu",
      JAX_NUM_CPU_DEVICES="4",
      JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
      JAX_NUM_PROCESSES="2",
      JAX_PROCESS_ID=str(pid),
      PYTHONPATH=os.pathsep.join([str(hook), REPO_ROOT]),
      SAVEFIG_LOG=str(tmp_path / f"savefig_{pid}.log"),
    )
    cmd = [
      sys.executable,
      "-m",
      "experiments.hns_toy",
      "--distributed",
      "--config=configs/hns_toy.py:quick,smoke",
      "--config.functionals=('linear',)",
      f"--workdir={workdir}",
    ]
    procs.append(
      subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
      )
    )
  logs = []
  try:
    logs = [p.communicate(timeout=300)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]

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
