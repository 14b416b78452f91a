"""Circulant-diagonal (CD) invertible linear layer: W = D_1 C_1 D_2 ... C_{m-1} D_m.

The layer mixes the last (channel) axis; every other axis broadcasts, so on an
image (..., H, W, n) it is a 1x1 convolution whose weight is a product of m
diagonal and m-1 circulant n x n matrices. Circulants are applied in O(n log n)
through the real FFT, and log|det W| costs O(mn) with no FFT at all.

Real-valued parameterisation (spec A.2; the paper leaves this open). A real
circulant circ(c) has eigenvalues chat = rfft(c) (half spectrum, n//2+1
entries) with chat_0 (DC) real and, for even n, chat_{n/2} (Nyquist) real.
Storing those two as real scalars keeps the map exactly real; then

  log|det C| = log|chat_0| + 2 sum_{0<k<n/2} log|chat_k| + [n even] log|chat_{n/2}|

because the full spectrum is Hermitian (chat_{n-k} = conj(chat_k)).

Two parameterisations:
  * "polar" (default, invertible by construction): d = sign * exp(a) with a
    fixed sign, chat_k = exp(rho_k + i theta_k); DC/Nyquist use the real
    phase sign(cos theta) (gradient zero, so the sign is frozen at init).
  * "raw" (closer to the paper): unconstrained real d and complex chat with the
    imaginary DC/Nyquist parts masked to 0. It can become singular.

Two implementations of the maps, same numbers (tests in float64):
  * "fft": the factors applied in turn, each circulant through rfft/irfft,
    O(m n log n) per vector;
  * "dense": W and W^-1 materialised from the O(n) parameters (for m = 2 a
    gather of irfft(chat) and irfft(1/chat) with the diagonals folded in,
    O(n^2); for m > 2 the identity pushed through the FFT path), then one
    matmul per call. At small n a matmul beats a chain of FFTs.
  * "auto" (default) picks by n, batch and backend from a table measured with
    `experiments/bench_cdflow.py` (`DENSE_MAX_N`).
log|det W| is the O(mn) half-spectrum sum either way.

Init "random" (default): d = 1, |chat| = 1, random phases, i.e. a random
orthogonal circulant with log|det W| = 0 (Glow's random-rotation init).
Init "identity": all phases 0, W = I.

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), sections 2.2, 3.1, 3.2.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core.errors import ConfigError
from lib.flows import base


def half_spectrum_weights(n: int) -> np.ndarray:
  """Multiplicity of each rfft bin in the full length-n spectrum.

  1 for DC, 1 for Nyquist when n is even, 2 for every other bin.
  """
  w = np.full(n // 2 + 1, 2.0)
  w[0] = 1.0
  if n % 2 == 0:
    w[-1] = 1.0
  return w


def real_bins_mask(n: int) -> np.ndarray:
  """True for the bins whose eigenvalue is real (DC, and Nyquist for even n)."""
  mask = np.zeros(n // 2 + 1, dtype=bool)
  mask[0] = True
  if n % 2 == 0:
    mask[-1] = True
  return mask


def circulant_matvec(chat: jax.Array, x: jax.Array, n: int) -> jax.Array:
  """circ(c) x along the last axis, with chat = rfft(c) (half spectrum)."""
  return jnp.fft.irfft(chat * jnp.fft.rfft(x, n=n, axis=-1), n=n, axis=-1)


def circulant_solve(chat: jax.Array, y: jax.Array, n: int) -> jax.Array:
  """circ(c)^{-1} y along the last axis: divide by the eigenvalues."""
  return jnp.fft.irfft(jnp.fft.rfft(y, n=n, axis=-1) / chat, n=n, axis=-1)


IMPLEMENTATIONS = ("auto", "fft", "dense")

# "auto" materialises W when n <= DENSE_MAX_N[backend] and the batch has at
# least n vectors (so the O(n^2) build is amortised). CPU: measured with
# `python -m experiments.bench_cdflow --config configs/bench_cdflow.py:quick`
# (2 cores, batch 4096, m = 2: the dense path is faster up to n = 256 and
# slower at 512). GPU/TPU: unmeasured; matmul units make the dense path the
# better bet up to larger n, so 1024 until someone measures it.
DENSE_MAX_N = {"cpu": 256, "gpu": 1024, "tpu": 1024}


def circulant_from_spectrum(chat: jax.Array, n: int) -> jax.Array:
  """Dense circ(c)[i, j] = c[(i - j) mod n], c = irfft(chat), in O(n^2)."""
  c = jnp.fft.irfft(chat, n=n)
  idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
  return c[idx]


@dataclasses.dataclass(frozen=True)
class CDLinear(base.Bijector):
  """y = W x with W = D_1 C_1 D_2 ... C_{m-1} D_m over the last axis.

  Attributes:
    num_channels: n, size of the last axis.
    m: number of diagonal factors (m - 1 circulants). m = 1 is diagonal only.
      The paper's default is 2 (W = D_1 C D_2).
    param: "polar" (invertible by construction) or "raw".
    init_kind: "random" (random orthogonal circulants) or "identity".
    spectral_rescale: divide every factor by its largest |entry| (its
      spectral norm), the paper's stabiliser; off by default.
    implementation: "auto" (default), "fft" or "dense" (see the module
      docstring); changes speed, not the map.
    event_ndims: 1 for vectors, 3 for (H, W, C) images (log-det summed over
      pixels).
  """

  num_channels: int = 1
  m: int = 2
  param: str = "polar"
  init_kind: str = "random"
  spectral_rescale: bool = False
  implementation: str = "auto"

  def __post_init__(self):
    if self.num_channels < 1:
      raise ConfigError(f"num_channels must be >= 1, got {self.num_channels}")
    if self.m < 1:
      raise ConfigError(f"m must be >= 1, got {self.m}")
    if self.param not in ("polar", "raw"):
      raise ConfigError(f"param must be 'polar' or 'raw', got {self.param!r}")
    if self.init_kind not in ("random", "identity"):
      raise ConfigError(
        f"init_kind must be 'random' or 'identity', got {self.init_kind!r}"
      )
    if self.implementation not in IMPLEMENTATIONS:
      raise ConfigError(
        f"implementation must be one of {IMPLEMENTATIONS}, got "
        f"{self.implementation!r}"
      )

  # -- parameters -----------------------------------------------------------

  def init(self, key, y=None):
    del y  # CD init is data independent.
    n, m = self.num_channels, self.m
    k = n // 2 + 1
    if self.init_kind == "random":
      theta = jax.random.uniform(key, (m - 1, k), maxval=2 * jnp.pi)
    else:
      theta = jnp.zeros((m - 1, k))
    if self.param == "polar":
      return {
        "log_abs_diag": jnp.zeros((m, n)),
        # Fixed diagonal signs; +1 (spec A.2 allows s = +1). Not trained.
        "diag_sign": jnp.ones((m, n)),
        "log_abs_eig": jnp.zeros((m - 1, k)),
        "phase": theta,
      }
    mask = jnp.asarray(real_bins_mask(n))
    re = jnp.where(mask, jnp.sign(jnp.cos(theta)), jnp.cos(theta))
    im = jnp.where(mask, 0.0, jnp.sin(theta))
    return {"diag": jnp.ones((m, n)), "eig_re": re, "eig_im": im}

  def factors(self, params):
    """Returns (diagonals [m, n] real, eigenvalues [m-1, n//2+1] complex)."""
    n = self.num_channels
    mask = jnp.asarray(real_bins_mask(n))
    if self.param == "polar":
      sign = jnp.sign(jax.lax.stop_gradient(params["diag_sign"]))
      diag = sign * jnp.exp(params["log_abs_diag"])
      phase = params["phase"]
      # DC/Nyquist must be real: phase in {0, pi} via sign(cos); jnp.sign has
      # zero gradient, so these phases stay frozen at their initial value.
      real_part = jnp.where(mask, jnp.sign(jnp.cos(phase)), jnp.cos(phase))
      imag_part = jnp.where(mask, 0.0, jnp.sin(phase))
      eig = jnp.exp(params["log_abs_eig"]) * (real_part + 1j * imag_part)
    else:
      diag = params["diag"]
      eig = params["eig_re"] + 1j * jnp.where(mask, 0.0, params["eig_im"])
    if self.spectral_rescale:
      diag = diag / jnp.max(jnp.abs(diag), axis=-1, keepdims=True)
      eig = eig / jnp.max(jnp.abs(eig), axis=-1, keepdims=True)
    return diag, eig

  def log_abs_det_matrix(self, params) -> jax.Array:
    """log|det W| for one channel vector, O(mn), no FFT."""
    w = jnp.asarray(half_spectrum_weights(self.num_channels))
    if self.param == "polar" and not self.spectral_rescale:
      return jnp.sum(params["log_abs_diag"]) + jnp.sum(
        w * params["log_abs_eig"]
      )
    diag, eig = self.factors(params)
    return jnp.sum(jnp.log(jnp.abs(diag))) + jnp.sum(w * jnp.log(jnp.abs(eig)))

  def dense_matrix(self, params) -> jax.Array:
    """W (n x n) by pushing the identity through the FFT path (a reference)."""
    eye = jnp.eye(self.num_channels)
    # Row i of forward(eye) is W e_i, the i-th column of W.
    return self._apply_fft(params, eye).T

  def weight_matrices(self, params, dtype=jnp.float32):
    """(W, W^-1) materialised from the factors, for the "dense" path.

    m = 2: W = D1 circ(c) D2 and W^-1 = D2^-1 circ(c') D1^-1 with
    c = irfft(chat), c' = irfft(1 / chat): two gathers, O(n^2). m > 2: the
    identity through the FFT maps, O(m n^2 log n).
    """
    n = self.num_channels
    if self.m != 2:
      eye = jnp.eye(n, dtype=dtype)
      return (
        self._apply_fft(params, eye).T,
        self._apply_inverse_fft(params, eye).T,
      )
    diag, eig = self.factors(params)
    diag = diag.astype(dtype)
    eig = eig.astype(_complex(dtype))
    c = circulant_from_spectrum(eig[0], n)
    c_inv = circulant_from_spectrum(1.0 / eig[0], n)
    w = diag[0][:, None] * c * diag[1][None, :]
    w_inv = (1.0 / diag[1])[:, None] * c_inv * (1.0 / diag[0])[None, :]
    return w, w_inv

  def use_dense(self, x) -> bool:
    """Whether the maps on `x` take the "dense" path (static: shapes only)."""
    if self.implementation != "auto":
      return self.implementation == "dense"
    n = self.num_channels
    batch = x.size // n
    limit = DENSE_MAX_N.get(jax.default_backend(), 0)
    return self.m > 1 and n <= limit and batch >= n

  # -- maps -------------------------------------------------------------------

  def _apply(self, params, x):
    # bf16/f16 inputs map in float32 on both paths (jnp.fft has no half
    # precision), so "fft" and "dense" agree: lib.core.dtypes.
    if self.use_dense(x):
      w, _ = self.weight_matrices(params, dtypes.compute_dtype(x.dtype))
      return jnp.einsum("...j,ij->...i", x, w, precision="highest")
    return self._apply_fft(params, x)

  def _apply_inverse(self, params, y):
    if self.use_dense(y):
      _, w_inv = self.weight_matrices(params, dtypes.compute_dtype(y.dtype))
      return jnp.einsum("...j,ij->...i", y, w_inv, precision="highest")
    return self._apply_inverse_fft(params, y)

  def _apply_fft(self, params, x):
    n = self.num_channels
    x = x.astype(dtypes.compute_dtype(x.dtype))
    diag, eig = self.factors(params)
    diag = diag.astype(x.dtype)
    h = x * diag[-1]  # The rightmost factor D_m acts first.
    for j in reversed(range(self.m - 1)):
      h = circulant_matvec(eig[j].astype(_complex(x.dtype)), h, n)
      h = h * diag[j]
    return h

  def _apply_inverse_fft(self, params, y):
    n = self.num_channels
    y = y.astype(dtypes.compute_dtype(y.dtype))
    diag, eig = self.factors(params)
    diag = diag.astype(y.dtype)
    h = y / diag[0]
    for j in range(self.m - 1):
      h = circulant_solve(eig[j].astype(_complex(y.dtype)), h, n)
      h = h / diag[j + 1]
    return h

  def forward_and_log_det(self, params, x):
    base.check_event(
      x, event_size=self.num_channels, event_ndims=self.event_ndims, name="CD"
    )
    base.check_finite(x, "CDLinear input")
    ld = self.log_abs_det_matrix(params).astype(dtypes.compute_dtype(x.dtype))
    return self._apply(params, x), base.broadcast_log_det(
      ld, x.shape, self.event_ndims
    )

  def inverse_and_log_det(self, params, y):
    base.check_event(
      y, event_size=self.num_channels, event_ndims=self.event_ndims, name="CD"
    )
    base.check_finite(y, "CDLinear input")
    ld = -self.log_abs_det_matrix(params).astype(dtypes.compute_dtype(y.dtype))
    return self._apply_inverse(params, y), base.broadcast_log_det(
      ld, y.shape, self.event_ndims
    )


def _complex(dtype):
  return jnp.complex128 if jnp.dtype(dtype) == jnp.float64 else jnp.complex64
