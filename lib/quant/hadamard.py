"""Block Hadamard rotations: the fast Walsh-Hadamard transform and matmul form.

Quartet rotates every operand by a block-diagonal 32x32 Hadamard along the
GEMM's contraction axis; (x H)(w H)^T = x w^T because H is orthogonal, so the
rotation spreads outliers across a group without changing the product. The
backward uses H diag(s) with random signs s, redrawn every call, as the
official AlbertTsengQuantizer does (x @ (H diag(s)), rerotate "signs"). The
signs act after H, on single rotated elements, and the absmax quantizer is
sign-symmetric (amax ignores signs; RNE and SR act on magnitudes), so
Q(x H diag(s)) = Q(x H) diag(s) and the diag(s) of both GEMM operands cancel:
with the same SR uniforms the backward GEMMs equal those with plain H32
exactly (checked on `reference.quantize_absmax` + `mx_matmul`: max |diff| 0).
The redraw does not randomise the rotation; signs applied before H
(x diag(s) H) would.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669), section 4.
"""

import jax
import jax.numpy as jnp

from lib.core import errors
from pallas_kernels.mxfp4 import reference

GROUP = reference.GROUP
hadamard_matrix = reference.hadamard_matrix


def fwht(x: jax.Array, n: int = GROUP) -> jax.Array:
  """Orthonormal Walsh-Hadamard transform of each n-group of the last axis.

  log2(n) radix-2 butterfly stages; equals x @ hadamard_matrix(n) per group
  (Sylvester order), at O(n log n) instead of O(n^2).
  """
  if n & (n - 1) or x.shape[-1] % n:
    raise errors.ShapeError(
      f"group size {n} must be a power of two dividing {x.shape}"
    )
  shape = x.shape
  y = x.astype(jnp.float32).reshape(-1, n)
  h = 1
  while h < n:
    y = y.reshape(-1, n // (2 * h), 2, h)
    a, b = y[:, :, 0, :], y[:, :, 1, :]
    y = jnp.stack([a + b, a - b], axis=2)
    h *= 2
  return (y.reshape(shape) * (n**-0.5)).astype(jnp.float32)


def _check_rotation(x, signs, method) -> None:
  if method not in ("fwht", "matmul"):
    raise errors.ConfigError(
      f"unknown Hadamard method {method!r}: 'fwht' or 'matmul'"
    )
  if x.ndim < 1 or x.shape[-1] % GROUP:
    raise errors.ShapeError(
      f"the rotation acts on {GROUP}-groups of the last axis: got x of shape "
      f"{x.shape}, whose last axis is not a multiple of {GROUP}"
    )
  if signs is not None and jnp.shape(signs) != (GROUP,):
    raise errors.ShapeError(
      f"signs must have shape ({GROUP},), got {jnp.shape(signs)}"
    )


def rotate(
  x: jax.Array, signs: jax.Array | None = None, *, method: str = "fwht"
) -> jax.Array:
  """x H diag(signs) per 32-group of the last axis ("fwht" or "matmul")."""
  _check_rotation(x, signs, method)
  if method == "matmul":
    return reference.rotate(x, signs)
  y = fwht(x)
  if signs is None:
    return y
  g = y.reshape(*y.shape[:-1], -1, GROUP) * signs.astype(jnp.float32)
  return g.reshape(y.shape)


def unrotate(
  x: jax.Array, signs: jax.Array | None = None, *, method: str = "fwht"
) -> jax.Array:
  """Inverse of `rotate`: x diag(signs) H (H is symmetric and orthogonal)."""
  _check_rotation(x, signs, method)
  if method == "matmul":
    return reference.unrotate(x, signs)
  if signs is not None:
    g = x.astype(jnp.float32).reshape(*x.shape[:-1], -1, GROUP)
    x = (g * signs.astype(jnp.float32)).reshape(x.shape)
  return fwht(x)


def random_signs(key: jax.Array, n: int = GROUP) -> jax.Array:
  """n independent +-1 (fp32), the column signs of a randomised Hadamard."""
  return 2.0 * jax.random.bernoulli(key, 0.5, (n,)).astype(jnp.float32) - 1.0
