"""Flow models: a vector flow and a multi-scale (Glow-style) image flow.

Both follow the paper's flow step [actnorm -> linear mixing -> affine
coupling], listed in the density direction (data -> latent). `linear` picks
the channel-mixing layer: "cd" (CDFlow), "cd<m>", "dense", "lu",
"permutation" or "identity", so models differ only in that layer at equal
depth.

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 3.3 and Fig. 1;
  Kingma & Dhariwal, "Glow", NeurIPS 2018.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import dtypes
from lib.core.errors import ConfigError
from lib.core.errors import ShapeError
from lib.flows import base
from lib.flows import layers
from lib.flows.linear import make_linear


def flow_steps(
  num_channels: int,
  num_steps: int,
  *,
  linear: str,
  event_ndims: int,
  conditioner: str,
  hidden: int,
  num_hidden_layers: int = 2,
  cd_m: int = 2,
) -> base.Chain:
  """K steps of [actnorm -> linear -> coupling] as one Chain.

  The Chain's list is in the density direction (its `inverse` walks it front
  to back), so data meets actnorm first, as in Glow's encoder.
  """
  bijectors = []
  for _ in range(num_steps):
    bijectors += [
      layers.ActNorm(event_ndims=event_ndims, num_channels=num_channels),
      make_linear(linear, num_channels, event_ndims=event_ndims, cd_m=cd_m),
      layers.AffineCoupling(
        event_ndims=event_ndims,
        num_channels=num_channels,
        conditioner=conditioner,
        hidden=hidden,
        num_hidden_layers=num_hidden_layers,
      ),
    ]
  return base.chain(bijectors)


@dataclasses.dataclass(frozen=True)
class VectorFlow:
  """Flow on R^D: x = f(z), z ~ N(0, I), f = K flow steps (RealNVP-style)."""

  dim: int
  num_steps: int = 8
  linear: str = "cd"
  hidden: int = 128
  num_hidden_layers: int = 2
  cd_m: int = 2

  @property
  def steps(self) -> base.Chain:
    return flow_steps(
      self.dim,
      self.num_steps,
      linear=self.linear,
      event_ndims=1,
      conditioner="mlp",
      hidden=self.hidden,
      num_hidden_layers=self.num_hidden_layers,
      cd_m=self.cd_m,
    )

  def _check(self, x):
    base.check_event(x, event_size=self.dim, event_ndims=1, name="VectorFlow")
    base.check_finite(x, "VectorFlow input")

  def init(self, key, x):
    """Params; `x` is a data batch (actnorm's data-dependent init)."""
    self._check(x)
    return self.steps.init(key, x)

  def encode(self, params, x):
    """Data -> latent z and log|det dz/dx| per example."""
    self._check(x)
    return self.steps.inverse_and_log_det(params, x)

  def log_prob(self, params, x):
    """log p(x) per example, nats: log N(z; 0, I) + log|det dz/dx|."""
    z, ld = self.encode(params, x)
    return layers.standard_normal_log_prob(z, 1) + ld

  def sample(self, params, key, num_samples: int, temperature: float = 1.0):
    """[num_samples, dim] draws x = f(temperature * N(0, I))."""
    z = temperature * jax.random.normal(key, (num_samples, self.dim))
    return self.steps.forward(params, z)


@dataclasses.dataclass(frozen=True)
class ImageFlow:
  """Multi-scale flow on (H, W, C) images (Glow / CDFlow Fig. 1).

  Density direction per level l: squeeze -> K flow steps -> split (all but the
  last level), where the factored-out half is scored by a (learned
  conditional) Gaussian prior. The last level's output gets N(0, I).
  """

  image_shape: tuple[int, int, int]
  num_levels: int = 2
  num_steps: int = 4
  linear: str = "cd"
  hidden: int = 64
  cd_m: int = 2
  learned_prior: bool = True

  def __post_init__(self):
    h, w, c = self.image_shape
    f = 2**self.num_levels
    if self.num_levels < 1:
      raise ConfigError(f"num_levels must be >= 1, got {self.num_levels}")
    if h % f or w % f:
      raise ShapeError(
        f"image {h}x{w} cannot be squeezed {self.num_levels} times: height "
        f"and width must be divisible by {f}"
      )

  def _level_channels(self, level):
    # Squeeze multiplies channels by 4, each earlier split halves them.
    return self.image_shape[2] * 4 ** (level + 1) // 2**level

  def _steps(self, level) -> base.Chain:
    return flow_steps(
      self._level_channels(level),
      self.num_steps,
      linear=self.linear,
      event_ndims=3,
      conditioner="conv",
      hidden=self.hidden,
      cd_m=self.cd_m,
    )

  def _prior(self, level) -> layers.SplitPrior:
    return layers.SplitPrior(
      self._level_channels(level) // 2, learned=self.learned_prior
    )

  def _check(self, x):
    shape = tuple(np.shape(x))
    if len(shape) < 4 or shape[-3:] != tuple(self.image_shape):
      raise ShapeError(
        f"ImageFlow expects (batch, {', '.join(map(str, self.image_shape))})"
        f" input, got shape {shape}"
      )
    base.check_finite(x, "ImageFlow input")

  def init(self, key, x):
    """Params; `x` is a data batch (actnorm's data-dependent init)."""
    self._check(x)
    params = {}
    h = x
    for level in range(self.num_levels):
      k_steps, k_prior = jax.random.split(jax.random.fold_in(key, level))
      h = layers.squeeze(h)
      steps = self._steps(level)
      p_steps = steps.init(k_steps, h)
      h = steps.inverse(p_steps, h)
      p = {"steps": p_steps}
      if level < self.num_levels - 1:
        h, out = layers.split(h)
        p["prior"] = self._prior(level).init(k_prior, h)
      params[f"level_{level}"] = p
    return params

  def encode(self, params, x):
    """Data -> standardised latents (flat) and log|det| per example.

    The map x -> eps is a bijection of R^{HWC}; log_prob(x) =
    log N(eps; 0, I) + log_det, which the tests check against the full
    Jacobian.
    """
    self._check(x)
    batch = x.shape[:-3]
    h, total = x, jnp.zeros(batch, dtypes.compute_dtype(x.dtype))
    eps_parts = []
    for level in range(self.num_levels):
      p = params[f"level_{level}"]
      h = layers.squeeze(h)
      h, ld = self._steps(level).inverse_and_log_det(p["steps"], h)
      total = total + ld
      if level < self.num_levels - 1:
        h, out = layers.split(h)
        eps, ld = self._prior(level).standardize(p["prior"], h, out)
        total = total + ld
        eps_parts.append(eps.reshape(*batch, -1))
    eps_parts.append(h.reshape(*batch, -1))
    return jnp.concatenate(eps_parts, axis=-1), total

  def log_prob(self, params, x):
    """log p(x) per image, nats: log N(eps; 0, I) of every level's
    standardised latents + the log-dets (split priors' included)."""
    eps, ld = self.encode(params, x)
    return layers.standard_normal_log_prob(eps, 1) + ld

  def sample(self, params, key, num_samples: int, temperature: float = 1.0):
    """[num_samples, H, W, C] images from temperature-scaled N(0, I) eps."""
    hh, ww, c = self.image_shape
    last = self.num_levels - 1
    f = 2 ** (last + 1)
    top_c = self._level_channels(last)
    keys = jax.random.split(key, self.num_levels)
    h = temperature * jax.random.normal(
      keys[last], (num_samples, hh // f, ww // f, top_c)
    )
    for level in reversed(range(self.num_levels)):
      p = params[f"level_{level}"]
      if level < last:
        eps = temperature * jax.random.normal(keys[level], h.shape)
        out = self._prior(level).unstandardize(p["prior"], h, eps)
        h = layers.merge(h, out)
      h = self._steps(level).forward(p["steps"], h)
      h = layers.unsqueeze(h)
    return h
