"""The baselines SADL is compared with, as `Method`s on flat parameters.

- `distributed_adam`: uncompressed Adam on the mean delta (SADL with the
  identity sketch: the upper bound any compression is measured against);
- `sketched_sgd`: server SGD on the de-sketched mean delta, fresh R_t per
  round (Sketch-SGD; the paper's App. Figs. 9-11);
- `fetchsgd`: a fixed count-sketch table with momentum and error feedback in
  sketch space and top-k recovery (Rothchild et al. 2020, Alg. 1).

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (§4 baselines).
  Rothchild et al. "FetchSGD: Communication-Efficient Federated Learning with
  Sketching", ICML 2020 (Alg. 1).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.optim import sketch as sketch_lib
from lib.optim.sadl import method as method_lib
from lib.optim.sadl import optimizer


def distributed_adam(
  *,
  dim: int,
  learning_rate: optax.ScalarOrSchedule,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
) -> method_lib.Method:
  """Uncompressed baseline: Adam on the mean delta (SADL, identity sketch)."""
  return optimizer.sadl(
    dim=dim,
    sketch_size=dim,
    learning_rate=learning_rate,
    sketch_kind="identity",
    b1=b1,
    b2=b2,
    eps=eps,
    amsgrad=amsgrad,
    weight_decay=weight_decay,
  )


def sketched_sgd(
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  sketch_kind: str = "srht",
) -> method_lib.Method:
  """Baseline: server SGD on the de-sketched mean delta (fresh R_t per round).

  Raises:
    ConfigError: sketch_size >= d.
  """
  dim = method_lib.check_dim(dim)
  return optimizer.one_sketch_method(
    optax.sgd(learning_rate),
    name="sketched_sgd",
    dim=dim,
    sketch_size=sketch_size,
    sketch_kind=sketch_kind,
  )


class FetchSGDState(NamedTuple):
  """Server state of `fetchsgd` (both tables live in sketch space)."""

  count: jax.Array  # scalar int32: rounds taken
  momentum: jax.Array  # (rows * cols,) sketched momentum S_u
  error: jax.Array  # (rows * cols,) sketched error accumulator S_e


def fetchsgd(
  key: jax.Array,
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  rows: int = 3,
  top_k: int | None = None,
  momentum: float = 0.9,
) -> method_lib.Method:
  """FetchSGD baseline: count-sketch table, momentum + error feedback, top-k.

  Server (Rothchild et al. 2020, Alg. 1), on the mean client table S:
  S_u = rho S_u + S; S_e += lr S_u; delta = top-k(median-unsketch(S_e));
  zero S_u and S_e in the cells that delta's coordinates hash to; x -= delta.
  The table is fixed for the whole run (momentum and error live in sketch
  space), unlike SADL's fresh R_t. Clients send their K-step delta in place of
  one gradient, like the other methods.

  Args:
    key: key of the fixed count-sketch table.
    dim: number of model parameters d.
    sketch_size: cells sent per client, rows * (sketch_size // rows) < d.
    learning_rate: server learning rate (float, traced scalar or schedule).
    rows: hash rows of the table.
    top_k: coordinates recovered and broadcast per round; default cols // 2.
    momentum: rho.

  Returns:
    A `Method` (down-link: top_k values and int32 indices).
  """
  dim = method_lib.check_dim(dim)
  if sketch_size >= dim:
    raise errors.ConfigError(
      f"sketch_size={sketch_size} must be smaller than the model dimension "
      f"d={dim}"
    )
  if rows < 1 or sketch_size // rows < 1:
    raise errors.ConfigError(
      f"FetchSGD needs rows >= 1 and sketch_size >= rows, got {rows=}, "
      f"{sketch_size=}"
    )
  cols = sketch_size // rows
  k = max(1, cols // 2) if top_k is None else int(top_k)
  if not 1 <= k < dim:
    raise errors.ConfigError(f"top_k must be in [1, d={dim}), got {k}")
  table_sketch, estimate, buckets_hit = sketch_lib.make_count_sketch_table(
    key, dim, rows, cols
  )
  lr_fn = (
    learning_rate if callable(learning_rate) else (lambda _: learning_rate)
  )

  def init(params):
    zeros = jnp.zeros((rows * cols,), params.dtype)
    return FetchSGDState(jnp.zeros([], jnp.int32), zeros, zeros)

  def encode(delta, round_key):
    del round_key  # fixed table
    return table_sketch(delta).reshape(-1)

  def apply(msg, state, params, round_key):
    del round_key
    s_u = momentum * state.momentum + msg
    s_e = state.error + lr_fn(state.count) * s_u
    est = estimate(s_e.reshape(rows, cols))
    _, idx = jax.lax.top_k(jnp.abs(est), k)
    step = jnp.zeros_like(est).at[idx].set(est[idx])
    # Zero the cells the recovered coordinates hash to (FetchSGD's practical
    # form); subtracting sketch(step) instead re-injects the collisions of
    # false-positive coordinates and diverged on the power-law quadratic.
    support = jnp.zeros(est.shape, bool).at[idx].set(True)
    hit = buckets_hit(support).reshape(-1)
    s_u = jnp.where(hit, 0, s_u)
    s_e = jnp.where(hit, 0, s_e)
    new = FetchSGDState(optax.safe_increment(state.count), s_u, s_e)
    return params - step, new

  return method_lib.Method(
    name="fetchsgd",
    dim=dim,
    init=init,
    encode=encode,
    apply=apply,
    bytes_up=rows * cols * method_lib.BYTES_PER_VALUE,
    bytes_down=k * (method_lib.BYTES_PER_VALUE + method_lib.BYTES_PER_INDEX),
  )
