"""Skew-adjoint J operators of Hamiltonian PDEs, u_t = J dH/du.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Sec. 3 (J = d/dx for advection and
KdV); the canonical symplectic J for (phi, pi) systems is ours.
"""

import functools

import jax.numpy as jnp

from lib.pde import derivatives


def dx_operator(*, dx, length, stencil="central"):
  """J = d/dx as a function of a field [..., n].

  Central, smooth and spectral stencils are all antisymmetric, so
  <f, J g> = -<J f, g> holds exactly with uniform weights and the
  semi-discrete flow conserves any discrete Hamiltonian.
  """
  return functools.partial(
    derivatives.first_derivative, dx=dx, length=length, stencil=stencil
  )


def canonical_j(grad):
  """Canonical symplectic J = [[0, 1], [-1, 0]] on a state [..., 2, n].

  For a wave state (phi, pi): phi_t = dH/dpi, pi_t = -dH/dphi.
  """
  return jnp.stack([grad[..., 1, :], -grad[..., 0, :]], axis=-2)
