"""TrainState and the step builders: a loss function in, pure train/eval steps out."""

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from lib.core import tree as tree_lib

# loss_fn(params, batch, key) -> (scalar loss, dict of scalar aux metrics)
LossFn = Callable[[Any, Any, jax.Array], tuple[jax.Array, dict]]


class TrainState(NamedTuple):
  """Arrays only: no apply_fn, no optimizer object, so it checkpoints and shards cleanly."""

  step: jax.Array  # int32 scalar: number of updates applied so far.
  params: Any  # pytree of arrays.
  opt_state: Any  # the optax state pytree.


def create_state(params, tx: optax.GradientTransformation) -> TrainState:
  """Step 0 state for `params` and optimizer `tx`."""
  return TrainState(jnp.zeros((), jnp.int32), params, tx.init(params))


def make_train_step(loss_fn: LossFn, tx: optax.GradientTransformation):
  """Returns `train_step(state, batch, key) -> (state, metrics)`, pure and unjitted.

  Metrics hold the loss, the aux metrics, and the L2 norms of gradients, updates and
  parameters (big_vision's defaults). Wrap it with `jax.jit(..., donate_argnums=0)`, or
  hand it to `lib.train.train`, whose steps also take the step number:
  `lambda state, batch, key, step: train_step(state, batch, key)` (as `fit` does).
  """

  def train_step(state: TrainState, batch, key):
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, aux), grads = grad_fn(state.params, batch, key)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    metrics = {
      "loss": loss,
      "grad_norm": tree_lib.l2_norm(grads),
      "update_norm": tree_lib.l2_norm(updates),
      "param_norm": tree_lib.l2_norm(params),
      **aux,
    }
    return TrainState(state.step + 1, params, opt_state), metrics

  return train_step
