"""Small pytree helpers."""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import linalg
from lib.core import rng


def _numeric_leaves(tree) -> list:
  """The leaves that hold numbers: typed PRNG keys are left out."""
  return [x for x in jax.tree.leaves(tree) if not rng.is_typed_key(x)]


def l2_norm(tree) -> jax.Array:
  """Global L2 norm of all leaves (float32 accumulation).

  Differentiable everywhere: at an all-zero tree the gradient is 0 (the
  subgradient), not the NaN of d sqrt(s)/ds at s = 0. Typed PRNG key leaves
  (a state's rng) are not numbers and are left out.
  """
  leaves = _numeric_leaves(tree)
  if not leaves:
    return jnp.zeros((), jnp.float32)
  squares = sum(
    jnp.sum(jnp.square(jnp.asarray(x).astype(jnp.float32))) for x in leaves
  )
  return linalg.safe_sqrt(squares)


def num_params(tree) -> int:
  """Number of scalar entries in a pytree (host int); a typed key is one."""
  return int(sum(np.size(x) for x in jax.tree.leaves(tree)))


def all_finite(tree) -> jax.Array:
  """Scalar bool: every entry of every leaf is finite (True for no leaves).

  Typed PRNG key leaves are left out, as in `l2_norm`.
  """
  leaves = _numeric_leaves(tree)
  if not leaves:
    return jnp.ones((), bool)
  return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))
