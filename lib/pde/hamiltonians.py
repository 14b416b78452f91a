"""Analytic Hamiltonians and functional derivatives (training labels).

Conventions: advection u_t = u_x (c = -1, as the official code), H = 1/2
int u^2, dH/du = u, J = d/dx. KdV u_t + u u_x + u_xxx = 0, H = int -u^3/6 +
1/2 u_x^2, dH/du = -u^2/2 - u_xx, J = d/dx. Linear wave (ours): state
(phi, pi), H = int 1/2 pi^2 + 1/2 c^2 phi_x^2, J canonical.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, App. B.1 / D.1.
"""

import jax.numpy as jnp

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
