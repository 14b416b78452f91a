"""Oracles for grids, quadrature and derivative stencils (HNS Spec B)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import pde
from lib.core import errors


def test_uniform_quadrature_integrates_sin_squared():
  with jax.enable_x64(True):
    length = 16.0
    g = pde.periodic_grid(128, length)
    f = jnp.sin(2 * jnp.pi * g.x / length) ** 2
    np.testing.assert_allclose(
      pde.integrate(f, g.dx, g.mu), length / 2, atol=1e-12
    )


def test_trapezoid_endpoints_exact_for_linear():
  with jax.enable_x64(True):
    g = pde.interval_grid(37, -1.0, 3.0)
    f = 2.5 * g.x - 0.7
    exact = 1.25 * (3.0**2 - 1.0) - 0.7 * 4.0
    np.testing.assert_allclose(pde.integrate(f, g.dx, g.mu), exact, atol=1e-12)
    # The uniform rule on the same end-point grid double-counts the ends.
    assert abs(pde.integrate(f, g.dx) - exact) > 1e-2


def test_bad_grid_config_raises():
  with pytest.raises(errors.ConfigError, match="quadrature"):
    pde.quadrature_weights(8, "simpson")
  with pytest.raises(errors.ConfigError, match="stencil"):
    pde.first_derivative(jnp.zeros(8), dx=1.0, length=8.0, stencil="upwind")


def _sine_error(stencil_fn, n, length=2 * np.pi, mode=3):
  x = jnp.arange(n) * length / n
  k = 2 * np.pi * mode / length
  u = jnp.sin(k * x)
  du = stencil_fn(u, length / n)
  return float(jnp.max(jnp.abs(du - k * jnp.cos(k * x))) / k), k * length / n


def test_central_is_second_order():
  with jax.enable_x64(True):
    e1, _ = _sine_error(pde.central_dx, 64)
    e2, _ = _sine_error(pde.central_dx, 128)
    np.testing.assert_allclose(e1 / e2, 4.0, rtol=0.02)
    errs = []
    for n in (64, 128):
      x = jnp.arange(n) * 2 * np.pi / n
      d2u = pde.central_dxx(jnp.sin(3 * x), 2 * np.pi / n)
      errs.append(float(jnp.max(jnp.abs(d2u + 9 * jnp.sin(3 * x)))))
    np.testing.assert_allclose(errs[0] / errs[1], 4.0, rtol=0.02)


def test_smooth_stencil_response_and_order():
  with jax.enable_x64(True):
    # Response formula on exp(i w j): compare with the stencil applied to sin.
    for n in (64, 128, 256):
      length = 2 * np.pi
      x = jnp.arange(n) * length / n
      dx = length / n
      u = jnp.sin(3 * x)
      du = pde.smooth_dx(u, dx)
      expected = pde.smooth_response(3 * dx) / dx * jnp.cos(3 * x)
      np.testing.assert_allclose(du, expected, atol=1e-12)
    # Relative error ~ 1.16 (k dx)^2: 1.16e-2 at 0.1, 2.9e-3 at 0.05.
    for w, expected in ((0.1, 1.16e-2), (0.05, 2.9e-3)):
      rel = 1 - float(pde.smooth_response(jnp.asarray(w))) / w
      np.testing.assert_allclose(rel, expected, rtol=0.02)
    e1, _ = _sine_error(pde.smooth_dx, 128)
    e2, _ = _sine_error(pde.smooth_dx, 256)
    np.testing.assert_allclose(e1 / e2, 4.0, rtol=0.02)


def test_spectral_is_exact():
  with jax.enable_x64(True):
    length = 16.0
    x = jnp.arange(64) * length / 64
    k = 2 * np.pi * 5 / length
    u = jnp.sin(k * x) + 0.3 * jnp.cos(2 * k * x)
    np.testing.assert_allclose(
      pde.spectral_dx(u, length),
      k * jnp.cos(k * x) - 0.6 * k * jnp.sin(2 * k * x),
      atol=1e-12,
    )
    np.testing.assert_allclose(
      pde.spectral_dxx(u, length),
      -(k**2) * jnp.sin(k * x) - 1.2 * k**2 * jnp.cos(2 * k * x),
      atol=1e-11,
    )


@pytest.mark.parametrize("stencil", ["central", "smooth", "spectral"])
def test_j_is_skew_symmetric(stencil):
  with jax.enable_x64(True):
    n, length = 64, 10.0
    kf, kg = jax.random.split(jax.random.key(0))
    f = jax.random.normal(kf, (n,), jnp.float64)
    g = jax.random.normal(kg, (n,), jnp.float64)
    j = pde.dx_operator(dx=length / n, length=length, stencil=stencil)
    np.testing.assert_allclose(jnp.dot(f, j(g)), -jnp.dot(j(f), g), atol=1e-12)


def test_canonical_j_is_skew_symmetric():
  with jax.enable_x64(True):
    kf, kg = jax.random.split(jax.random.key(1))
    f = jax.random.normal(kf, (2, 16), jnp.float64)
    g = jax.random.normal(kg, (2, 16), jnp.float64)
    lhs = jnp.sum(f * pde.canonical_j(g))
    np.testing.assert_allclose(
      lhs, -jnp.sum(pde.canonical_j(f) * g), atol=1e-13
    )


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_spectral_derivatives_of_low_precision_fields(dtype):
  # XLA's FFT takes float32/float64 only: a bfloat16 field raised "RFFT
  # input must be float32 or float64" from inside jnp.fft.
  g = pde.periodic_grid(64, 2 * np.pi)
  u = jnp.sin(3 * g.x).astype(dtype)
  kw = dict(dx=g.dx, length=g.length, stencil="spectral")
  du = pde.first_derivative(u, **kw)
  ddu = jax.jit(lambda w: pde.second_derivative(w, **kw))(u)
  assert du.dtype == dtype and ddu.dtype == dtype
  # Reference: numpy's float64 spectral derivatives of the same rounded
  # samples (the rounding noise is differentiated too); the results agree
  # to the output's rounding.
  v = np.asarray(u, np.float64)
  k = 2 * np.pi * np.fft.rfftfreq(64, d=g.length / 64)
  k_odd = np.where(np.arange(k.size) == k.size - 1, 0.0, k)
  ref_du = np.fft.irfft(1j * k_odd * np.fft.rfft(v), n=64)
  ref_ddu = np.fft.irfft(-(k**2) * np.fft.rfft(v), n=64)
  np.testing.assert_allclose(np.asarray(du, np.float64), ref_du, atol=0.02)
  np.testing.assert_allclose(np.asarray(ddu, np.float64), ref_ddu, atol=0.1)
