"""Small pytree helpers."""

import jax
import jax.numpy as jnp


def l2_norm(tree) -> jax.Array:
  """Global L2 norm of all leaves (float32 accumulation)."""
  leaves = jax.tree.leaves(tree)
  if not leaves:
    return jnp.zeros((), jnp.float32)
  return jnp.sqrt(
    sum(jnp.sum(jnp.square(x.astype(jnp.float32))) for x in leaves)
  )


def num_params(tree) -> int:
  """Number of scalar entries in a pytree (host int)."""
  return int(sum(x.size for x in jax.tree.leaves(tree)))


def all_finite(tree) -> jax.Array:
  """Scalar bool: every entry of every leaf is finite."""
  leaves = jax.tree.leaves(tree)
  return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in leaves]))
