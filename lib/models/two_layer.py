"""The two-layer homogeneous ReLU network of "The Rich and the Simple", and its read-outs.

f(W; x) = a^T ReLU(W x), W (m, d) trained from a small init N(0, (alpha/sqrt(d))^2), the
outer weights a = +-1/sqrt(m) balanced and fixed (so they are not parameters).

References:
  Vasudeva et al. The Rich and the Simple: On the Implicit Bias of Adam and SGD.
  NeurIPS 2025, Sec. 2 and App. B.1.
"""

import jax
import jax.numpy as jnp


def init_two_layer(key: jax.Array, *, d: int, m: int, alpha: float) -> dict:
  """Params {'W': (m, d)} with W ~ N(0, (alpha / sqrt(d))^2)."""
  return {
    "W": alpha / jnp.sqrt(d) * jax.random.normal(key, (m, d), jnp.float32)
  }


def outer_weights(m: int) -> jax.Array:
  """Balanced fixed outer layer: +1/sqrt(m), -1/sqrt(m), alternating."""
  signs = jnp.where(jnp.arange(m) % 2 == 0, 1.0, -1.0)
  return signs / jnp.sqrt(m)


def two_layer_relu(W: jax.Array, a: jax.Array, x: jax.Array) -> jax.Array:
  """f(W; x) = relu(x W^T) a for x (..., d); returns (...)."""
  return jax.nn.relu(x @ W.T) @ a


def logistic_loss(logits: jax.Array, y: jax.Array) -> jax.Array:
  """Mean softplus(-y f) for labels y in {-1, +1}."""
  return jnp.mean(jax.nn.softplus(-y * logits))


def boundary_crossing(
  f, x2: float, *, lo: float = -1.0, hi: float = 1.0, num: int = 4001
) -> jax.Array:
  """x1 where f(x1, x2) changes sign, nearest to x1 = 0 (linear interpolation on a grid).

  `f` maps (n, 2) points to (n,) scores. Returns NaN when f has no sign change in
  [lo, hi].
  """
  x1 = jnp.linspace(lo, hi, num)
  values = f(jnp.stack([x1, jnp.full_like(x1, x2)], axis=-1))
  change = jnp.sign(values[:-1]) != jnp.sign(values[1:])
  t = values[:-1] / (values[:-1] - values[1:] + 1e-30)
  roots = x1[:-1] + t * (x1[1:] - x1[:-1])
  distance = jnp.where(change, jnp.abs(roots), jnp.inf)
  i = jnp.argmin(distance)
  return jnp.where(jnp.isfinite(distance[i]), roots[i], jnp.nan)


def neuron_mass(W: jax.Array, *, threshold: float = 0.3) -> jax.Array:
  """Norm-weighted fraction of neurons with |w_2| / ||w|| > threshold.

  GD's neurons align with +-e1 (mass ~0); signGD/Adam grow neurons along (1, +-1)
  (the "rich" features), so their mass is large.
  """
  norms = jnp.linalg.norm(W, axis=-1)
  tilted = jnp.abs(W[:, 1]) > threshold * norms
  return jnp.sum(jnp.where(tilted, norms, 0.0)) / jnp.maximum(
    jnp.sum(norms), 1e-30
  )
