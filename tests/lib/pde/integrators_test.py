"""Oracles for the lax.scan integrators (HNS Spec B)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import pde
from lib.core import errors


def test_ab2_is_second_order():
  with jax.enable_x64(True):
    lam = -0.7 + 1.3j
    f = lambda u: lam * u
    errs = []
    for steps in (500, 1000):
      dt = 1.0 / steps
      traj = pde.ab2_rollout(f, jnp.asarray(1.0 + 0.0j), dt, steps)
      errs.append(abs(complex(traj[-1]) - np.exp(lam)))
    np.testing.assert_allclose(errs[0] / errs[1], 4.0, rtol=0.05)


def test_rk4_conserves_discrete_hamiltonian_of_advection():
  with jax.enable_x64(True):
    length, n = 16.0, 128
    g = pde.periodic_grid(n, length)
    params = pde.sample_sine_params(jax.random.key(0), 1, num_modes=5)
    params = jax.tree.map(lambda a: a[0].astype(jnp.float64), params)
    u0 = pde.sine_series(params, g.x, length)
    j = pde.dx_operator(dx=g.dx, length=length, stencil="central")
    h = lambda u: pde.integrate(0.5 * u**2, g.dx)
    f = pde.hamiltonian_vector_field(
      lambda u: pde.functional_derivative(h, u, g.mu * g.dx), j
    )
    traj = jax.jit(pde.rk4_rollout, static_argnums=(0, 3))(
      f, u0, 0.1 * g.dx, 100
    )
    hs = jax.vmap(h)(traj)
    drift = float(jnp.max(jnp.abs(hs - hs[0])) / hs[0])
    assert drift < 1e-8, drift


def test_richardson_is_fourth_order_on_polynomial():
  with jax.enable_x64(True):
    dt = 0.1
    t = jnp.arange(12) * dt
    traj = (t**4 - 2 * t**3 + t)[:, None]
    exact = (4 * t**3 - 6 * t**2 + 1)[:, None]
    # 5-point formulas are exact for quartics.
    np.testing.assert_allclose(pde.richardson_dudt(traj, dt), exact, atol=1e-10)


def test_richardson_needs_six_steps():
  # Its step-1 formula reads u_1..u_5 and the step T-2 one u_{T-6}..u_{T-2}:
  # at T = 5 these read u[5] (clamped to u[4]) and u[-1] (wrapped to u[4]),
  # giving du/dt of exp(t) off by ~1.5 with no error. T >= 6 is exact to
  # 4th order.
  t = jnp.linspace(0.0, 0.5, 6)
  np.testing.assert_allclose(
    pde.richardson_dudt(jnp.exp(t), 0.1), jnp.exp(t), rtol=1e-3
  )
  with pytest.raises(errors.ShapeError, match=">= 6 steps"):
    pde.richardson_dudt(jnp.exp(t[:5]), 0.1)


def test_rollouts_of_a_bfloat16_field_under_a_float32_step():
  # A float32 step promoted the bfloat16 carry and lax.scan refused it
  # ("carry input and carry output must have equal types"); ab2_rollout
  # already promoted. Now all three return the step's dtype.
  lam = jnp.asarray(-0.5, jnp.float32)
  u0 = jnp.ones((3,), jnp.bfloat16)
  f = lambda u: lam * u
  rk4 = pde.rk4_rollout(f, u0, 0.1, 10)
  ab2 = pde.ab2_rollout(f, u0, 0.1, 10)
  nxt = pde.next_step_rollout(lambda u: u + 0.1 * f(u), u0, 10)
  assert rk4.dtype == ab2.dtype == nxt.dtype == jnp.float32
  np.testing.assert_allclose(rk4[-1], np.exp(-0.5), rtol=1e-6)
  np.testing.assert_allclose(nxt[-1], 0.95**10, rtol=1e-6)  # Euler's map
