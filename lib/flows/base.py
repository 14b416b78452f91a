"""Bijector base class, composition and shared input checks.

Conventions follow distrax: `forward` maps latent -> data (the sampling
direction), `inverse` maps data -> latent (the density direction, used by
`log_prob`). Log-determinants are summed over the event axes and returned with
the batch shape. Unlike distrax, parameters are explicit pytrees: a bijector is
a frozen, hashable description (hyperparameters only) and every method takes
`params` first, so everything composes with `jax.jit`, `jax.grad` and optax.

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError
from lib.core.errors import is_concrete

Array = jax.Array
Params = Any


def check_finite(x, name: str = "input") -> None:
  """Raises NonFiniteError if a concrete `x` has NaN/inf entries.

  Inside `jit` the values are unknown, so the check is skipped there; the
  training loop separately stops on a non-finite loss.
  """
  if is_concrete(x) and not bool(np.all(np.isfinite(np.asarray(x)))):
    bad = int(np.size(x) - np.isfinite(np.asarray(x)).sum())
    raise NonFiniteError(f"{name} has {bad} non-finite (NaN/inf) entries")


def check_event(x, *, event_size: int, event_ndims: int, name: str) -> None:
  """Checks that `x` has at least `event_ndims` axes and a last axis of size n."""
  shape = tuple(np.shape(x))
  if len(shape) < event_ndims:
    raise ShapeError(
      f"{name}: input of shape {shape} has fewer than event_ndims="
      f"{event_ndims} axes"
    )
  if shape[-1] != event_size:
    raise ShapeError(
      f"{name}: channel (last) axis has size {shape[-1]}, expected "
      f"{event_size}; input shape {shape}"
    )


def broadcast_log_det(ld_per_vector: Array, x_shape, event_ndims: int) -> Array:
  """Per-vector log-det of a channel map -> per-example log-det.

  A map acting identically on every channel vector of an event of shape
  (*spatial, n) has log|det J| = #pixels * log|det W| (Glow's 1x1 conv rule).
  """
  spatial = x_shape[len(x_shape) - event_ndims : -1]
  pixels = math.prod(spatial)
  batch_shape = x_shape[: len(x_shape) - event_ndims]
  return jnp.broadcast_to(ld_per_vector * pixels, batch_shape)


def sum_event(v: Array, event_ndims: int) -> Array:
  """Sums the trailing `event_ndims` axes (elementwise log-dets -> event)."""
  if event_ndims == 0:
    return v
  return jnp.sum(v, axis=tuple(range(-event_ndims, 0)))


@dataclasses.dataclass(frozen=True)
class Bijector:
  """Base class: an invertible map with a tractable log|det J|.

  Subclasses implement `init`, `forward_and_log_det` and `inverse_and_log_det`.

  Attributes:
    event_ndims: number of trailing axes forming one event. Log-dets are
      summed over them and returned with shape `x.shape[:-event_ndims]`.
  """

  event_ndims: int = 1

  def init(self, key: Array, y: Array) -> Params:
    """Returns parameters; `y` is a data-side batch (for data-dependent init)."""
    del key, y
    return {}

  def forward_and_log_det(self, params: Params, x: Array):
    raise NotImplementedError

  def inverse_and_log_det(self, params: Params, y: Array):
    raise NotImplementedError

  def forward(self, params: Params, x: Array) -> Array:
    return self.forward_and_log_det(params, x)[0]

  def inverse(self, params: Params, y: Array) -> Array:
    return self.inverse_and_log_det(params, y)[0]


def _layer_name(i: int) -> str:
  return f"layer_{i:03d}"


@dataclasses.dataclass(frozen=True)
class Chain(Bijector):
  """Composition f_1 o ... o f_N (distrax order: the LAST one acts first).

  Params are a dict {"layer_000": params of f_1, ...}. All members must share
  `event_ndims` so their log-dets have the same batch shape. An empty chain
  is the identity, with a zero log-det of the batch shape (the empty
  composition: a flow of 0 layers is its base distribution).
  """

  bijectors: tuple[Bijector, ...] = ()

  def __post_init__(self):
    object.__setattr__(self, "bijectors", tuple(self.bijectors))

  def init(self, key: Array, y: Array) -> Params:
    # Data-dependent init runs in the density direction (data -> latent), so
    # each layer (e.g. ActNorm) sees the data as its predecessors transform it.
    params = {}
    keys = jax.random.split(key, max(len(self.bijectors), 1))
    for i, (b, k) in enumerate(zip(self.bijectors, keys)):
      p = b.init(k, y)
      params[_layer_name(i)] = p
      y = b.inverse(p, y)
    return params

  def _identity(self, x):
    x = jnp.asarray(x)
    batch_shape = x.shape[: x.ndim - self.event_ndims]
    return x, jnp.zeros(batch_shape, dtypes.compute_dtype(x.dtype))

  def forward_and_log_det(self, params, x):
    if not self.bijectors:
      return self._identity(x)
    total = 0.0
    for i in reversed(range(len(self.bijectors))):
      x, ld = self.bijectors[i].forward_and_log_det(params[_layer_name(i)], x)
      total = total + ld
    return x, total

  def inverse_and_log_det(self, params, y):
    if not self.bijectors:
      return self._identity(y)
    total = 0.0
    for i, b in enumerate(self.bijectors):
      y, ld = b.inverse_and_log_det(params[_layer_name(i)], y)
      total = total + ld
    return y, total


@dataclasses.dataclass(frozen=True)
class Inverse(Bijector):
  """Swaps the directions of a bijector (distrax.Inverse)."""

  bijector: Bijector | None = None

  def init(self, key, y):
    # The wrapped map sees `y` as its forward input; initialise on it.
    return self.bijector.init(key, y)

  def forward_and_log_det(self, params, x):
    return self.bijector.inverse_and_log_det(params, x)

  def inverse_and_log_det(self, params, y):
    return self.bijector.forward_and_log_det(params, y)


def chain(bijectors: Sequence[Bijector]) -> Chain:
  """Builds a Chain, checking that every member has the same event_ndims.

  `chain([])` is the identity (event_ndims 1, zero log-det).
  """
  nd = {b.event_ndims for b in bijectors}
  if len(nd) > 1:
    raise ShapeError(f"Chain members have mixed event_ndims {sorted(nd)}")
  return Chain(event_ndims=nd.pop() if nd else 1, bijectors=tuple(bijectors))
