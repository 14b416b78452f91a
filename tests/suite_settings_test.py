"""The suite's own setting (tests/conftest.py): XLA's optimisations off on the
CPU, except in tests marked `xla_optimized`."""

import os

import jax
import pytest

from tests import conftest
from tests import helpers


def test_cpu_tests_compile_without_most_optimisations():
  # Off on the CPU (in process and for the binaries tests start); on with
  # TESTS_XLA_OPTIMIZE=1 and on a GPU (TESTS_JAX_PLATFORMS).
  if not (
    os.environ.get("TESTS_JAX_PLATFORMS")
    or os.environ.get("TESTS_XLA_OPTIMIZE")
  ):
    assert conftest.FAST_COMPILE
  assert jax.config.read("jax_disable_most_optimizations") == (
    conftest.FAST_COMPILE
  )
  if conftest.FAST_COMPILE:
    assert os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1"


@pytest.mark.xla_optimized
def test_a_marked_test_compiles_with_optimisations():
  assert not jax.config.read("jax_disable_most_optimizations")


def test_fast_compile_turns_them_off(fast_compile):
  del fast_compile
  assert jax.config.read("jax_disable_most_optimizations")


@pytest.mark.parametrize("disabled", [True, False])
def test_the_setting_is_restored_after_its_block(disabled):
  before = jax.config.read("jax_disable_most_optimizations")
  with helpers.most_optimizations_disabled(disabled):
    assert jax.config.read("jax_disable_most_optimizations") == disabled
  assert jax.config.read("jax_disable_most_optimizations") == before
