"""Opt-in multi-process start-up (`--distributed`)."""

import os

import jax
from absl import logging

_ENV_INTS = (
  ("num_processes", "JAX_NUM_PROCESSES"),
  ("process_id", "JAX_PROCESS_ID"),
)


def initialize(enabled: bool) -> None:
  """Calls `jax.distributed.initialize()` when `enabled`, then logs the topology.

  JAX detects Slurm, Open MPI and Cloud TPU by itself. Elsewhere (e.g. several processes on
  one machine) set JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID; jax 0.10
  reads only the first of these, so the other two are passed here. Must run before any
  other JAX computation.
  """
  if enabled:
    kwargs = {k: int(os.environ[e]) for k, e in _ENV_INTS if e in os.environ}
    jax.distributed.initialize(**kwargs)
  logging.info(
    "process %d/%d; %d local of %d devices (%s)",
    jax.process_index(),
    jax.process_count(),
    jax.local_device_count(),
    jax.device_count(),
    jax.devices()[0].platform,
  )
