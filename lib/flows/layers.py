"""Glow building blocks: actnorm, affine coupling, squeeze, split priors.

References:
  Kingma & Dhariwal, "Glow: Generative Flow with Invertible 1x1 Convolutions",
  NeurIPS 2018; Dinh et al., "Density estimation using Real NVP", ICLR 2017;
  used as the backbone of Feng & Liao, "CDFlow", NeurIPS 2025
  (arXiv:2510.25323), Sec. 3.3.
"""

from __future__ import annotations

import dataclasses
import math

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core.errors import ConfigError
from lib.core.errors import ShapeError
from lib.flows import base


@dataclasses.dataclass(frozen=True)
class ActNorm(base.Bijector):
  """Per-channel affine y = x * exp(log_scale) + loc (Glow's actnorm).

  Data-dependent init: on the first data batch, loc and scale are its
  per-channel mean and std, so the density direction (inverse) outputs zero
  mean and unit variance per channel. log-det = #pixels * sum(log_scale).
  The batch needs at least 2 values per channel (batch x pixels): one row
  has std 0, and log(0 + eps) scales the density by ~1/eps per dimension.
  """

  num_channels: int = 1
  eps: float = 1e-6

  def init(self, key, y=None):
    del key
    n = self.num_channels
    if y is None:
      return {"loc": jnp.zeros(n), "log_scale": jnp.zeros(n)}
    base.check_event(
      y, event_size=n, event_ndims=self.event_ndims, name="ActNorm"
    )
    flat = jnp.reshape(y, (-1, n))
    if flat.shape[0] < 2:
      raise ShapeError(
        f"ActNorm: the data-dependent init needs at least 2 values per "
        f"channel to estimate a std, got an init batch of shape "
        f"{tuple(np.shape(y))} (batch size {flat.shape[0]}); pass 2 or more "
        "rows of data"
      )
    return {
      "loc": jnp.mean(flat, axis=0),
      "log_scale": jnp.log(jnp.std(flat, axis=0) + self.eps),
    }

  def _check(self, x):
    base.check_event(
      x,
      event_size=self.num_channels,
      event_ndims=self.event_ndims,
      name="ActNorm",
    )

  def forward_and_log_det(self, params, x):
    self._check(x)
    y = x * jnp.exp(params["log_scale"]) + params["loc"]
    ld = jnp.sum(params["log_scale"]).astype(dtypes.compute_dtype(x.dtype))
    return y, base.broadcast_log_det(ld, x.shape, self.event_ndims)

  def inverse_and_log_det(self, params, y):
    self._check(y)
    x = (y - params["loc"]) * jnp.exp(-params["log_scale"])
    ld = -jnp.sum(params["log_scale"]).astype(dtypes.compute_dtype(y.dtype))
    return x, base.broadcast_log_det(ld, y.shape, self.event_ndims)


class MLPConditioner(nn.Module):
  """Coupling network for vectors: MLP with a zero-initialised last layer."""

  hidden: int
  num_hidden_layers: int
  out_features: int

  @nn.compact
  def __call__(self, x):
    for _ in range(self.num_hidden_layers):
      x = nn.relu(nn.Dense(self.hidden)(x))
    # Zero init: the coupling starts as the identity map (Glow).
    return nn.Dense(self.out_features, kernel_init=nn.initializers.zeros)(x)


class ConvConditioner(nn.Module):
  """Glow's coupling net: conv3x3 -> ReLU -> conv1x1 -> ReLU -> zero conv3x3."""

  hidden: int
  out_features: int

  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Conv(self.hidden, (3, 3), padding="SAME")(x))
    x = nn.relu(nn.Conv(self.hidden, (1, 1))(x))
    return nn.Conv(
      self.out_features,
      (3, 3),
      padding="SAME",
      kernel_init=nn.initializers.zeros,
    )(x)


@dataclasses.dataclass(frozen=True)
class AffineCoupling(base.Bijector):
  """Glow affine coupling on the channel axis.

  Density direction (inverse): x_a, x_b = split(y); (shift, raw) = NN(x_a);
  z_b = (x_b + shift) * sigmoid(raw + 2); z_a = x_a. The forward (sampling)
  map undoes it: x_b = z_b / scale - shift. Shift and raw scale come from the
  first and second halves of the NN output; the last NN layer is zero-init.

  Attributes:
    num_channels: n; the first n // 2 channels condition the rest.
    conditioner: "mlp" (vectors, event_ndims=1) or "conv" (images,
      event_ndims=3).
    hidden: conditioner width.
    num_hidden_layers: MLP depth (ignored for "conv").
  """

  num_channels: int = 2
  conditioner: str = "mlp"
  hidden: int = 64
  num_hidden_layers: int = 2

  def __post_init__(self):
    if self.num_channels < 2:
      raise ConfigError(
        f"AffineCoupling needs >= 2 channels, got {self.num_channels}"
      )
    if self.conditioner not in ("mlp", "conv"):
      raise ConfigError(
        f"conditioner must be 'mlp' or 'conv', got {self.conditioner!r}"
      )

  @property
  def _split(self):
    return self.num_channels // 2

  def _net(self):
    out = 2 * (self.num_channels - self._split)
    if self.conditioner == "mlp":
      return MLPConditioner(self.hidden, self.num_hidden_layers, out)
    return ConvConditioner(self.hidden, out)

  def init(self, key, y):
    self._check(y)
    return self._net().init(key, y[..., : self._split])

  def _check(self, x):
    base.check_event(
      x,
      event_size=self.num_channels,
      event_ndims=self.event_ndims,
      name="AffineCoupling",
    )

  def _shift_log_scale(self, params, x_a):
    h = self._net().apply(params, x_a)
    nb = self.num_channels - self._split
    shift, raw = h[..., :nb], h[..., nb:]
    return shift, jax.nn.log_sigmoid(raw + 2.0)

  def forward_and_log_det(self, params, x):
    self._check(x)
    x_a, z_b = x[..., : self._split], x[..., self._split :]
    shift, log_scale = self._shift_log_scale(params, x_a)
    y_b = z_b * jnp.exp(-log_scale) - shift
    ld = -base.sum_event(log_scale, self.event_ndims)
    return jnp.concatenate([x_a, y_b], axis=-1), ld

  def inverse_and_log_det(self, params, y):
    self._check(y)
    y_a, y_b = y[..., : self._split], y[..., self._split :]
    shift, log_scale = self._shift_log_scale(params, y_a)
    z_b = (y_b + shift) * jnp.exp(log_scale)
    ld = base.sum_event(log_scale, self.event_ndims)
    return jnp.concatenate([y_a, z_b], axis=-1), ld


def squeeze(x):
  """Space-to-depth 2x2: (..., H, W, C) -> (..., H/2, W/2, 4C)."""
  shape = tuple(np.shape(x))
  if len(shape) < 3:
    raise ShapeError(f"squeeze needs (..., H, W, C) input, got shape {shape}")
  h, w, c = shape[-3:]
  if h % 2 or w % 2:
    raise ShapeError(
      f"cannot squeeze an image of height {h} and width {w}: both must be even"
    )
  lead = shape[:-3]
  x = jnp.reshape(x, (*lead, h // 2, 2, w // 2, 2, c))
  nd = len(lead)
  x = jnp.transpose(x, (*range(nd), nd, nd + 2, nd + 1, nd + 3, nd + 4))
  return jnp.reshape(x, (*lead, h // 2, w // 2, 4 * c))


def unsqueeze(x):
  """Depth-to-space 2x2, the inverse of `squeeze`."""
  shape = tuple(np.shape(x))
  if len(shape) < 3 or shape[-1] % 4:
    raise ShapeError(
      f"unsqueeze needs (..., H, W, 4k) input, got shape {shape}"
    )
  h, w, c4 = shape[-3:]
  c = c4 // 4
  lead = shape[:-3]
  nd = len(lead)
  x = jnp.reshape(x, (*lead, h, w, 2, 2, c))
  x = jnp.transpose(x, (*range(nd), nd, nd + 2, nd + 1, nd + 3, nd + 4))
  return jnp.reshape(x, (*lead, 2 * h, 2 * w, c))


def split(x):
  """Splits the channel axis in half: (kept, factored_out)."""
  c = x.shape[-1]
  if c < 2:
    raise ShapeError(f"cannot split a channel axis of size {c}")
  return x[..., : c // 2], x[..., c // 2 :]


def merge(kept, out):
  """Inverse of `split`."""
  return jnp.concatenate([kept, out], axis=-1)


LOG_2PI = math.log(2 * math.pi)


def standard_normal_log_prob(z, event_ndims: int):
  """log N(z; 0, I) summed over the trailing event axes."""
  return base.sum_event(-0.5 * (z * z + LOG_2PI), event_ndims)


class _PriorNet(nn.Module):
  """Zero-init conv giving (mean, log_std) of the factored-out half."""

  out_features: int

  @nn.compact
  def __call__(self, kept):
    h = nn.Conv(
      2 * self.out_features,
      (3, 3),
      padding="SAME",
      kernel_init=nn.initializers.zeros,
    )(kept)
    return h[..., : self.out_features], h[..., self.out_features :]


@dataclasses.dataclass(frozen=True)
class SplitPrior:
  """Prior of the latents factored out at a split.

  With `learned=True` (Glow) it is N(mean(kept), exp(log_std(kept))^2) from a
  zero-init conv, i.e. N(0, I) at init; otherwise plain N(0, I). `standardize`
  maps the factored-out half to eps ~ N(0, I) with its log-det, which makes
  the whole multi-scale flow one bijection x -> eps (used by the tests).
  """

  num_out: int
  learned: bool = True

  def init(self, key, kept):
    if not self.learned:
      return {}
    return _PriorNet(self.num_out).init(key, kept)

  def _mean_log_std(self, params, kept):
    if not self.learned:
      zeros = jnp.zeros((*kept.shape[:-1], self.num_out), kept.dtype)
      return zeros, zeros
    return _PriorNet(self.num_out).apply(params, kept)

  def standardize(self, params, kept, out):
    """(eps, log-det): eps = (out - mean) / std of the factored-out half."""
    mean, log_std = self._mean_log_std(params, kept)
    eps = (out - mean) * jnp.exp(-log_std)
    return eps, -base.sum_event(log_std, 3)

  def unstandardize(self, params, kept, eps):
    """Inverse of `standardize`: out = mean + std * eps."""
    mean, log_std = self._mean_log_std(params, kept)
    return mean + eps * jnp.exp(log_std)
