"""Shared test helpers: run an experiment binary as a user would."""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# JAX's persistent compilation cache for this test session (both xdist
# workers and the binaries they start): conftest.py points JAX at it.
JAX_CACHE_DIR = os.path.join(
  os.environ.get("TMPDIR", "/tmp"),
  "tests_jax_cache_"
  + (os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())),
)


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


def free_port() -> int:
  """A free TCP port on the loopback interface."""
  import socket

  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def run_two_processes(module: str, *args: str, env=None, timeout: float = 300):
  """The documented localhost multi-process command: 2 processes x 4 CPU
  devices, `--distributed`. `env` maps a process id to extra variables.

  Returns the two combined stdout/stderr logs; fails unless both exit 0.
  """
  port = free_port()
  procs = []
  for pid in range(2):
    full_env = dict(
      os.environ,
      JAX_PLATFORMS="cpu",
      JAX_NUM_CPU_DEVICES="4",
      JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
      JAX_NUM_PROCESSES="2",
      JAX_PROCESS_ID=str(pid),
      **((env or {}).get(pid, {})),
    )
    procs.append(
      subprocess.Popen(
        [sys.executable, "-m", module, "--distributed", *args],
        cwd=REPO_ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
      )
    )
  logs = []
  try:
    logs = [p.communicate(timeout=timeout)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]
  return logs
