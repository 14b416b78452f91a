"""Periodic grids and quadrature weights for Hamiltonian functionals.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025 (arXiv:2505.13275), Sec. 3.
"""

import math
import operator
from typing import NamedTuple

import jax.numpy as jnp

from lib.core import errors

QUADRATURES = ("uniform", "trapezoid_endpoints")


class Grid(NamedTuple):
  """A 1D grid: points `x` [n], spacing `dx`, quadrature weights `mu` [n].

  The integral of f is `sum(mu * f) * dx` (see `integrate`).
  """

  x: jnp.ndarray
  dx: float
  mu: jnp.ndarray
  length: float

  @property
  def n(self) -> int:
    return self.x.shape[-1]


def quadrature_weights(n: int, kind: str = "uniform", dtype=None):
  """Quadrature weights mu_i (to be multiplied by dx).

  Args:
    n: number of grid points.
    kind: "uniform" (mu_i = 1, the periodic trapezoid rule, spectrally
      accurate for periodic integrands on an end-point-excluded grid) or
      "trapezoid_endpoints" (1/2 at both ends, as in the official code; only
      right when the grid includes both end points).
    dtype: optional dtype.

  Returns:
    [n] weights.
  """
  errors.check(n >= 2, errors.ConfigError, f"grid needs n >= 2, got {n}")
  errors.check(
    kind in QUADRATURES,
    errors.ConfigError,
    f"unknown quadrature {kind!r}; expected one of {QUADRATURES}",
  )
  mu = jnp.ones((n,), dtype=dtype)
  if kind == "trapezoid_endpoints":
    mu = mu.at[0].set(0.5).at[-1].set(0.5)
  return mu


def _points(n) -> int:
  """`n` as an int; ConfigError unless it is an integer >= 2 (not 2.5, True)."""
  try:
    value = None if isinstance(n, bool) else operator.index(n)
  except TypeError:
    value = None
  errors.check(
    value is not None and value >= 2,
    errors.ConfigError,
    f"grid needs an integer number of points n >= 2, got {n!r}",
  )
  return value


def _check_length(length) -> None:
  """ConfigError unless `length` is a finite number > 0."""
  try:
    value = None if isinstance(length, str | bool) else float(length)
  except (TypeError, ValueError):
    value = None
  errors.check(
    value is not None and math.isfinite(value) and value > 0,
    errors.ConfigError,
    f"grid length must be a finite number > 0, got {length!r}",
  )


def periodic_grid(n: int, length: float, kind: str = "uniform") -> Grid:
  """Periodic grid x_i = i L / n, i = 0..n-1 (end point excluded, as LPSDA).

  Raises:
    ConfigError: `n` is not an integer >= 2, or `length` is not a finite
      number > 0.
  """
  n = _points(n)
  _check_length(length)
  dx = length / n
  x = jnp.arange(n) * dx
  return Grid(x=x, dx=dx, mu=quadrature_weights(n, kind), length=length)


def interval_grid(n: int, lo: float, hi: float) -> Grid:
  """Grid on [lo, hi] with both end points and trapezoid weights (HNS toy)."""
  n = _points(n)
  errors.check(hi > lo, errors.ConfigError, f"need hi > lo, got {lo}, {hi}")
  x = jnp.linspace(lo, hi, n)
  dx = (hi - lo) / (n - 1)
  mu = quadrature_weights(n, "trapezoid_endpoints")
  return Grid(x=x, dx=dx, mu=mu, length=hi - lo)


def integrate(f, dx, mu=None):
  """Quadrature sum_i mu_i f_i dx over the last axis (uniform mu if None)."""
  if mu is None:
    return jnp.sum(f, axis=-1) * dx
  return jnp.sum(mu * f, axis=-1) * dx
