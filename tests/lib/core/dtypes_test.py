"""lib.core.dtypes: the float32 floor for kernels without half precision."""

import jax.numpy as jnp
import numpy as np
import pytest

from lib.core import dtypes


@pytest.mark.parametrize(
  "dtype, expected",
  [
    (jnp.bfloat16, jnp.float32),
    (jnp.float16, jnp.float32),
    (jnp.float32, jnp.float32),
    (np.float64, np.float64),
  ],
)
def test_compute_dtype_is_at_least_float32(dtype, expected):
  assert dtypes.compute_dtype(dtype) == jnp.dtype(expected)


@pytest.mark.parametrize(
  "dtype, half",
  [
    (jnp.bfloat16, True),
    (jnp.float16, True),
    (jnp.float32, False),
    (np.float64, False),
    (jnp.int8, False),
    (jnp.bool_, False),
  ],
)
def test_is_half_only_for_narrow_floats(dtype, half):
  assert dtypes.is_half(dtype) is half
