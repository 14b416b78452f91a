"""Shared test helpers: run an experiment binary as a user would."""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_binary(module: str, *args: str, timeout: float = 300, env=None):
  """Runs `python -m <module> args...` from the repo root; returns CompletedProcess."""
  full_env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
  return subprocess.run(
    [sys.executable, "-m", module, *args],
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    timeout=timeout,
    env=full_env,
  )
