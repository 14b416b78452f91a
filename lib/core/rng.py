"""Random streams: one root key, folded by step and stream name, never carried.

Same seed, same numbers: a key for (step, name) depends only on the seed, so a run
resumed at step s draws what an uninterrupted run draws there.
"""

import zlib

import jax
import jax.numpy as jnp


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


def epoch_indices(
  key, step, num_items: int, batch_size: int, *, drop_remainder: bool = False
) -> jax.Array:
  """Indices of batch `step` when every epoch visits each item once.

  Epoch e visits the items in the order
  `jax.random.permutation(fold_in(key, e), num_items)`, as a shuffling data
  loader does. Stateless, like every stream here: a resumed run draws the
  same batches.

  drop_remainder=False (torch `DataLoader(shuffle=True)`, which keeps its
  short last batch): batch `step` is positions [step * batch_size,
  (step + 1) * batch_size) of the epochs laid end to end, so its shape
  stays fixed and, where batch_size does not divide num_items, a batch
  straddles two epochs. drop_remainder=True (a loader that drops it): an
  epoch is num_items // batch_size whole batches; the items left over are
  not visited that epoch.

  Args:
    key: the run's order key, the same at every step.
    step: the step (int or traced int32; positions are int32).
    num_items: items in an epoch (static, >= 1; >= batch_size when
      dropping the remainder).
    batch_size: items in a batch (static, >= 1).
    drop_remainder: see above.

  Returns:
    [batch_size] int32 indices into the items.
  """
  if num_items < 1 or batch_size < 1:
    raise ValueError(
      f"epoch batches need >= 1 item and batch size, got num_items="
      f"{num_items}, batch_size={batch_size}"
    )
  step = jnp.asarray(step, jnp.int32)
  order = lambda e: jax.random.permutation(
    jax.random.fold_in(key, e), num_items
  )
  if drop_remainder:
    per_epoch = num_items // batch_size
    if per_epoch < 1:
      raise ValueError(
        f"num_items={num_items} holds no whole batch of {batch_size}"
      )
    start = (step % per_epoch) * batch_size
    perm = order(step // per_epoch)
    return jax.lax.dynamic_slice(perm, (start,), (batch_size,)).astype(
      jnp.int32
    )
  pos = step * batch_size + jnp.arange(batch_size)
  epoch, within = pos // num_items, pos % num_items
  first = epoch[0]
  spans = (batch_size - 1) // num_items + 2  # epochs one batch can touch
  perms = jax.vmap(order)(first + jnp.arange(spans))
  return perms[epoch - first, within].astype(jnp.int32)
