"""Periodic derivative stencils as pure functions over the last axis.

Central differences (2nd order), the 11-point smooth noise-robust
Holoborodko differentiator used by HNS for KdV, and spectral derivatives (the
test reference).

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, App. D.1.
"""

import jax.numpy as jnp

from lib.core import dtypes
from lib.core import errors

STENCILS = ("central", "smooth", "spectral")

# Holoborodko smooth noise-robust differentiator, N = 11: coefficients of
# (f_{i+k} - f_{i-k}) / (512 dx), k = 1..5. The code calls it "order 8" but it
# is only 2nd-order accurate (rel. error ~1.16 (k dx)^2); it is a low-pass
# filter that damps high wavenumbers, which is why HNS uses it for KdV.
_SMOOTH_COEFFS = (42.0, 48.0, 27.0, 8.0, 1.0)


def _shift(u, k):
  """u_{i+k} with periodic wrap (roll by -k)."""
  return jnp.roll(u, -k, axis=-1)


def central_dx(u, dx):
  """(u_{i+1} - u_{i-1}) / (2 dx)."""
  return (_shift(u, 1) - _shift(u, -1)) / (2.0 * dx)


def central_dxx(u, dx):
  """(u_{i+1} - 2 u_i + u_{i-1}) / dx^2."""
  return (_shift(u, 1) - 2.0 * u + _shift(u, -1)) / dx**2


def smooth_dx(u, dx):
  """11-point Holoborodko smooth differentiator (2nd order, low-pass)."""
  out = 0.0
  for k, c in enumerate(_SMOOTH_COEFFS, start=1):
    out = out + c * (_shift(u, k) - _shift(u, -k))
  return out / (512.0 * dx)


def smooth_response(omega):
  """Response D(w) of `smooth_dx` on exp(i w j): d/dx -> i D(w)/dx.

  D(w) = [84 sin w + 96 sin 2w + 54 sin 3w + 16 sin 4w + 2 sin 5w] / 512.
  """
  return (
    sum(2.0 * c * jnp.sin(k * omega) for k, c in enumerate(_SMOOTH_COEFFS, 1))
    / 512.0
  )


def wavenumbers(n, length):
  """Angular wavenumbers of `jnp.fft.rfft` for a periodic grid of length L."""
  return 2.0 * jnp.pi * jnp.fft.rfftfreq(n, d=length / n)


def spectral_dx(u, length):
  """Spectral d/dx: multiply rfft(u) by i k (Nyquist mode zeroed).

  bfloat16/float16 fields are transformed in float32 and returned in their
  own dtype.
  """
  if dtypes.is_half(u.dtype):
    return spectral_dx(u.astype(jnp.float32), length).astype(u.dtype)
  n = u.shape[-1]
  k = wavenumbers(n, length)
  if n % 2 == 0:
    # The Nyquist mode of an odd derivative is not real; drop it.
    k = k.at[-1].set(0.0)
  return jnp.fft.irfft(1j * k * jnp.fft.rfft(u, axis=-1), n=n, axis=-1)


def spectral_dxx(u, length):
  """Spectral d^2/dx^2: multiply rfft(u) by -k^2 (low precision as above)."""
  if dtypes.is_half(u.dtype):
    return spectral_dxx(u.astype(jnp.float32), length).astype(u.dtype)
  n = u.shape[-1]
  k = wavenumbers(n, length)
  return jnp.fft.irfft(-(k**2) * jnp.fft.rfft(u, axis=-1), n=n, axis=-1)


def first_derivative(u, *, dx, length, stencil="central"):
  """Dispatch d/dx by stencil name ("central", "smooth" or "spectral")."""
  if stencil == "central":
    return central_dx(u, dx)
  if stencil == "smooth":
    return smooth_dx(u, dx)
  if stencil == "spectral":
    return spectral_dx(u, length)
  raise errors.ConfigError(
    f"unknown stencil {stencil!r}; expected one of {STENCILS}"
  )


def second_derivative(u, *, dx, length, stencil="central"):
  """Dispatch d^2/dx^2: "central" 3-point or "spectral"; "smooth" also
  takes the 3-point stencil (the official KdV labels' central u_xx)."""
  if stencil in ("central", "smooth"):
    return central_dxx(u, dx)
  if stencil == "spectral":
    return spectral_dxx(u, length)
  raise errors.ConfigError(
    f"unknown stencil {stencil!r}; expected one of {STENCILS}"
  )
