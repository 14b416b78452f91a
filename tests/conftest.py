"""Test-wide JAX set-up: 8 fake CPU devices, parsed absl flags."""

import os
import sys

import jax
import pytest
from absl import flags

from tests import helpers

# Before any backend starts: every test sees 8 CPU devices, like an 8-device host.
jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_platforms", "cpu")
flags.FLAGS.mark_as_parsed()

# One persistent compilation cache per test session, shared by both xdist
# workers: a program another test already compiled (the same step under a new
# closure, another test's smoke run of the same experiment) is loaded instead
# of compiled. Cached executables are the compiled ones, so no number changes.
jax.config.update("jax_compilation_cache_dir", helpers.JAX_CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)

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
