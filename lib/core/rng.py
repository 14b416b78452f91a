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


_FEISTEL_ROUNDS = 4


def permuted_index(key, index, num_items: int) -> jax.Array:
  """Where `index` goes under a keyed pseudo-random permutation of
  range(num_items): O(1) work per index, no array of num_items.

  A 4-round Feistel network over the smallest even number of bits that
  holds num_items, each round a threefry hash of its half (Luby-Rackoff: a
  pseudo-random permutation), walked until it lands inside range(num_items)
  (cycle walking: still a bijection; under 4 rounds of the network per
  index on average). Different keys give independent orders.

  Args:
    key: the permutation's key.
    index: int array of indices in [0, num_items) (any shape).
    num_items: the size of the permuted range (static, >= 1).

  Returns:
    int32 array of the same shape: the permuted indices.
  """
  if num_items < 1:
    raise ValueError(f"permuted_index needs num_items >= 1, got {num_items}")
  half = max(1, -(-max(num_items - 1, 1).bit_length() // 2))
  mask = jnp.uint32((1 << half) - 1)
  keys = [jax.random.fold_in(key, r) for r in range(_FEISTEL_ROUNDS)]

  def hash_(k, v):
    return jax.random.bits(jax.random.fold_in(k, v), dtype=jnp.uint32)

  def network(x):
    left, right = x >> half, x & mask
    for k in keys:
      f = jax.vmap(lambda v, k=k: hash_(k, v))(right.reshape(-1))
      left, right = right, left ^ (f.reshape(right.shape) & mask)
    return (left << half) | right

  def walk(x):
    return jax.lax.while_loop(
      lambda y: jnp.any(y >= num_items),
      lambda y: jnp.where(y >= num_items, network(y), y),
      network(x),
    )

  x = jnp.asarray(index).astype(jnp.uint32)
  return walk(x).astype(jnp.int32)


def epoch_indices(
  key, step, num_items: int, batch_size: int, *, drop_remainder: bool = False
) -> jax.Array:
  """Indices of batch `step` when every epoch visits each item once.

  Epoch e visits the items in the order of `permuted_index(fold_in(key, e),
  ., num_items)`, a pseudo-random permutation, as a shuffling data loader
  does. Stateless, like every stream here: a resumed run draws the
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
  # Position `within` of epoch e's order (`permuted_index`): no array of
  # num_items is built, so a step costs O(batch_size) for any epoch size.
  order = lambda e, within: permuted_index(
    jax.random.fold_in(key, e), within, num_items
  )
  if drop_remainder:
    per_epoch = num_items // batch_size
    if per_epoch < 1:
      raise ValueError(
        f"num_items={num_items} holds no whole batch of {batch_size}"
      )
    within = (step % per_epoch) * batch_size + jnp.arange(batch_size)
    return order(step // per_epoch, within)
  pos = step * batch_size + jnp.arange(batch_size)
  epoch, within = pos // num_items, pos % num_items
  return jax.vmap(order)(epoch, within)
