"""One run per workdir, and SIGTERM anywhere in a run (issue 32).

Two binaries started at once on one workdir: exactly one runs, the other
stops with one line naming the holder, and metrics.jsonl ends as an
uninterrupted run's (no duplicated rows). SIGTERM in an evaluation phase
outside any training loop: the "preempted" line, exit code 143, no
traceback, and a rerun ends bitwise where an uninterrupted run ends. Both
reuse the session's finished simplicity_bias run (conftest.py) as the
reference. The lock and the signal handling themselves are checked in
process.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from lib.core import errors
from lib.train import preemption
from lib.train import workdir as workdir_lib
from tests.helpers import REPO_ROOT
from tests.reliability import _kill
from tests.reliability.conftest import SIMPLICITY_BIAS
from tests.reliability.conftest import SIMPLICITY_BIAS_ARGS


def _start(argv):
  return subprocess.Popen(
    argv,
    cwd=REPO_ROOT,
    env=_kill._env(),
    stdout=subprocess.DEVNULL,
    stderr=subprocess.PIPE,
    text=True,
  )


def _results(workdir) -> dict:
  with open(os.path.join(workdir, "results.json")) as f:
    return json.load(f)


def test_two_runs_on_one_workdir_one_runs(tmp_path, simplicity_bias_reference):
  workdir = str(tmp_path / "run")
  argv = _kill.command(SIMPLICITY_BIAS, SIMPLICITY_BIAS_ARGS, workdir)
  procs = [_start(argv), _start(argv)]
  errs = [p.communicate(timeout=300)[1] for p in procs]
  codes = sorted(p.returncode for p in procs)
  assert codes == [0, 1], (codes, [e[-2000:] for e in errs])
  winner = procs[[p.returncode for p in procs].index(0)]
  refused = errs[[p.returncode for p in procs].index(1)]
  last = refused.strip().splitlines()[-1]
  assert "Traceback" not in refused, refused[-3000:]
  assert last.startswith("error: workdir "), last
  assert f"is in use by pid {winner.pid} on host " in last, last
  # One run's rows, each once, as in the uninterrupted reference.
  _kill.assert_same_run(simplicity_bias_reference, workdir)
  assert not os.path.exists(os.path.join(workdir, workdir_lib.LOCK_FILE))


# Runs the binary, sending itself SIGTERM when the evaluation after training
# (the decision boundary's zero crossings) starts: no training loop is active.
_SIGTERM_IN_EVALUATION = """
import os, signal, sys
from experiments import _cli
from experiments import simplicity_bias as sb
crossing = sb.two_layer.boundary_crossing
def boundary_crossing(*args, **kwargs):
  os.kill(os.getpid(), signal.SIGTERM)
  return crossing(*args, **kwargs)
sb.two_layer.boundary_crossing = boundary_crossing
sys.argv[0] = "simplicity_bias"
_cli.main(sb.run)
"""


def test_sigterm_in_evaluation_stops_and_resumes_bitwise(
  tmp_path, simplicity_bias_reference
):
  workdir = str(tmp_path / "run")
  argv = [sys.executable, "-c", _SIGTERM_IN_EVALUATION]
  argv += [*SIMPLICITY_BIAS_ARGS, f"--workdir={workdir}"]
  proc = subprocess.run(
    argv,
    cwd=REPO_ROOT,
    env=_kill._env(),
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert proc.returncode == 128 + signal.SIGTERM, proc.stderr[-3000:]
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  last = proc.stderr.strip().splitlines()[-1]
  assert "preempted (SIGTERM)" in last, last
  assert "rerun the same command to resume" in last, last
  assert not os.path.exists(os.path.join(workdir, "results.json"))
  _kill.run_to_end(SIMPLICITY_BIAS, SIMPLICITY_BIAS_ARGS, workdir)
  _kill.assert_same_run(simplicity_bias_reference, workdir)
  assert _results(workdir) == _results(simplicity_bias_reference)


def test_lock_names_the_holder_and_takes_over_a_stale_one(tmp_path, caplog):
  workdir = str(tmp_path / "run")
  with workdir_lib.lock(workdir):
    # flock belongs to an open file: a second open conflicts, even here.
    with pytest.raises(errors.WorkdirError, match=f"pid {os.getpid()} on "):
      with workdir_lib.lock(workdir):
        pass
  assert not os.listdir(workdir)  # released: the lock file is gone
  # A lock file left by a run killed with SIGKILL: nobody holds its flock.
  with open(os.path.join(workdir, workdir_lib.LOCK_FILE), "w") as f:
    f.write('{"pid": 999999999, "host": "elsewhere"}\n')
  with workdir_lib.lock(workdir):
    with open(os.path.join(workdir, workdir_lib.LOCK_FILE)) as f:
      assert json.load(f)["pid"] == os.getpid()
  assert "stale lock" in caplog.text and "pid 999999999" in caplog.text


@pytest.fixture
def handlers():
  preemption.install()
  try:
    yield
  finally:
    preemption.uninstall()


def test_signal_outside_a_region_stops_at_once(handlers):
  with pytest.raises(preemption.Preempted, match=r"preempted \(SIGINT\)") as e:
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10**7):  # Python runs the handler between bytecodes
      pass
  assert e.value.exit_code == 130


def test_signal_in_a_region_waits_for_its_safe_point(handlers):
  reached = []
  with pytest.raises(preemption.Preempted, match=r"\(SIGTERM\)"):
    with preemption.deferred():
      os.kill(os.getpid(), signal.SIGTERM)
      reached.append("work after the signal")
      assert preemption.requested()
  assert reached
  # A second signal while one is pending does not wait.
  preemption.uninstall()
  preemption.install()
  with pytest.raises(preemption.Preempted):
    with preemption.deferred():
      os.kill(os.getpid(), signal.SIGTERM)
      os.kill(os.getpid(), signal.SIGTERM)
      reached.append("not reached")
  assert reached == ["work after the signal"]


def test_preempted_is_not_an_exception():
  """`except Exception` (a damaged-checkpoint fallback, a figure guard) must
  never swallow a stop."""
  assert not issubclass(preemption.Preempted, Exception)
  assert not workdir_lib.draw_figure(lambda: 1 / 0)
  with pytest.raises(preemption.Preempted):
    workdir_lib.draw_figure(_raise_preempted)


def _raise_preempted():
  raise preemption.Preempted("stop")
