"""Oracle 5 of the Quartet spec: orthonormal Sylvester H32, FWHT == matmul."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from lib import quant
from lib.core import errors


def test_hadamard_matrix_is_scipys_and_an_involution():
  h = quant.hadamard_matrix(32)
  np.testing.assert_allclose(
    h, scipy.linalg.hadamard(32) / np.sqrt(32), atol=1e-7
  )
  np.testing.assert_allclose(h @ h, np.eye(32), atol=1e-6)


def test_rotate_unit_vector():
  e0 = jnp.zeros((1, 32)).at[0, 0].set(1.0)
  for method in ("fwht", "matmul"):
    np.testing.assert_allclose(
      quant.rotate(e0, method=method), np.full((1, 32), 0.1767767), atol=1e-6
    )


@pytest.mark.parametrize("signed", [False, True])
def test_fwht_equals_matmul_and_inverts(signed):
  x = jax.random.normal(jax.random.key(0), (3, 5, 96))
  signs = quant.random_signs(jax.random.key(1)) if signed else None
  want = np.einsum(
    "...gi,ij->...gj",
    np.asarray(x, np.float64).reshape(3, 5, 3, 32),
    scipy.linalg.hadamard(32)
    / np.sqrt(32)
    * (1 if signs is None else np.asarray(signs)),
  ).reshape(x.shape)
  for method in ("fwht", "matmul"):
    y = quant.rotate(x, signs, method=method)
    np.testing.assert_allclose(y, want, atol=1e-5)
    np.testing.assert_allclose(
      quant.unrotate(y, signs, method=method), x, atol=1e-5
    )


def test_random_signs_are_pm_one_and_key_dependent():
  s1 = quant.random_signs(jax.random.key(0))
  s2 = quant.random_signs(jax.random.key(1))
  assert set(np.unique(s1)) <= {-1.0, 1.0}
  assert not np.array_equal(s1, s2)


def test_bad_rotation_input_is_named():
  x = jnp.ones((2, 64))
  # unrotate used to fall back to the FWHT for any unknown method.
  for f in (quant.rotate, quant.unrotate):
    with pytest.raises(errors.ConfigError, match="method 'dense'"):
      f(x, method="dense")
    for method in ("fwht", "matmul"):
      # Not a reshape error from deep inside (the matmul form, or signs).
      with pytest.raises(errors.ShapeError, match="multiple of 32"):
        f(
          jnp.ones((2, 40)),
          quant.random_signs(jax.random.key(0)),
          method=method,
        )
      with pytest.raises(errors.ShapeError, match="signs"):
        f(x, jnp.ones(16), method=method)
  with pytest.raises(errors.ShapeError, match="groups of 32"):
    quant.fake_quantize(jnp.ones((2, 40)), "quest_continuous")
