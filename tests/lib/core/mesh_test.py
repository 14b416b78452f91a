"""lib.core.mesh: placing host arrays on a data mesh."""

import jax
import numpy as np
import pytest

from lib.core import errors
from lib.core import mesh as mesh_lib


def test_to_global_splits_the_batch_and_refuses_a_scalar_leaf():
  mesh = mesh_lib.make_data_mesh(jax.device_count())
  n = jax.device_count()
  x = np.arange(2.0 * n).reshape(2 * n, 1)
  out = mesh_lib.to_global({"x": x}, mesh_lib.batch_sharding(mesh))["x"]
  np.testing.assert_array_equal(out, x)
  assert len(out.addressable_shards) == n
  assert out.addressable_shards[0].data.shape == (2, 1)
  # A scalar has no batch axis to split: it was an IndexError in the
  # callback; a replicated sharding places it.
  with pytest.raises(errors.ShapeError, match=r"shape \(\) has fewer axes"):
    mesh_lib.to_global(np.float32(1.0), mesh_lib.batch_sharding(mesh))
  scalar = mesh_lib.to_global(np.float32(1.0), mesh_lib.replicated(mesh))
  assert float(scalar) == 1.0
