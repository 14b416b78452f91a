"""Analytic Hamiltonians and functional derivatives (training labels).

Conventions: advection u_t = u_x (c = -1, as the official code), H = 1/2
int u^2, dH/du = u, J = d/dx. KdV u_t + u u_x + u_xxx = 0, H = int -u^3/6 +
1/2 u_x^2, dH/du = -u^2/2 - u_xx, J = d/dx. Linear wave (ours): state
(phi, pi), H = int 1/2 pi^2 + 1/2 c^2 phi_x^2, J canonical.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, App. B.1 / D.1.
"""

import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.pde import derivatives
from lib.pde import grid as grid_lib

PDES = ("advection", "kdv", "wave")


def hamiltonian(pde, u, grid, *, stencil="central", speed=1.0):
  """Analytic H[u] over the last axis (for wave: over [..., 2, n])."""
  dx, length, mu = grid.dx, grid.length, grid.mu
  if pde == "advection":
    return grid_lib.integrate(0.5 * u**2, dx, mu)
  if pde == "kdv":
    u_x = derivatives.first_derivative(u, dx=dx, length=length, stencil=stencil)
    return grid_lib.integrate(-(u**3) / 6.0 + 0.5 * u_x**2, dx, mu)
  if pde == "wave":
    phi, pi = u[..., 0, :], u[..., 1, :]
    phi_x = derivatives.first_derivative(
      phi, dx=dx, length=length, stencil=stencil
    )
    return grid_lib.integrate(0.5 * pi**2 + 0.5 * speed**2 * phi_x**2, dx, mu)
  raise errors.ConfigError(f"unknown pde {pde!r}; expected one of {PDES}")


def functional_derivative_label(pde, u, grid, *, stencil="central", speed=1.0):
  """Analytic dH/du evaluated on data u (the HNS training label)."""
  dx, length = grid.dx, grid.length
  if pde == "advection":
    return u
  if pde == "kdv":
    u_xx = derivatives.second_derivative(
      u, dx=dx, length=length, stencil=stencil
    )
    return -0.5 * u**2 - u_xx
  if pde == "wave":
    phi, pi = u[..., 0, :], u[..., 1, :]
    phi_xx = derivatives.second_derivative(
      phi, dx=dx, length=length, stencil=stencil
    )
    return jnp.stack([-(speed**2) * phi_xx, pi], axis=-2)
  raise errors.ConfigError(f"unknown pde {pde!r}; expected one of {PDES}")


def kdv_fd_hamiltonian(u, grid):
  """KdV H[u] as the official `calculate_Hamiltonian` computes it.

  common/utils.py of anthonyzhou-1/hamiltonian_pdes at its default order 4:
  int (-u^3/6 - 1/2 u u_xx), u_xx by the five-point 4th-order stencil
  (-u_{i+2} + 16 u_{i+1} - 30 u_i + 16 u_{i-1} - u_{i-2}) / (12 dx^2). Ours
  applies that stencil at every point of the periodic grid (the official
  one switches to one-sided stencils at the two end points of its grid).
  Unlike the spectral H, this estimate is not conserved where a trajectory
  holds wavenumbers the stencil does not resolve (steep fronts), so its
  variation over time measures how far a trajectory outruns the grid.

  Args:
    u: [..., n] states on `grid`.
    grid: a periodic `Grid`.

  Returns:
    [...] H of each state.
  """
  roll = lambda k: jnp.roll(u, -k, axis=-1)
  u_xx = (-roll(2) + 16.0 * roll(1) - 30.0 * u + 16.0 * roll(-1) - roll(-2)) / (
    12.0 * grid.dx**2
  )
  return grid_lib.integrate(-(u**3) / 6.0 - 0.5 * u * u_xx, grid.dx, grid.mu)


def lowest_h_variation(trajectories, grid, num_keep: int) -> np.ndarray:
  """Indices of the `num_keep` KdV trajectories whose H varies least.

  The official loader's H filter (data/dataset_1D.py, `H_filter` 0.5 in
  configs/*/kdv.yaml) keeps the first half of a list of (index, H variance)
  pairs, "the samples by lowest variance in Hamiltonian", in the training
  and the validation split alike; the code that builds the list is not
  released. Ours: the variance over time of `kdv_fd_hamiltonian` (the
  official H function) per trajectory, the `num_keep` lowest, returned in
  their original order.

  Args:
    trajectories: [B, T, n] on `grid`.
    grid: a periodic `Grid`.
    num_keep: how many to keep, 1 <= num_keep <= B.

  Returns:
    int array [num_keep], ascending.
  """
  errors.check(
    jnp.ndim(trajectories) == 3,
    errors.ShapeError,
    "lowest_h_variation takes trajectories [B, T, n], got shape "
    f"{jnp.shape(trajectories)}",
  )
  num = jnp.shape(trajectories)[0]
  errors.check(
    1 <= num_keep <= num,
    errors.ConfigError,
    f"num_keep={num_keep} must be in [1, {num}] (the trajectories given)",
  )
  h = np.asarray(kdv_fd_hamiltonian(jnp.asarray(trajectories), grid))
  variance = np.var(h.astype(np.float64), axis=1)
  return np.sort(np.argsort(variance, kind="stable")[:num_keep])
