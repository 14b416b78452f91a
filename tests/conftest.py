"""Test-wide JAX set-up: 8 fake CPU devices, parsed absl flags."""

import os
import sys

import jax
import pytest
from absl import flags

# Before any backend starts: every test sees 8 CPU devices, like an 8-device host.
jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_platforms", "cpu")
flags.FLAGS.mark_as_parsed()

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)


@pytest.fixture
def fast_compile():
  """XLA without most optimisations: for smoke runs whose time is compiling."""
  jax.config.update("jax_disable_most_optimizations", True)
  try:
    yield
  finally:
    jax.config.update("jax_disable_most_optimizations", False)
