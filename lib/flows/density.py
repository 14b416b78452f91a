"""Density estimation with flows: the dequantised objective and its evaluation.

Digits (spec A, E2/E3). Integer levels x in {0, ..., K-1}^D are dequantised,
y = (x + u) / K with u ~ U[0, 1)^D, then (Real NVP) squashed into R^D by the
logit transform t(y) = logit(alpha + (1 - 2 alpha) y). A flow density q on
t's range gives y the density q(t(y)) |det dt/dy|, and the objective (train
loss and test metric) is its bits/dim of the discrete data,

  bpd(y) = -(log q(t(y)) + log|det dt/dy| - D log K) / (D ln 2),

averaged over a batch; at test time over a few fixed dequantisation draws.

Periodic proxy (E4, for the paper's Galaxy result). Data x ~ N(0, C) with a
circulant C (a stationary Gaussian process on a ring of n points) have the
entropy H = 1/2 sum_k log(2 pi e lambda_k) (lambda = FFT of C's first
column), the least expected NLL any model can reach. A flow of
[actnorm -> linear] steps is affine, x = A z + b, so its expected NLL is
closed-form: E_x[-log q(x)] = 1/2 (tr(S^-1 C) + b' S^-1 b + log det(2 pi S))
with S = A A' (= H + KL(N(0, C) || N(b, S))).

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 4 and App. A;
  Dinh et al., "Density estimation using Real NVP", ICLR 2017 (logit
  pre-transform); Theis et al., "A note on the evaluation of generative
  models", ICLR 2016 (dequantisation).
"""

from __future__ import annotations

import dataclasses
import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core import errors
from lib.core import rng
from lib.flows import base
from lib.flows import dequant
from lib.flows import layers
from lib.flows.linear import make_linear

# Trainable parameters of the channel-mixing layers (lib.flows.linear,
# lib.flows.cd_linear); frozen signs and permutations are not counted.
MIXING_PARAM_NAMES = frozenset(
  {
    "log_abs_diag",
    "log_abs_eig",
    "phase",
    "weight",
    "lower",
    "upper",
    "log_s",
    "diag",
    "eig_re",
    "eig_im",
  }
)
_FROZEN_PARAM_NAMES = frozenset({"diag_sign", "perm", "sign"})


def load_level_images(path: str, num_levels: int, *, name: str) -> np.ndarray:
  """A .npy of (N, H, W[, C]) integer levels in [0, K-1] -> float32 (N, H, W, C).

  Floats are accepted only when every value is a whole number (levels saved
  as float32); fractions (images scaled to [0, 1]) are refused, never
  dequantised as if they were levels.

  Raises ConfigError (missing or unreadable file, levels out of range or not
  integers), DTypeError, ShapeError (no images) or NonFiniteError, each
  naming the file (`name`: its config key).
  """
  source = f"{name} {path!r}"
  if not os.path.exists(path):
    raise errors.ConfigError(f"{source} not found")
  try:
    with open(path, "rb") as fh:  # np.load leaks its own on a damaged zip
      images = np.load(fh, allow_pickle=False)
      if isinstance(images, np.lib.npyio.NpzFile):
        images.close()
        raise errors.ConfigError(
          f"{source} is an .npz archive; save one (N, H, W[, C]) array with "
          "np.save"
        )
  except errors.ConfigError:
    raise
  except errors.NPY_READ_ERRORS as e:
    first = errors.npy_read_reason(e)
    raise errors.ConfigError(
      f"{source} is not a readable .npy array ({first})"
    ) from None
  if images.dtype.kind not in "biuf":
    raise errors.DTypeError(
      f"{source} holds {images.dtype} values, not integer levels"
    )
  if images.ndim == 3:
    images = images[..., None]
  if images.ndim != 4:
    raise errors.ShapeError(
      f"{source} must hold (N, H, W) or (N, H, W, C), got {images.shape}"
    )
  if not images.size:
    raise errors.ShapeError(f"{source} holds no images, shape {images.shape}")
  if images.dtype.kind == "f":
    if not np.all(np.isfinite(images)):
      raise errors.NonFiniteError(f"{source} has non-finite entries")
    whole = images == np.round(images)
    if not whole.all():
      i = np.unravel_index(np.argmin(whole), images.shape)
      raise errors.ConfigError(
        f"{source} holds a non-integer level ({images[i]}) at index "
        f"{tuple(int(j) for j in i)}; levels are integers in "
        f"[0, {num_levels - 1}] (images scaled to [0, 1]? save "
        "round(x * (num_levels - 1)))"
      )
  images = images.astype(np.float32)
  if images.min() < 0 or images.max() > num_levels - 1:
    raise errors.ConfigError(
      f"{source} values must lie in [0, {num_levels - 1}] "
      f"(num_levels={num_levels}); got [{images.min()}, {images.max()}]"
    )
  return images


@dataclasses.dataclass(frozen=True)
class Dequantized:
  """The dequantised-data objective of one dataset (the module docstring).

  Attributes:
    num_levels: K, the integer levels of the raw data.
    alpha: the logit transform's margin; 0 turns the transform off.
    event_ndims: the number of event axes (1: vectors, 3: images).

  `model` arguments are flows with `init(key, x)`, `log_prob(params, x)` and
  `sample(params, key, num, temperature)` (`VectorFlow`, `ImageFlow`).
  """

  num_levels: int
  alpha: float
  event_ndims: int

  def preprocess(self, y):
    """Dequantised y in [0, 1) -> flow input t(y) and log|det dt/dy|."""
    if self.alpha <= 0:
      return y, jnp.zeros(
        y.shape[: y.ndim - self.event_ndims], dtypes.compute_dtype(y.dtype)
      )
    return dequant.logit_transform(y, self.alpha, self.event_ndims)

  def postprocess(self, x):
    """Flow output -> integer levels in [0, K-1]: t^-1, then floor(K y)."""
    a, k = self.alpha, self.num_levels
    y = dequant.inverse_logit_transform(x, a) if a > 0 else x
    return jnp.clip(jnp.floor(y * k), 0, k - 1)

  def batch(self, key, levels, batch_size: int):
    """`batch_size` rows of `levels` drawn with replacement, dequantised."""
    k_idx, k_deq = jax.random.split(key)
    idx = jax.random.randint(k_idx, (batch_size,), 0, levels.shape[0])
    return dequant.uniform_dequantize(k_deq, levels[idx], self.num_levels)

  def init(self, model, key, levels):
    """The model's data-dependent init (actnorm) on dequantised `levels`."""
    k_init, k_deq = jax.random.split(key)
    y = dequant.uniform_dequantize(k_deq, jnp.asarray(levels), self.num_levels)
    return model.init(k_init, self.preprocess(y)[0])

  def bpd(self, model, params, y):
    """Per-example bits/dim of dequantised y (the objective)."""
    num_dims = math.prod(y.shape[y.ndim - self.event_ndims :])
    x, ld = self.preprocess(y)
    return dequant.bits_per_dim(
      model.log_prob(params, x) + ld, num_dims, self.num_levels
    )

  def loss(self, model, params, y):
    """The training loss: mean bits/dim of a dequantised batch."""
    return jnp.mean(self.bpd(model, params, y))

  def heldout_bpd(self, model, params, levels, key, draws: int):
    """Mean bits/dim of integer `levels` over `draws` dequantisations.

    Draw i uses `rng.stream(key, "dequantize", i)`: a fixed key gives every
    evaluation (and every model) the same noise.
    """
    per_draw = [
      self.loss(
        model,
        params,
        dequant.uniform_dequantize(
          rng.stream(key, "dequantize", i), levels, self.num_levels
        ),
      )
      for i in range(draws)
    ]
    return jnp.mean(jnp.stack(per_draw))

  def sample(self, model, params, key, num: int, temperature: float = 0.8):
    """`num` samples as integer levels, at a reduced temperature (Glow)."""
    return self.postprocess(model.sample(params, key, num, temperature))


def mixing_param_count(params) -> int:
  """Trainable parameters of the channel-mixing layers in a flow's params.

  Counts the leaves named in MIXING_PARAM_NAMES (weights, LU factors, CD
  diagonals and spectra); frozen signs and permutations are excluded.
  """
  count = 0
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    keys = {getattr(k, "key", None) for k in path}
    if keys & MIXING_PARAM_NAMES and not keys & _FROZEN_PARAM_NAMES:
      count += math.prod(leaf.shape)
  return count


# ------------------------------------------------------- periodic proxy ---


def ring_covariance(n: int, lengthscale: float, noise: float) -> np.ndarray:
  """Circulant covariance of a periodic RBF kernel on n points of a ring.

  C_ij = exp(-2 sin^2(pi (i - j) / n) / lengthscale^2) + noise [i = j];
  noise > 0 keeps it positive definite.
  """
  dist = np.arange(n) / n
  col = np.exp(-2 * np.sin(np.pi * dist) ** 2 / lengthscale**2)
  col[0] += noise
  idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
  return col[idx]


def circulant_gaussian_entropy_per_dim(cov) -> float:
  """Entropy of N(0, C) per dim for circulant C: 1/2 mean_k log(2 pi e lam_k)."""
  lam = np.real(np.fft.fft(np.asarray(cov)[:, 0]))  # circulant eigenvalues
  return float(0.5 * np.mean(np.log(2 * np.pi * np.e * lam)))


def affine_flow(linear: str, n: int, num_steps: int) -> base.Chain:
  """K steps of [actnorm -> linear] on R^n: an affine map x = A z + b (E4)."""
  bijectors = []
  for _ in range(num_steps):
    bijectors += [layers.ActNorm(num_channels=n), make_linear(linear, n)]
  return base.chain(bijectors)


def expected_nll_per_dim(bij, params, cov) -> jax.Array:
  """E_{x ~ N(0, C)}[-log q(x)] / n for an affine flow x = A z + b, exactly."""
  n = cov.shape[0]
  b = bij.forward(params, jnp.zeros((1, n)))[0]
  a = jax.jacfwd(lambda z: bij.forward(params, z[None])[0])(jnp.zeros(n))
  s = a @ a.T
  _, logdet = jnp.linalg.slogdet(2 * jnp.pi * s)
  quad = jnp.trace(jnp.linalg.solve(s, cov)) + b @ jnp.linalg.solve(s, b)
  return 0.5 * (quad + logdet) / n


def nll_per_dim(bij, params, x) -> jax.Array:
  """Mean -log q(x) / n over a batch x [B, n] (q: the flow, N(0, I) base)."""
  z, ld = bij.inverse_and_log_det(params, x)
  return -jnp.mean(layers.standard_normal_log_prob(z, 1) + ld) / x.shape[-1]
