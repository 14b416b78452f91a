"""Losses every paper's code shares: the (masked) token cross-entropy.

`token_nll` is the one place a log-softmax is gathered at integer labels;
language models (lib.models.llama), the SfN tools and the continual-learning
objectives (lib.continual) reduce it as they need.
"""

import jax
import jax.numpy as jnp


def token_nll(logits: jax.Array, labels: jax.Array) -> jax.Array:
  """-log softmax(logits)[label] per position: logits [..., V], labels [...]."""
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
