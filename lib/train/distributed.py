"""Opt-in multi-process start-up (`--distributed`), with one-line errors.

A misconfigured environment (a missing or non-integer JAX_NUM_PROCESSES or
JAX_PROCESS_ID, an address without a port) raises `DistributedError` naming
the variable. A process that waits for a peer which never starts ends after
`timeout_s` with one line naming what it waited for: jax itself would abort the
whole process from C++ (SIGABRT and a stack dump) when its own
`initialization_timeout` runs out, so a watchdog thread prints the error and
exits with code 1 a little before that.
"""

import os
import socket
import sys
import threading
import time

import jax
from absl import logging

from lib.core import errors

_ADDRESS = "JAX_COORDINATOR_ADDRESS"
_NUM = "JAX_NUM_PROCESSES"
_ID = "JAX_PROCESS_ID"
# jax's own deadline comes this long after ours, so ours always fires first.
_JAX_GRACE_S = 60
DEFAULT_TIMEOUT_S = 300


def _env_int(name: str, minimum: int) -> int | None:
  value = os.environ.get(name)
  if value is None:
    return None
  try:
    number = int(value)
  except ValueError:
    number = None
  errors.check(
    number is not None and number >= minimum,
    errors.DistributedError,
    f"--distributed: {name}={value!r} must be an integer >= {minimum}",
  )
  return number


def settings_from_env() -> dict:
  """The explicit settings in the environment, validated; {} to auto-detect.

  Setting JAX_NUM_PROCESSES or JAX_PROCESS_ID means a manual set-up (several
  processes on machines JAX cannot detect): then all three variables are
  needed. Otherwise JAX detects Slurm, Open MPI or Cloud TPU by itself.
  """
  num, pid = _env_int(_NUM, 1), _env_int(_ID, 0)
  address = os.environ.get(_ADDRESS)
  if address is not None:
    host, _, port = address.rpartition(":")
    errors.check(
      bool(host) and port.isdigit(),
      errors.DistributedError,
      f"--distributed: {_ADDRESS}={address!r} must be host:port",
    )
  if num is None and pid is None:
    return {}
  missing = [
    name
    for name, v in ((_ADDRESS, address), (_NUM, num), (_ID, pid))
    if v is None
  ]
  errors.check(
    not missing,
    errors.DistributedError,
    f"--distributed: {' and '.join(missing)} not set (a manual multi-process "
    f"set-up needs {_ADDRESS}, {_NUM} and {_ID} on every process)",
  )
  errors.check(
    pid < num,
    errors.DistributedError,
    f"--distributed: {_ID}={pid} must be < {_NUM}={num}",
  )
  return {
    "coordinator_address": address,
    "num_processes": num,
    "process_id": pid,
  }


def _reachable(address: str) -> bool:
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
      return True
  except (OSError, ValueError):
    return False


def _timeout_message(settings: dict, timeout_s: float) -> str:
  address = settings.get("coordinator_address") or os.environ.get(_ADDRESS)
  num = settings.get("num_processes")
  pid = settings.get("process_id")
  who = f"process {pid} of {num}" if num is not None else "this process"
  hint = f"or raise --distributed_timeout_s (now {timeout_s:g})"
  if pid == 0:
    others = f"process 1 of {num}" if num == 2 else f"processes 1..{num - 1}"
    return (
      f"--distributed: {who} waited {timeout_s:g} s at {address} but "
      f"{others} never joined: start every process with "
      f"{_ADDRESS}={address} and {_NUM}={num}, {hint}"
    )
  if address and not _reachable(address):
    return (
      f"--distributed: {who} could not reach the coordinator (process 0) at "
      f"{address} within {timeout_s:g} s: start process 0 there or fix "
      f"{_ADDRESS}, {hint}"
    )
  return (
    f"--distributed: {who} reached the coordinator at {address} but not "
    f"every process joined within {timeout_s:g} s: check that all of them "
    f"run with the same {_NUM}, {hint}"
  )


class _Watchdog:
  """Prints one error line and exits with code 1 unless cancelled in time."""

  def __init__(self, timeout_s: float, message):
    self._timer = threading.Timer(timeout_s, self._fire)
    self._timer.daemon = True
    self._message = message

  def _fire(self):
    sys.stderr.write(f"error: {self._message()}\n")
    sys.stderr.flush()
    os._exit(1)  # jax would otherwise abort the process from C++.

  def __enter__(self):
    self._timer.start()
    return self

  def __exit__(self, *exc):
    self._timer.cancel()


def initialize(enabled: bool, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
  """Calls `jax.distributed.initialize()` when `enabled`, then logs the topology.

  JAX detects Slurm, Open MPI and Cloud TPU by itself. Elsewhere (e.g. several
  processes on one machine) set JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and
  JAX_PROCESS_ID; jax 0.10 reads only the first of these, so the other two are
  passed here. Must run before any other JAX computation.

  Args:
    enabled: whether to start the multi-process runtime at all.
    timeout_s: how long to wait for every process to join; after that this
      process prints `error: ...` naming what it waited for and exits with
      code 1 (not an exception: jax aborts the process at its own deadline).

  Raises:
    DistributedError: a missing or malformed setting, or jax refusing it.
  """
  if enabled:
    errors.check(
      timeout_s > 0,
      errors.DistributedError,
      f"--distributed: timeout {timeout_s} must be > 0",
    )
    settings = settings_from_env()
    start = time.time()
    with _Watchdog(timeout_s, lambda: _timeout_message(settings, timeout_s)):
      try:
        jax.distributed.initialize(
          **settings, initialization_timeout=int(timeout_s) + _JAX_GRACE_S
        )
      except (ValueError, TypeError, RuntimeError) as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        reason = lines[0] if lines else type(e).__name__
        hint = ""
        if "coordinator_address" in reason:
          hint = (
            f": no cluster (Slurm, Open MPI, Cloud TPU) was detected; set "
            f"{_ADDRESS}, {_NUM} and {_ID}"
          )
        raise errors.DistributedError(
          f"--distributed: jax.distributed.initialize failed ({reason}){hint}"
        ) from None
    logging.info("distributed start-up took %.1f s", time.time() - start)
  logging.info(
    "process %d/%d; %d local of %d devices (%s)",
    jax.process_index(),
    jax.process_count(),
    jax.local_device_count(),
    jax.device_count(),
    jax.devices()[0].platform,
  )
