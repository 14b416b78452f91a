"""A run killed with SIGKILL and restarted with the same command ends bitwise where an
uninterrupted run ends."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import orbax.checkpoint as ocp

from tests.helpers import REPO_ROOT

_ARGS = (
  "--config=configs/simplicity_bias.py:quick,smoke",
  "--config.spurious.enabled=false",
  "--config.optimizers=('adam',)",
  "--config.train.num_steps=6000",
  "--config.train.log_every=200",
  "--config.train.checkpoint_every=400",
)


def _cmd(workdir):
  return [
    sys.executable,
    "-m",
    "experiments.simplicity_bias",
    *_ARGS,
    f"--workdir={workdir}",
  ]


def _steps(ckpt_dir):
  if not os.path.isdir(ckpt_dir):
    return []
  return sorted(int(d) for d in os.listdir(ckpt_dir) if d.isdigit())


def _final_params(workdir):
  ckpt_dir = os.path.join(workdir, "adam", "ckpt")
  with ocp.CheckpointManager(ckpt_dir) as manager:
    restored = manager.restore(manager.latest_step())
  return manager.latest_step(), restored


def test_sigkill_then_resume_is_bitwise_identical(tmp_path):
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  clean, killed = str(tmp_path / "clean"), str(tmp_path / "killed")
  subprocess.run(
    _cmd(clean), cwd=REPO_ROOT, env=env, check=True, capture_output=True
  )

  proc = subprocess.Popen(
    _cmd(killed),
    cwd=REPO_ROOT,
    env=env,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
  )
  ckpt_dir = os.path.join(killed, "adam", "ckpt")
  deadline = time.time() + 240
  while time.time() < deadline and proc.poll() is None:
    if _steps(ckpt_dir) and _steps(ckpt_dir)[-1] >= 400:
      break
    time.sleep(0.02)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  interrupted_at = _steps(ckpt_dir)
  assert interrupted_at and interrupted_at[-1] < 6000, interrupted_at

  subprocess.run(
    _cmd(killed), cwd=REPO_ROOT, env=env, check=True, capture_output=True
  )
  step_a, a = _final_params(clean)
  step_b, b = _final_params(killed)
  assert step_a == step_b == 6000
  leaves_a = [np.asarray(x) for x in _leaves(a)]
  leaves_b = [np.asarray(x) for x in _leaves(b)]
  assert len(leaves_a) == len(leaves_b) > 0
  for x, y in zip(leaves_a, leaves_b):
    np.testing.assert_array_equal(x, y)
  # The metrics file ends as the uninterrupted run's (no duplicate or missing lines).
  read = lambda w: (
    open(os.path.join(w, "adam", "metrics.jsonl")).read().splitlines()
  )
  strip = lambda lines: [x.split(', "steps_per_sec"')[0] for x in lines]
  assert strip(read(clean)) == strip(read(killed))


def _leaves(tree):
  import jax

  return jax.tree.leaves(tree)
