"""Device meshes and shardings: one `data` axis for data parallelism.

The same code runs on one CPU, 8 fake CPU devices, a GPU box or a multi-host job: the batch
is sharded over the `data` axis and parameters are replicated, and XLA inserts the
all-reduce of the gradients.
"""

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lib.core import errors

DATA_AXIS = "data"


def make_data_mesh(num_devices: int = -1, axis: str = DATA_AXIS):
  """A 1-D mesh over `num_devices` devices (-1: all, across every process)."""
  available = jax.device_count()
  n = available if num_devices == -1 else num_devices
  errors.check(
    0 < n <= available,
    errors.ConfigError,
    f"mesh_data={num_devices} but {available} devices are available",
  )
  # Auto axes: jit's sharding propagation places the computation (big_vision style).
  return jax.make_mesh(
    (n,),
    (axis,),
    axis_types=(jax.sharding.AxisType.Auto,),
    devices=jax.devices()[:n],
  )


def batch_sharding(mesh, axis: str = DATA_AXIS) -> NamedSharding:
  """Leading (batch) axis split over `axis`, the rest replicated."""
  return NamedSharding(mesh, P(axis))


def replicated(mesh) -> NamedSharding:
  """Every device holds the whole array."""
  return NamedSharding(mesh, P())


def to_global(tree, sharding: NamedSharding):
  """Host arrays (the same full value on every process) -> global jax arrays.

  Works on one process and on many: each process fills the shards it owns.
  """

  def put(x):
    x = np.asarray(x)
    spec = getattr(sharding, "spec", ())
    errors.check(
      len(spec) <= x.ndim,
      errors.ShapeError,
      f"to_global: a leaf of shape {x.shape} has fewer axes than the "
      f"sharding {spec} splits (a scalar takes `replicated(mesh)`)",
    )
    return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])

  return jax.tree.map(put, tree)


def check_batch_divisible(batch_size: int, mesh, axis: str = DATA_AXIS):
  """Raises a ConfigError unless the batch splits evenly over the mesh axis."""
  n = mesh.shape[axis]
  errors.check(
    batch_size % n == 0,
    errors.ConfigError,
    f"batch_size={batch_size} is not a multiple of the {n} devices on the "
    f"'{axis}' mesh axis",
  )
