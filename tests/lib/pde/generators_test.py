"""Oracles for the PDE generators and analytic labels (HNS Spec B)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import pde
from lib.core import errors


def _params(key, num, num_modes=5):
  p = pde.sample_sine_params(key, num, num_modes=num_modes)
  return jax.tree.map(lambda a: a.astype(jnp.float64), p)


def test_advection_periodic_and_conserved():
  with jax.enable_x64(True):
    length, n = 16.0, 128
    g = pde.periodic_grid(n, length)
    params = _params(jax.random.key(0), 3)
    t = jnp.asarray([0.0, 3.7, length, length + 3.7])
    traj = pde.advection_trajectories(params, g.x, t, length=length)
    np.testing.assert_allclose(traj[:, 2], traj[:, 0], atol=1e-12)
    np.testing.assert_allclose(traj[:, 3], traj[:, 1], atol=1e-12)
    for power in (1, 2):
      q = pde.integrate(traj**power, g.dx)
      np.testing.assert_allclose(q, q[:, :1] * jnp.ones_like(q), atol=1e-12)


def test_advection_labels_match_richardson():
  with jax.enable_x64(True):
    length, n, dt = 16.0, 128, 0.02
    g = pde.periodic_grid(n, length)
    traj = pde.advection_trajectories(
      _params(jax.random.key(1), 2), g.x, jnp.arange(30) * dt, length=length
    )
    j = pde.dx_operator(dx=g.dx, length=length, stencil="spectral")
    label = pde.functional_derivative_label("advection", traj, g)
    rhs = j(label)
    dudt = jax.vmap(pde.richardson_dudt, in_axes=(0, None))(traj, dt)
    err = float(pde.relative_l2(rhs.ravel(), dudt.ravel()))
    assert err < 1e-4, err


def test_etdrk4_full_circle_coefficients_are_consistent():
  with jax.enable_x64(True):
    # For L -> 0 the phi-functions tend to dt/2, dt/6, dt/6, dt/6 (Q, f1..3)
    # and the full-circle contour keeps them real for imaginary L.
    dt = 0.01
    e, e2, q, f1, f2, f3 = pde.etdrk4_coefficients(
      1j * np.array([0.0, 1.0]), dt
    )
    np.testing.assert_allclose(q[0], dt / 2, atol=1e-15)
    np.testing.assert_allclose([f1[0], f2[0], f3[0]], [dt / 6] * 3, atol=1e-15)
    np.testing.assert_allclose(q[1], (np.exp(0.5j * dt) - 1) / 1j, atol=1e-14)


def test_kdv_single_soliton():
  with jax.enable_x64(True):
    length, n = 100.0, 256
    g = pde.periodic_grid(n, length)
    u0 = pde.kdv_soliton(g.x, 0.0, a=0.5, x0=30.0, length=length)
    traj = pde.kdv_etdrk4(
      u0, length=length, dt=0.01, save_every=500, num_saves=2
    )
    exact = pde.kdv_soliton(g.x, 10.0, a=0.5, x0=30.0, length=length)
    err = float(jnp.max(jnp.abs(traj[-1] - exact)))
    assert err < 1e-6, err


def test_kdv_conserved_quantities_and_labels():
  with jax.enable_x64(True):
    length, n = 100.0, 256
    g = pde.periodic_grid(n, length)
    params = _params(jax.random.key(3), 1, num_modes=10)
    u0 = jax.vmap(lambda p: pde.sine_series(p, g.x, length))(params)
    traj = pde.kdv_trajectories(
      u0, length=length, dt=0.01, save_every=1000, num_saves=10
    )[0]
    mass = pde.integrate(traj, g.dx)
    assert float(jnp.max(jnp.abs(mass - mass[0]))) < 1e-12
    energy = pde.integrate(traj**2, g.dx)
    h = pde.hamiltonian("kdv", traj, g, stencil="spectral")
    for q in (energy, h):
      drift = float(jnp.max(jnp.abs(q - q[0])) / jnp.abs(q[0]))
      assert drift < 1e-7, drift
    # Analytic labels: J dH/du (spectral) matches Richardson du/dt.
    dt = 0.1
    fine = pde.kdv_etdrk4(
      traj[0], length=length, dt=0.01, save_every=10, num_saves=20
    )
    label = pde.functional_derivative_label("kdv", fine, g, stencil="spectral")
    rhs = pde.spectral_dx(label, length)
    dudt = pde.richardson_dudt(fine, dt)
    err = float(pde.relative_l2(rhs[2:-2].ravel(), dudt[2:-2].ravel()))
    assert err < 1e-3, err


def test_wave_exact_solution_is_hamiltonian_flow():
  with jax.enable_x64(True):
    length, n = 8.0, 64
    g = pde.periodic_grid(n, length)
    p = _params(jax.random.key(4), 2, num_modes=3)
    phi0 = pde.sine_series(jax.tree.map(lambda a: a[0], p), g.x, length)
    pi0 = pde.sine_series(jax.tree.map(lambda a: a[1], p), g.x, length)
    state0 = jnp.stack([phi0, pi0])[None]
    dt = 0.01
    traj = pde.wave_trajectories(state0, jnp.arange(20) * dt, length=length)[0]
    label = pde.functional_derivative_label("wave", traj, g, stencil="spectral")
    rhs = pde.canonical_j(label)
    dudt = pde.richardson_dudt(traj, dt)
    err = float(pde.relative_l2(rhs.ravel(), dudt.ravel()))
    assert err < 1e-6, err
    h = pde.hamiltonian("wave", traj, g, stencil="spectral")
    np.testing.assert_allclose(h, h[0] * jnp.ones_like(h), rtol=1e-12)


def test_generators_refuse_unbatched_initial_conditions():
  # An unbatched wave state [2, n] was read as two one-point fields and
  # returned a [2, T, 2, 2]-shaped answer of garbage; an unbatched KdV u0
  # raised IndexError from inside the solver.
  g = pde.periodic_grid(16, 2 * np.pi)
  state = jnp.stack([jnp.sin(g.x), jnp.zeros_like(g.x)])
  with pytest.raises(errors.ShapeError, match=r"\[B, 2, n\]"):
    pde.wave_trajectories(state, jnp.array([0.0, 1.0]), length=g.length)
  with pytest.raises(errors.ShapeError, match=r"\[B, n\]"):
    pde.kdv_trajectories(
      jnp.sin(g.x), length=g.length, dt=0.01, save_every=1, num_saves=1
    )
  # Batched, phi(t) = sin(x) cos(t) for phi0 = sin x, pi0 = 0, c = 1.
  out = pde.wave_trajectories(state[None], jnp.array([1.0]), length=g.length)
  np.testing.assert_allclose(out[0, 0, 0], np.sin(g.x) * np.cos(1.0), atol=1e-5)


def test_kdv_of_a_bfloat16_initial_condition():
  # rfft refused it ("RFFT input must be float32 or float64"); the solve now
  # runs in float32 from the rounded u0 and returns bfloat16 frames.
  g = pde.periodic_grid(64, 50.0)
  u0 = pde.kdv_soliton(g.x, 0.0, a=1.0, x0=25.0, length=g.length)
  kw = dict(length=g.length, dt=0.01, save_every=10, num_saves=3)
  low = pde.kdv_trajectories(u0[None].astype(jnp.bfloat16), **kw)
  assert low.dtype == jnp.bfloat16
  exact = pde.kdv_soliton(g.x, 0.3, a=1.0, x0=25.0, length=g.length)
  np.testing.assert_allclose(
    np.asarray(low[0, -1], np.float32), exact, atol=0.03
  )


def test_wave_of_a_bfloat16_state():
  # As for KdV: rfft refused a bfloat16 state.
  g = pde.periodic_grid(16, 2 * np.pi)
  state = jnp.stack([jnp.sin(g.x), jnp.zeros_like(g.x)])[None]
  out = pde.wave_trajectories(
    state.astype(jnp.bfloat16), jnp.array([1.0]), length=g.length
  )
  assert out.dtype == jnp.bfloat16
  phi = np.asarray(out[0, 0, 0], np.float32)
  np.testing.assert_allclose(phi, np.sin(g.x) * np.cos(1.0), atol=0.01)


def test_kdv_fd_hamiltonian_is_the_five_point_stencil_symbol():
  # u = a sin(k x): int -u^3/6 = 0 over whole periods, and the 5-point u_xx
  # of sin(k x) is lambda sin(k x) with lambda = (-2 cos 2w + 32 cos w - 30)
  # / (12 dx^2), w = k dx; so H = -a^2 lambda L / 4 exactly, which tends to
  # the continuum 1/2 int u_x^2 = a^2 k^2 L / 4 at 4th order.
  with jax.enable_x64(True):
    length, a = 16.0, 0.7
    for n in (32, 64):
      g = pde.periodic_grid(n, length)
      k = 2 * np.pi * 3 / length
      w = k * g.dx
      lam = (-2 * np.cos(2 * w) + 32 * np.cos(w) - 30) / (12 * g.dx**2)
      h = pde.kdv_fd_hamiltonian(a * jnp.sin(k * g.x), g)
      np.testing.assert_allclose(h, -(a**2) * lam * length / 4, rtol=1e-12)
    errs = []
    for n in (64, 128):
      g = pde.periodic_grid(n, length)
      h = pde.kdv_fd_hamiltonian(a * jnp.sin(k * g.x), g)
      errs.append(abs(float(h) - a**2 * k**2 * length / 4))
    assert 14 < errs[0] / errs[1] < 18  # 4th order: 16x per halving


def test_lowest_h_variation_keeps_the_steadiest_in_order():
  with jax.enable_x64(True):
    length, n = 16.0, 64
    g = pde.periodic_grid(n, length)
    k = 2 * np.pi / length
    t = np.linspace(0.0, 1.0, 9)[:, None]
    base = np.sin(k * np.asarray(g.x))[None, :]
    # H of (1 + s t) sin(kx) varies over time by the slope s; s = 0 is steady.
    slopes = np.array([0.5, 0.0, 2.0, 0.1, 1.0])
    traj = (1.0 + slopes[:, None, None] * t[None]) * base[None]
    np.testing.assert_array_equal(pde.lowest_h_variation(traj, g, 3), [0, 1, 3])
    np.testing.assert_array_equal(pde.lowest_h_variation(traj, g, 5), range(5))
    with pytest.raises(errors.ConfigError, match="num_keep=0"):
      pde.lowest_h_variation(traj, g, 0)
    with pytest.raises(errors.ShapeError, match=r"\[B, T, n\]"):
      pde.lowest_h_variation(traj[0], g, 1)
