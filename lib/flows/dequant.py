"""Dequantisation, logit pre-processing and bits-per-dim bookkeeping.

Discrete data x in {0, ..., K-1}^D become continuous y = (x + u) / K with
u ~ U[0, 1)^D. A density p(y) on [0, 1)^D gives the discrete model
P(x) >= exp(E_u log p(y)) K^{-D}, so

  bits/dim = -(log p(y) - D log K) / (D ln 2),

and a uniform p(y) = 1 scores exactly log2 K (4.0875 for the 17-level digits).

References:
  Theis et al., "A note on the evaluation of generative models", ICLR 2016;
  Dinh et al., "Real NVP", ICLR 2017 (logit transform); the evaluation used by
  Feng & Liao, "CDFlow", NeurIPS 2025 (arXiv:2510.25323).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from lib.flows import base


def uniform_dequantize(key, x, num_levels: int):
  """y = (x + u) / K, u ~ U[0, 1): integer levels -> [0, 1)."""
  u = jax.random.uniform(
    key, jnp.shape(x), dtype=jnp.result_type(x, jnp.float32)
  )
  return (x + u) / num_levels


def logit_transform(y, alpha: float, event_ndims: int):
  """z = logit(alpha + (1 - 2 alpha) y) and its log|dz/dy| per example.

  Squashes [0, 1) into R so a Gaussian base fits the boundary mass (Real NVP).
  """
  p = alpha + (1.0 - 2.0 * alpha) * y
  z = jnp.log(p) - jnp.log1p(-p)
  ld = math.log(1.0 - 2.0 * alpha) - jnp.log(p) - jnp.log1p(-p)
  return z, base.sum_event(ld, event_ndims)


def inverse_logit_transform(z, alpha: float):
  """Inverse of `logit_transform` (no log-det; used for sampling)."""
  return (jax.nn.sigmoid(z) - alpha) / (1.0 - 2.0 * alpha)


def bits_per_dim(log_prob_y, num_dims: int, num_levels: int):
  """Bits/dim of the discrete data from the log-density of dequantised y."""
  return -(log_prob_y - num_dims * math.log(num_levels)) / (
    num_dims * math.log(2.0)
  )
