"""Fault injection for experiment binaries: SIGKILL mid-run, rerun, compare.

`kill_and_resume(module, args, tmp_path, ...)` runs the binary once to the end
(the reference), starts it again in a fresh workdir, SIGKILLs it as soon as a
trigger holds (after the n-th checkpoint save, n drawn at random, or while a
checkpoint is being written), reruns the same command to the end, and asserts
that the resumed run ends bitwise where the reference ended: every final
checkpoint leaf and every metrics.jsonl row (`steps_per_sec` aside).

It knows nothing about the experiment: it finds every `ckpt/` folder below the
workdir, and reads the `config.json` next to each (written by `lib.train.train`)
for `num_steps` and `checkpoint_every`, which give the number of saves. To
parametrise it over every training experiment, pass each binary's smoke args.
"""

import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np

from tests.helpers import JAX_CACHE_DIR
from tests.helpers import REPO_ROOT

TMP_MARK = ".orbax-checkpoint-tmp"


def command(module: str, args, workdir) -> list[str]:
  return [sys.executable, "-m", module, *args, f"--workdir={workdir}"]


def _env() -> dict:
  # The reference, killed and resumed runs compile the same programs: a
  # persistent compilation cache shared by the three (one per test session)
  # compiles them once. Cached executables are the compiled ones, so the
  # bitwise comparison is unaffected.
  return dict(
    os.environ,
    JAX_PLATFORMS="cpu",
    JAX_COMPILATION_CACHE_DIR=JAX_CACHE_DIR,
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.2",
  )


def run_to_end(module: str, args, workdir, timeout: float = 300):
  """Runs the binary; fails the test with its stderr tail unless it exits 0."""
  proc = subprocess.run(
    command(module, args, workdir),
    cwd=REPO_ROOT,
    env=_env(),
    capture_output=True,
    text=True,
    timeout=timeout,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def ckpt_dirs(workdir) -> list[str]:
  """Every `ckpt` folder below `workdir` (one per trained model or sweep)."""
  out = []
  for root, dirs, _ in os.walk(workdir):
    if os.path.basename(root) == "ckpt":
      dirs[:] = []
      out.append(root)
  return sorted(out)


def _steps(ckpt_dir) -> list[int]:
  try:
    return sorted(int(d) for d in os.listdir(ckpt_dir) if d.isdigit())
  except FileNotFoundError:
    return []


def saved(workdir) -> set[tuple[str, int]]:
  """(ckpt folder, step) of every committed checkpoint present now."""
  return {(d, s) for d in ckpt_dirs(workdir) for s in _steps(d)}


def writing(workdir) -> bool:
  """Whether a checkpoint write is in progress (an orbax tmp folder exists)."""
  for d in ckpt_dirs(workdir):
    try:
      if any(TMP_MARK in name for name in os.listdir(d)):
        return True
    except FileNotFoundError:
      pass
  return False


def num_saves(workdir) -> int:
  """Checkpoint saves of a finished run: every checkpoint_every, and the end."""
  total = 0
  for d in ckpt_dirs(workdir):
    cfg_file = os.path.join(os.path.dirname(d), "config.json")
    try:
      with open(cfg_file) as f:
        cfg = json.load(f)
      total += max(1, math.ceil(cfg["num_steps"] / cfg["checkpoint_every"]))
    except (OSError, KeyError, ValueError, ZeroDivisionError):
      total += 1
  return total


def kill_when(module, args, workdir, trigger, *, timeout=240, poll_s=0.002):
  """Starts the binary; SIGKILLs it once `trigger(workdir)` holds.

  Returns:
    True if it was killed while running, False if it ended first.
  """
  proc = subprocess.Popen(
    command(module, args, workdir),
    cwd=REPO_ROOT,
    env=_env(),
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
  )
  deadline = time.time() + timeout
  try:
    while proc.poll() is None and time.time() < deadline:
      if trigger(workdir):
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True
      time.sleep(poll_s)
    return False
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.wait()


def after_saves(n: int):
  """A trigger: at least `n` distinct checkpoint saves have been seen."""
  seen = set()

  def trigger(workdir):
    seen.update(saved(workdir))
    return len(seen) >= n

  return trigger


def final_leaves(workdir) -> dict:
  """{ckpt folder relative to workdir: (step, leaves)} of the newest steps."""
  import jax
  import orbax.checkpoint as ocp

  out = {}
  for d in ckpt_dirs(workdir):
    steps = _steps(d)
    assert steps, f"no checkpoint in {d}"
    path = os.path.join(d, str(steps[-1]), "default")
    with ocp.StandardCheckpointer() as ckptr:
      tree = ckptr.restore(path)
    leaves = [np.asarray(x) for x in jax.tree.leaves(tree)]
    out[os.path.relpath(d, workdir)] = (steps[-1], leaves)
  return out


def metrics_rows(workdir) -> dict:
  """{metrics.jsonl relative to workdir: rows without steps_per_sec}."""
  out = {}
  for root, _, files in os.walk(workdir):
    if "metrics.jsonl" in files:
      path = os.path.join(root, "metrics.jsonl")
      with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
      for row in rows:
        row.pop("steps_per_sec", None)
      out[os.path.relpath(path, workdir)] = rows
  return out


def assert_same_run(reference, resumed) -> None:
  """Final checkpoints bitwise equal; metrics.jsonl rows equal."""
  a, b = final_leaves(reference), final_leaves(resumed)
  assert a.keys() == b.keys(), (sorted(a), sorted(b))
  for key in a:
    (step_a, leaves_a), (step_b, leaves_b) = a[key], b[key]
    assert step_a == step_b, (key, step_a, step_b)
    assert len(leaves_a) == len(leaves_b) > 0, key
    for x, y in zip(leaves_a, leaves_b):
      np.testing.assert_array_equal(x, y, err_msg=key)
  assert metrics_rows(reference) == metrics_rows(resumed)


def kill_and_resume(
  module: str,
  args,
  tmp_path,
  *,
  rng: np.random.Generator,
  reference=None,
  during_write: bool = False,
  tries: int = 4,
) -> dict:
  """SIGKILL a run (at a random save, or during a write), rerun, compare.

  Args:
    module: e.g. "experiments.simplicity_bias".
    args: its flags (a smoke config with several checkpoint saves).
    tmp_path: a pathlib folder for the workdirs.
    rng: draws the save after which to kill.
    reference: the workdir of a finished run with the same args (else one is
      run here).
    during_write: kill while an orbax tmp folder exists, i.e. mid-write.
    tries: a run may end before the trigger fires; try again this often.

  Returns:
    {"reference", "killed" (workdirs), "when" (the trigger, in words),
    "saves_seen_at_kill", "tries"}.
  """
  if reference is None:
    reference = str(tmp_path / "reference")
    run_to_end(module, args, reference)
  total = num_saves(reference)
  assert total >= 2, f"{module}: needs >= 2 checkpoint saves, has {total}"
  for attempt in range(tries):
    killed = str(tmp_path / f"killed{attempt}")
    if during_write:
      when, trigger = "during a checkpoint write", writing
    else:
      n = int(rng.integers(1, total))
      when, trigger = f"after checkpoint save {n} of {total}", after_saves(n)
    if kill_when(module, args, killed, trigger):
      break
  else:
    raise AssertionError(f"{module} ended before every one of {tries} kills")
  at_kill = sorted(saved(killed))
  run_to_end(module, args, killed)
  try:
    assert_same_run(reference, killed)
  except AssertionError as e:
    raise AssertionError(
      f"{module} killed {when} (checkpoints then: {at_kill}) did not resume "
      f"bitwise: {e}"
    ) from None
  return {
    "reference": reference,
    "killed": killed,
    "when": when,
    "saves_seen_at_kill": len(at_kill),
    "tries": attempt + 1,
  }
