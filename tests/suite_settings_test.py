"""The suite's own setting (tests/conftest.py): XLA's optimisations off on the
CPU, except in tests marked `xla_optimized`."""

import os

import jax
import pytest

from tests import conftest


def test_cpu_tests_compile_without_most_optimisations():
  # Off on the CPU (in process and for the binaries tests start); on with
  # TESTS_XLA_OPTIMIZE=1 and on a GPU (TESTS_JAX_PLATFORMS).
  assert conftest.FAST_COMPILE == (
    not os.environ.get("TESTS_JAX_PLATFORMS")
    and os.environ.get("TESTS_XLA_OPTIMIZE", "") not in ("1", "true")
  )
  assert jax.config.read("jax_disable_most_optimizations") == (
    conftest.FAST_COMPILE
  )
  if conftest.FAST_COMPILE:
    assert os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1"


@pytest.mark.xla_optimized
def test_a_marked_test_compiles_with_optimisations():
  assert not jax.config.read("jax_disable_most_optimizations")


def test_fast_compile_turns_them_off_and_restores_the_setting(fast_compile):
  del fast_compile
  assert jax.config.read("jax_disable_most_optimizations")
