"""Baseline channel-mixing layers: dense (slogdet), LU 1x1, permutation, identity.

Each mixes the last axis like CDLinear, so a flow can swap them at equal depth
(the paper's App. A comparison). Glow's invertible 1x1 convolution is
`DenseLinear` / `LULinear` with event_ndims=3.

On CPU with jaxlib 0.10, do not vmap several dense or LU flows (seeds, a
sweep): their init's QR and their LU factorisations become batched LAPACK
calls, and those of independent flow steps wait on each other's tasks in
XLA's thread pool until it hangs (at once on a 2-core machine; fixed in
jaxlib 0.11). Step them with `jax.lax.map`, or
`lib.train.run_sweep(..., vectorize=False)` as experiments/cdflow_density.py
does. (`lib.core.linalg`'s sequential kernels are no way round here: they
have no reverse-mode derivative.)

References:
  Feng & Liao, "CDFlow", NeurIPS 2025 (arXiv:2510.25323), App. A and Sec. 4.4;
  Kingma & Dhariwal, "Glow", NeurIPS 2018 (dense and LU 1x1 convolutions).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core.errors import ConfigError
from lib.flows import base
from lib.flows.cd_linear import CDLinear


def _random_rotation(key, n):
  """Random orthogonal n x n matrix (Glow's 1x1-conv init, log|det| = 0)."""
  q, _ = jnp.linalg.qr(jax.random.normal(key, (n, n)))
  return q


@dataclasses.dataclass(frozen=True)
class _ChannelMap(base.Bijector):
  """Shared checks and log-det broadcasting for maps on the last axis."""

  num_channels: int = 1

  def _check(self, x):
    base.check_event(
      x,
      event_size=self.num_channels,
      event_ndims=self.event_ndims,
      name=type(self).__name__,
    )
    base.check_finite(x, f"{type(self).__name__} input")

  def _ld(self, ld_vec, x):
    return base.broadcast_log_det(
      jnp.asarray(ld_vec, dtypes.compute_dtype(x.dtype)),
      x.shape,
      self.event_ndims,
    )


@dataclasses.dataclass(frozen=True)
class DenseLinear(_ChannelMap):
  """y = W x with an unconstrained W; log-det by `slogdet` (O(n^3))."""

  def init(self, key, y=None):
    return {"weight": _random_rotation(key, self.num_channels)}

  def dense_matrix(self, params):
    return params["weight"]

  def forward_and_log_det(self, params, x):
    self._check(x)
    w = params["weight"].astype(dtypes.compute_dtype(x.dtype))
    return x @ w.T, self._ld(jnp.linalg.slogdet(w)[1], x)

  def inverse_and_log_det(self, params, y):
    self._check(y)
    w = params["weight"].astype(dtypes.compute_dtype(y.dtype))
    # One n x n inverse, then a matmul: cheaper than an LU solve per vector
    # when the batch has more vectors than channels (Glow's reverse 1x1).
    # `inverse_solve` is the textbook alternative (bench_cdflow times the
    # same jnp.linalg.solve inline).
    return y @ jnp.linalg.inv(w).T, self._ld(-jnp.linalg.slogdet(w)[1], y)

  def inverse_solve(self, params, y):
    """W^{-1} y for every vector through `jnp.linalg.solve` (no log-det)."""
    w = params["weight"].astype(dtypes.compute_dtype(y.dtype))
    flat = y.reshape(-1, self.num_channels).T
    return jnp.linalg.solve(w, flat).T.reshape(y.shape)


@dataclasses.dataclass(frozen=True)
class LULinear(_ChannelMap):
  """Glow's LU-decomposed 1x1: W = P L (U + diag(sign * exp(log_s))).

  P and the signs are fixed at init; L is unit lower, U strictly upper.
  log|det W| = sum(log_s), O(n).
  """

  def init(self, key, y=None):
    w = _random_rotation(key, self.num_channels)
    p, lower, upper = jax.scipy.linalg.lu(w)  # w = p @ lower @ upper
    s = jnp.diag(upper)
    return {
      "perm": p,
      "lower": jnp.tril(lower, -1),
      "upper": jnp.triu(upper, 1),
      "sign": jnp.sign(s),
      "log_s": jnp.log(jnp.abs(s)),
    }

  def _factors(self, params, dtype):
    n = self.num_channels
    eye = jnp.eye(n, dtype=dtype)
    lower = jnp.tril(params["lower"].astype(dtype), -1) + eye
    diag = jnp.sign(jax.lax.stop_gradient(params["sign"])) * jnp.exp(
      params["log_s"]
    )
    upper = jnp.triu(params["upper"].astype(dtype), 1) + jnp.diag(
      diag.astype(dtype)
    )
    # The permutation from its matrix's row argmax, as `sign` through
    # jnp.sign: an optimizer that decays every leaf (optax.adamw) shrinks
    # the stored 0/1 matrix, which must not scale the map.
    perm = jax.nn.one_hot(
      jnp.argmax(jax.lax.stop_gradient(params["perm"]), axis=-1),
      n,
      dtype=dtype,
    )
    return perm, lower, upper

  def dense_matrix(self, params):
    p, lower, upper = self._factors(params, params["log_s"].dtype)
    return p @ lower @ upper

  def forward_and_log_det(self, params, x):
    self._check(x)
    p, lower, upper = self._factors(params, dtypes.compute_dtype(x.dtype))
    w = p @ lower @ upper
    return x @ w.T, self._ld(jnp.sum(params["log_s"]), x)

  def inverse_and_log_det(self, params, y):
    self._check(y)
    p, lower, upper = self._factors(params, dtypes.compute_dtype(y.dtype))
    flat = y.reshape(-1, self.num_channels).T
    # W^{-1} y = U^{-1} L^{-1} P^T y by two triangular solves.
    h = p.T @ flat
    h = jax.scipy.linalg.solve_triangular(
      lower, h, lower=True, unit_diagonal=True
    )
    h = jax.scipy.linalg.solve_triangular(upper, h, lower=False)
    return h.T.reshape(y.shape), self._ld(-jnp.sum(params["log_s"]), y)


@dataclasses.dataclass(frozen=True)
class Permutation(_ChannelMap):
  """Fixed channel permutation (reverse by default, RealNVP); log-det 0."""

  seed: int | None = None

  def permutation(self) -> np.ndarray:
    n = self.num_channels
    if self.seed is None:
      return np.arange(n)[::-1].copy()
    return np.random.default_rng(self.seed).permutation(n)

  def dense_matrix(self, params=None):
    return jnp.eye(self.num_channels)[self.permutation()]

  def forward_and_log_det(self, params, x):
    self._check(x)
    return x[..., self.permutation()], self._ld(0.0, x)

  def inverse_and_log_det(self, params, y):
    self._check(y)
    inv = np.argsort(self.permutation())
    return y[..., inv], self._ld(0.0, y)


@dataclasses.dataclass(frozen=True)
class Identity(_ChannelMap):
  """No mixing (the ablation floor); log-det 0."""

  def dense_matrix(self, params=None):
    return jnp.eye(self.num_channels)

  def forward_and_log_det(self, params, x):
    self._check(x)
    return x, self._ld(0.0, x)

  def inverse_and_log_det(self, params, y):
    self._check(y)
    return y, self._ld(0.0, y)


LINEAR_KINDS = ("cd", "dense", "lu", "permutation", "identity")


def is_cd_kind(kind: str) -> bool:
  """Whether `kind` is 'cd<m>': a CD layer with m >= 1 diagonals (e.g. 'cd3')."""
  return kind.startswith("cd") and kind[2:].isdigit() and int(kind[2:]) >= 1


def make_linear(
  kind: str, num_channels: int, *, event_ndims: int = 1, cd_m: int = 2, **kw
) -> base.Bijector:
  """Builds a channel-mixing bijector by name (see LINEAR_KINDS).

  `kind` may also be "cd<m>" (e.g. "cd3") to pick the number of diagonals.
  """
  if kind == "cd" or is_cd_kind(kind):
    m = int(kind[2:]) if len(kind) > 2 else cd_m
    return CDLinear(
      event_ndims=event_ndims, num_channels=num_channels, m=m, **kw
    )
  table = {
    "dense": DenseLinear,
    "lu": LULinear,
    "permutation": Permutation,
    "identity": Identity,
  }
  if kind not in table:
    raise ConfigError(
      f"unknown linear layer kind {kind!r}; expected one of {LINEAR_KINDS} "
      "or 'cd<m>'"
    )
  return table[kind](event_ndims=event_ndims, num_channels=num_channels, **kw)
