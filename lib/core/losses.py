"""Losses every paper's code shares: the (masked) token cross-entropy.

`token_nll` is the one place a log-softmax is gathered at integer labels;
language models (lib.models.llama), the SfN tools and the continual-learning
objectives (lib.continual) reduce it as they need.
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors


def check_labels(labels, vocab: int) -> None:
  """ShapeError unless every label lies in [0, vocab), the logits' last axis
  (out of range, the gather gives a silent NaN). Runs on concrete labels
  only (`errors.is_concrete`); a traced label is not checked."""
  if not errors.is_concrete(labels):
    return
  v = np.asarray(labels)
  bad = (v < 0) | (v >= vocab)
  if np.any(bad):
    i = [int(j) for j in np.unravel_index(int(np.argmax(bad)), v.shape)]
    raise errors.ShapeError(
      f"labels must lie in [0, {vocab}) (the logits' last axis, V={vocab}); "
      f"labels{i} = {v[tuple(i)].item()!r} ({int(bad.sum())} such entries)"
    )


def token_nll(logits: jax.Array, labels: jax.Array) -> jax.Array:
  """-log softmax(logits)[label] per position: logits [..., V], labels [...].

  Raises:
    ShapeError: a concrete label outside [0, V) (`check_labels`).
  """
  check_labels(labels, np.shape(logits)[-1])
  logp = jax.nn.log_softmax(logits, axis=-1)
  return -jnp.take_along_axis(logp, labels[..., None], axis=-1)[..., 0]


def masked_cross_entropy(
  logits: jax.Array, labels: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
  """Mean token cross-entropy over the positions where `mask` is 1.

  With mask None, the mean over all positions. An all-zero mask gives 0
  (not NaN): the denominator is max(sum(mask), 1).
  """
  nll = token_nll(logits, labels)
  if mask is None:
    return jnp.mean(nll)
  mask = mask.astype(nll.dtype)
  return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)
