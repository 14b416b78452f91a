"""Test-wide JAX set-up: 8 fake CPU devices, parsed absl flags, `gpu` marker.

The suite runs on CPU even on a GPU machine. `TESTS_JAX_PLATFORMS=cuda,cpu`
(what tests/gpu/run.sh sets when it finds a GPU) makes the GPU the default
backend, with the 8 CPU devices still there for the CPU side of a comparison;
tests marked `gpu` are skipped unless the default backend is a GPU.
"""

import os
import sys

import jax
import pytest
from absl import flags

from tests import helpers

# Before any backend starts: every test sees 8 CPU devices, like an 8-device host.
jax.config.update("jax_num_cpu_devices", 8)
jax.config.update(
  "jax_platforms", os.environ.get("TESTS_JAX_PLATFORMS") or "cpu"
)
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


def pytest_collection_modifyitems(config, items):
  """Skips `gpu` tests, with one line saying why, off a GPU backend."""
  del config
  gpu_items = [item for item in items if item.get_closest_marker("gpu")]
  if not gpu_items or jax.default_backend() == "gpu":
    return
  skip = pytest.mark.skip(
    reason=f"needs a GPU: jax.default_backend() is "
    f"{jax.default_backend()!r} (on a GPU machine: tests/gpu/run.sh)"
  )
  for item in gpu_items:
    item.add_marker(skip)


@pytest.fixture
def fast_compile():
  """XLA without most optimisations: for smoke runs whose time is compiling."""
  jax.config.update("jax_disable_most_optimizations", True)
  try:
    yield
  finally:
    jax.config.update("jax_disable_most_optimizations", False)
