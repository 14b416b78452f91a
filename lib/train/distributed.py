"""Opt-in multi-process start-up (`--distributed`)."""

import jax
from absl import logging


def initialize(enabled: bool) -> None:
  """Calls `jax.distributed.initialize()` when `enabled`, then logs the topology.

  With no arguments JAX detects Slurm, Open MPI and Cloud TPU; elsewhere set
  JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES and JAX_PROCESS_ID (see WORKSPACE.md).
  Must run before any other JAX computation.
  """
  if enabled:
    jax.distributed.initialize()
  logging.info(
    "process %d/%d; %d local of %d devices (%s)",
    jax.process_index(),
    jax.process_count(),
    jax.local_device_count(),
    jax.device_count(),
    jax.devices()[0].platform,
  )
