"""The interface every SADL-style method implements: `Method`.

A method says what one client sends for its model delta (`encode`, linear in
the delta, so the mean of the client messages is the message of the mean
delta) and what the server (and every client, replaying it) does with the
averaged message (`apply`). SADL (`optimizer.sadl`) and the baselines
(`baselines`) all return a `Method`; the round runtime (`rounds`) runs any of
them under `shard_map`.

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Alg. 1: the client/server split).
"""

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax

from lib.core import errors

BYTES_PER_VALUE = 4  # float32 messages
BYTES_PER_INDEX = 4  # int32 coordinates of sparse (top-k) messages


class Method(NamedTuple):
  """A communication-compressed server method, on flat (d,) parameters.

  `encode` must be linear in the delta, so the mean of client messages is the
  message of the mean delta (the collective then averages messages).
  """

  name: str
  dim: int  # d, number of model parameters
  init: Callable[[jax.Array], Any]  # params (d,) -> server state
  encode: Callable[[jax.Array, jax.Array], jax.Array]  # (delta, key) -> msg
  apply: Callable[..., tuple[jax.Array, Any]]  # (msg, state, params, key)
  bytes_up: int  # bytes one client sends per round
  bytes_down: int  # bytes one client receives per round

  @property
  def bytes_per_round(self) -> int:
    """Bytes per client per round, both directions."""
    return self.bytes_up + self.bytes_down

  @property
  def compression(self) -> float:
    """Uncompressed bytes (d floats each way) over this method's bytes."""
    return 2 * self.dim * BYTES_PER_VALUE / self.bytes_per_round


def check_dim(dim: int) -> int:
  """The model dimension d as an int >= 2; ConfigError otherwise."""
  if int(dim) != dim or dim < 2:
    raise errors.ConfigError(f"model dimension must be an int >= 2, got {dim}")
  return int(dim)
