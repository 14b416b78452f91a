"""lib.core.rng.epoch_indices: every epoch a permutation of the items."""

import jax
import numpy as np
import pytest

from lib.core import rng


@pytest.mark.parametrize("num_items, batch_size", [(10, 4), (7, 7), (3, 8)])
def test_epoch_indices_visit_each_item_once_per_epoch(num_items, batch_size):
  # Batches laid end to end, cut at every num_items: each cut is a
  # permutation of range(num_items), whether a batch straddles two epochs
  # (10, 4), matches one (7, 7) or spans several (3, 8).
  key = jax.random.key(3)
  draw = jax.jit(lambda s: rng.epoch_indices(key, s, num_items, batch_size))
  epochs = 4
  steps = -(-epochs * num_items // batch_size)
  flat = np.concatenate([np.asarray(draw(s)) for s in range(steps)])
  assert flat.dtype == np.int32
  cuts = flat[: epochs * num_items].reshape(epochs, num_items)
  for e in cuts:
    np.testing.assert_array_equal(np.sort(e), np.arange(num_items))
  if num_items > 2:  # a fresh order each epoch
    assert len({tuple(e) for e in cuts}) > 1
  # Stateless: a step drawn alone (a resumed run) equals the same step
  # drawn in sequence, traced or not.
  np.testing.assert_array_equal(
    rng.epoch_indices(key, 2, num_items, batch_size), draw(2)
  )


def test_epoch_indices_refuse_empty_sizes():
  with pytest.raises(ValueError, match="num_items=0"):
    rng.epoch_indices(jax.random.key(0), 0, 0, 4)


def test_epoch_indices_dropping_the_remainder_visit_whole_batches():
  # 10 items in batches of 4: two whole batches an epoch, 8 distinct items,
  # then a new epoch (a new order); 2 items are left out of each epoch.
  key = jax.random.key(5)
  draw = jax.jit(
    lambda s: rng.epoch_indices(key, s, 10, 4, drop_remainder=True)
  )
  epochs = [
    np.concatenate([np.asarray(draw(2 * e + b)) for b in range(2)])
    for e in range(3)
  ]
  for e in epochs:
    assert len(set(e.tolist())) == 8 and e.min() >= 0 and e.max() < 10
  assert len({tuple(e) for e in epochs}) == 3
  with pytest.raises(ValueError, match="no whole batch"):
    rng.epoch_indices(key, 0, 3, 4, drop_remainder=True)


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 1024, 1025])
def test_permuted_index_is_a_bijection(n):
  # Every index lands on a distinct index of range(n), whatever n is
  # against the Feistel network's power-of-4 domain (cycle walking).
  i = jax.numpy.arange(n)
  p = np.asarray(
    jax.jit(lambda k: rng.permuted_index(k, i, n))(jax.random.key(0))
  )
  np.testing.assert_array_equal(np.sort(p), np.arange(n))
  if n >= 17:  # another key, another order; not the identity
    q = np.asarray(rng.permuted_index(jax.random.key(1), i, n))
    assert not np.array_equal(p, q) and not np.array_equal(p, np.arange(n))
