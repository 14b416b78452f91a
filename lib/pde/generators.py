"""PDE data generators in JAX: exact advection, KdV by ETDRK4, linear wave.

All generators are jitted and vmapped over initial conditions. Initial
conditions are random sine series u0 = sum_j A_j sin(2 pi l_j x / L + phi_j).

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Sec. 4 / App. D.1; Cox & Matthews
(2002) and Kassam & Trefethen (2005) for ETDRK4.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core import errors
from lib.pde import derivatives


class SineParams(NamedTuple):
  """Random sine-series coefficients, each [..., num_modes]."""

  amplitude: jnp.ndarray
  wavenumber: jnp.ndarray  # integer mode numbers l (as float)
  phase: jnp.ndarray


def sample_sine_params(
  key, num, *, num_modes=5, max_amplitude=0.5, max_wavenumber=3
):
  """A ~ U[-a, a], l ~ U{1..max_wavenumber}, phi ~ U[0, 2 pi) per mode."""
  ka, kl, kp = jax.random.split(key, 3)
  shape = (num, num_modes)
  amp = jax.random.uniform(
    ka, shape, minval=-max_amplitude, maxval=max_amplitude
  )
  ls = jax.random.randint(kl, shape, 1, max_wavenumber + 1).astype(amp.dtype)
  phase = jax.random.uniform(kp, shape, maxval=2.0 * jnp.pi)
  return SineParams(amp, ls, phase)


def sine_series(params: SineParams, x, length):
  """u(x) = sum_j A_j sin(2 pi l_j x / L + phi_j) for one set of params."""
  arg = (
    2.0 * jnp.pi * params.wavenumber[:, None] * x[None, :] / length
    + params.phase[:, None]
  )
  return jnp.sum(params.amplitude[:, None] * jnp.sin(arg), axis=0)


def _check_batch(a, ndim: int, what: str, layout: str) -> None:
  errors.check(
    a.ndim == ndim,
    errors.ShapeError,
    f"{what} must be {layout}, got shape {a.shape} (add a batch axis: a[None])",
  )


# ---------------------------------------------------------------- advection


@functools.partial(jax.jit, static_argnames=("length",))
def advection_trajectories(params: SineParams, x, t, *, length):
  """Exact u(x, t) = u0(x + t) (speed c = -1) for a batch of sine ICs.

  We follow the official code's convention c = -1: the labels are
  dH/du = -c u = u, H = 1/2 int u^2, J = d/dx, so u_t = u_x.

  Args:
    params: SineParams with leading batch axis [B, J].
    x: [n] grid; t: [T] times.
    length: domain length.

  Returns:
    [B, T, n] trajectories.
  """

  def one(p):
    return jax.vmap(lambda ti: sine_series(p, x + ti, length))(t)

  return jax.vmap(one)(params)


# --------------------------------------------------------------------- KdV


def etdrk4_coefficients(linear, dt, num_contour=32):
  """ETDRK4 phi-function coefficients by a contour mean (host, float64).

  The linear symbol of KdV, i k^3, is imaginary, so the contour must be the
  *full* circle r_j = exp(2 pi i (j - 1/2) / M). Kassam-Trefethen's
  half-circle-plus-real-part shortcut holds only for real symbols; with it
  Q picks up a spurious imaginary part and the solver blows up.

  Returns:
    (E, E2, Q, f1, f2, f3) complex128 numpy arrays of linear's shape.
  """
  lin = np.asarray(linear, dtype=np.complex128)
  r = np.exp(2j * np.pi * (np.arange(1, num_contour + 1) - 0.5) / num_contour)
  lr = dt * lin[..., None] + r
  e = np.exp(lr)
  q = dt * np.mean((np.exp(lr / 2) - 1.0) / lr, axis=-1)
  f1 = dt * np.mean((-4.0 - lr + e * (4.0 - 3.0 * lr + lr**2)) / lr**3, axis=-1)
  f2 = dt * np.mean((2.0 + lr + e * (lr - 2.0)) / lr**3, axis=-1)
  f3 = dt * np.mean((-4.0 - 3.0 * lr - lr**2 + e * (4.0 - lr)) / lr**3, axis=-1)
  return np.exp(dt * lin), np.exp(dt * lin / 2), q, f1, f2, f3


def kdv_etdrk4(u0, *, length, dt, save_every, num_saves, dealias=True):
  """Solve u_t + u u_x + u_xxx = 0 (periodic) by pseudo-spectral ETDRK4.

  Args:
    u0: [n] initial condition (real).
    length: domain length L.
    dt: internal time step.
    save_every: internal steps between saved frames.
    num_saves: number of frames after u0.
    dealias: apply the 2/3 rule to the nonlinear term.

  Returns:
    [num_saves + 1, n] trajectory at times 0, save_every dt, ...
  """
  n = u0.shape[-1]
  k = np.asarray(2.0 * np.pi * np.fft.rfftfreq(n, d=length / n))
  # u_t = -u_xxx  ->  hat u_t = i k^3 hat u.
  linear = 1j * k**3
  coeffs = etdrk4_coefficients(linear, dt)
  cdtype = jnp.result_type(u0.dtype, jnp.complex64)
  e, e2, q, f1, f2, f3 = (jnp.asarray(c, dtype=cdtype) for c in coeffs)
  k_odd = k.copy()
  if n % 2 == 0:
    k_odd[-1] = 0.0  # Nyquist mode of d/dx
  mask = np.ones_like(k)
  if dealias:
    mask = (np.arange(k.shape[0]) < n / 3.0).astype(np.float64)
  g = jnp.asarray(-0.5j * k_odd * mask, dtype=cdtype)

  def nonlinear(v):
    u = jnp.fft.irfft(v, n=n)
    return g * jnp.fft.rfft(u * u)

  def step(v, _):
    nv = nonlinear(v)
    a = e2 * v + q * nv
    na = nonlinear(a)
    b = e2 * v + q * na
    nb = nonlinear(b)
    c = e2 * a + q * (2.0 * nb - nv)
    nc = nonlinear(c)
    v = e * v + nv * f1 + 2.0 * (na + nb) * f2 + nc * f3
    return v, None

  def save(v, _):
    v, _ = jax.lax.scan(step, v, None, length=save_every)
    return v, jnp.fft.irfft(v, n=n)

  # bfloat16/float16 u0: the FFT takes float32/float64 only; frames are
  # returned in u0's dtype.
  v0 = jnp.fft.rfft(u0.astype(dtypes.compute_dtype(u0.dtype)))
  _, frames = jax.lax.scan(save, v0, None, length=num_saves)
  return jnp.concatenate([u0[None], frames.astype(u0.dtype)], axis=0)


@functools.partial(
  jax.jit,
  static_argnames=("length", "dt", "save_every", "num_saves", "dealias"),
)
def kdv_trajectories(u0, *, length, dt, save_every, num_saves, dealias=True):
  """Batched `kdv_etdrk4` over u0 [B, n] -> [B, num_saves + 1, n]."""
  _check_batch(u0, 2, "kdv_trajectories u0", "[B, n]")
  fn = functools.partial(
    kdv_etdrk4,
    length=length,
    dt=dt,
    save_every=save_every,
    num_saves=num_saves,
    dealias=dealias,
  )
  return jax.vmap(fn)(u0)


def kdv_soliton(x, t, *, a, x0, length):
  """Exact soliton 3a sech^2(sqrt(a)(x - a t - x0)/2), wrapped periodically.

  Exact for u_t + u u_x + u_xxx = 0 on the line; on a long periodic domain
  the tails are below machine precision.
  """
  xi = x - a * t - x0
  xi = (xi + 0.5 * length) % length - 0.5 * length
  return 3.0 * a / jnp.cosh(0.5 * jnp.sqrt(a) * xi) ** 2


# ------------------------------------------------------------- linear wave


@functools.partial(jax.jit, static_argnames=("length",))
def wave_trajectories(state0, t, *, length, speed=1.0):
  """Exact spectral solution of phi_tt = c^2 phi_xx as (phi, pi) states.

  Canonical Hamiltonian system (ours, not in the paper):
  H = int 1/2 pi^2 + 1/2 c^2 phi_x^2, J = [[0, 1], [-1, 0]].

  Args:
    state0: [B, 2, n] initial (phi, pi).
    t: [T] times.
    length: domain length.
    speed: wave speed c.

  Returns:
    [B, T, 2, n] trajectories.

  Raises:
    ShapeError: state0 is not [B, 2, n] (an unbatched [2, n] state was
      read as a batch of two one-point fields).
  """
  _check_batch(state0, 3, "wave_trajectories state0", "[B, 2, n]")
  errors.check(
    state0.shape[1] == 2,
    errors.ShapeError,
    f"wave_trajectories state0 must be [B, 2, n] (phi, pi), got shape "
    f"{state0.shape}",
  )
  n = state0.shape[-1]
  dtype = state0.dtype
  # bfloat16/float16: the FFT takes float32/float64 only (cast back below).
  state0 = state0.astype(dtypes.compute_dtype(dtype))
  k = derivatives.wavenumbers(n, length)
  w = speed * jnp.abs(k)
  phi_h = jnp.fft.rfft(state0[:, 0], axis=-1)[:, None]
  pi_h = jnp.fft.rfft(state0[:, 1], axis=-1)[:, None]
  wt = w[None, None, :] * t[None, :, None]
  # sin(w t)/w -> t at k = 0.
  safe_w = jnp.where(w > 0, w, 1.0)
  sinc_t = jnp.where(w > 0, jnp.sin(wt) / safe_w, t[None, :, None])
  phi = jnp.cos(wt) * phi_h + sinc_t * pi_h
  pi = -w * jnp.sin(wt) * phi_h + jnp.cos(wt) * pi_h
  phi = jnp.fft.irfft(phi, n=n, axis=-1)
  pi = jnp.fft.irfft(pi, n=n, axis=-1)
  out = jnp.stack([phi, pi], axis=-2)
  return out if jnp.dtype(dtype).itemsize >= 4 else out.astype(dtype)
