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

# On the CPU, most of a test's time is XLA compiling small programs: the suite
# compiles them without most optimisations, in process and in the binaries
# tests start (WORKSPACE "Test": 0.88x wall side by side on 266 unit tests).
# What most tests check (an identity, a dense reference, a bitwise resume) does
# not depend on XLA's optimisation level; tests marked `xla_optimized` compile
# as users' runs do. On a GPU
# (TESTS_JAX_PLATFORMS, tests/gpu/run.sh) or with TESTS_XLA_OPTIMIZE=1 nothing
# changes.
FAST_COMPILE = not (
  os.environ.get("TESTS_JAX_PLATFORMS")
  or os.environ.get("TESTS_XLA_OPTIMIZE", "") in ("1", "true")
)
if FAST_COMPILE:
  os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"
  jax.config.update("jax_disable_most_optimizations", True)

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
  """XLA without most optimisations: for smoke runs whose time is compiling
  (the suite's default on the CPU; this keeps them so on a GPU and with
  TESTS_XLA_OPTIMIZE=1)."""
  with helpers.most_optimizations_disabled(True):
    yield


@pytest.fixture(autouse=True)
def _xla_optimized(request):
  """Tests marked `xla_optimized` compile with XLA's optimisations on."""
  marked = request.node.get_closest_marker("xla_optimized") is not None
  with helpers.most_optimizations_disabled(False if marked else FAST_COMPILE):
    yield
