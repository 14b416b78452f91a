"""Random streams: one root key, folded by step and stream name, never carried.

Same seed, same numbers: a key for (step, name) depends only on the seed, so a run
resumed at step s draws what an uninterrupted run draws there.
"""

import zlib

import jax


def root_key(seed: int) -> jax.Array:
  """Typed root key for a seed."""
  return jax.random.key(seed)


def is_typed_key(x) -> bool:
  """True for a typed PRNG key array (`jax.random.key`), False for numbers
  and raw uint32 keys."""
  dtype = getattr(x, "dtype", None)
  return dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key)


def stream_id(name: str) -> int:
  """Stable 31-bit integer for a stream name (crc32, same on every host)."""
  return zlib.crc32(name.encode()) & 0x7FFFFFFF


def stream(key: jax.Array, name: str, step=None) -> jax.Array:
  """Key for stream `name`, optionally at `step`: fold_in(fold_in(key, step), id)."""
  if step is not None:
    key = jax.random.fold_in(key, step)
  return jax.random.fold_in(key, stream_id(name))
