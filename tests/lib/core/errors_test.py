"""lib.core.errors: is_concrete and is_static_zero, the static-input tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib.core import errors


def test_is_concrete_is_false_exactly_under_a_transformation():
  for x in (1.5, 3, np.ones(2), jnp.ones(2)):
    assert errors.is_concrete(x)
  seen = []

  def f(x):
    seen.append(errors.is_concrete(x))
    return x * 2

  jax.jit(f)(1.0)
  jax.grad(f)(1.0)
  jax.vmap(f)(jnp.ones(3))
  assert seen == [False, False, False]


def test_a_value_check_skipped_under_jit_still_runs_eagerly():
  def check_positive(tau):
    errors.check(
      not errors.is_concrete(tau) or tau > 0,
      errors.ConfigError,
      f"tau must be > 0, got {tau}",
    )
    return tau

  assert float(jax.jit(check_positive)(-1.0)) == -1.0
  with pytest.raises(errors.ConfigError, match="tau must be > 0"):
    check_positive(-1.0)


def test_is_static_zero_only_for_python_zeros():
  assert errors.is_static_zero(0) and errors.is_static_zero(0.0)
  assert not errors.is_static_zero(1e-4)
  # An array is a hyperparameter that may change (inject_hyperparams).
  assert not errors.is_static_zero(jnp.zeros(()))
  assert not errors.is_static_zero(np.float32(1.0))
