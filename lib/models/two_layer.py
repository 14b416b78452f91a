"""The two-layer homogeneous ReLU network of "The Rich and the Simple", and its read-outs.

f(W; x) = a^T ReLU(W x), W (m, d) trained from a small init N(0, (alpha/sqrt(d))^2), the
outer weights a = +-1/sqrt(m) balanced and fixed (so they are not parameters).

References:
  Vasudeva et al. The Rich and the Simple: On the Implicit Bias of Adam and SGD.
  NeurIPS 2025, Sec. 2, Thm 4 (the toy population's limit directions) and App. B.1.
"""

import math

import jax
import jax.numpy as jnp

from lib.core import errors


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


def correlation_loss(
  logits: jax.Array, y: jax.Array, weights: jax.Array | None = None
) -> jax.Array:
  """-sum_i weights_i y_i f(x_i), the correlation loss of Thm 4 (uniform weights: the mean).

  Its gradient in a neuron w_k is -a_k sum_i weights_i y_i 1[w_k . x_i > 0] x_i: it
  depends on w_k only through which points activate it.
  """
  if weights is None:
    return -jnp.mean(y * logits)
  return -jnp.sum(weights * y * logits)


def direction_masses(W: jax.Array, directions: jax.Array) -> jax.Array:
  """Fraction of the m neurons (rows of W) whose unit direction is nearest each candidate.

  Nearest is the largest cosine with the (normalised) rows of `directions` (k, d); a
  neuron with w = 0 has no direction and counts toward none, so the k fractions sum to
  1 minus the fraction of zero rows. Returns (k,).
  """
  errors.check(
    W.ndim == 2 and directions.ndim == 2 and W.shape[1] == directions.shape[1],
    errors.ShapeError,
    f"W (m, d) and directions (k, d) must share d, got {W.shape} and "
    f"{directions.shape}",
  )
  units = directions / jnp.linalg.norm(directions, axis=-1, keepdims=True)
  nearest = jnp.argmax(W @ units.T, axis=-1)  # the norm of w does not change it
  alive = jnp.any(W != 0, axis=-1)
  hits = jax.nn.one_hot(nearest, units.shape[0]) * alive[:, None]
  return jnp.mean(hits, axis=0)


THEOREM4_OPTIMIZERS = ("gd", "sign_gd")


def theorem4_masses(
  omega: float, optimizer: str
) -> tuple[jax.Array, jax.Array]:
  """Limit neuron directions on the toy population and the fraction of ALL neurons at each.

  Thm 4 (correlation loss, m -> inf, small init, a_k = +-1/sqrt(m) balanced), with
  p = arctan((omega^2 - 1) / (2 omega)) / pi:
    gd:      [1, 0] 1/4 + p/2, [-1, 0] 1/2, [omega^2 - 1, +-2 omega] / (omega^2 + 1)
             (the +1 points' directions) 1/8 - p/4 each;
    sign_gd: [1, 0] p, [-1, 0] 1/2, [1, +-1] / sqrt(2) 1/4 - p/2 each.
  The a_k < 0 half all goes to [-1, 0]; the a_k > 0 half shares the rest. "Small"
  init means small against the first step, lr |grad|, which then sets each neuron's
  activation pattern: from an init of the order of lr |grad| or larger, GD follows
  gradient flow from there and ends elsewhere (tests/lib/models/two_layer_test.py).
  omega > 1 puts the +1 points in the right half-plane (p > 0).

  Returns (directions (4, 2) of unit norm, masses (4,)), in the order [1, 0], [-1, 0],
  then the upper and lower tilted (gd) or diagonal (sign_gd) direction.
  """
  errors.check_one_of(optimizer, THEOREM4_OPTIMIZERS, "optimizer")
  errors.check(omega > 1, errors.ConfigError, f"omega must be > 1, got {omega}")
  p = math.atan((omega**2 - 1) / (2 * omega)) / math.pi
  if optimizer == "gd":
    c, s = (omega**2 - 1) / (omega**2 + 1), 2 * omega / (omega**2 + 1)
    side, on_axis = 1 / 8 - p / 4, 1 / 4 + p / 2
  else:
    c = s = 1 / math.sqrt(2)
    side, on_axis = 1 / 4 - p / 2, p
  directions = jnp.array(
    [[1.0, 0.0], [-1.0, 0.0], [c, s], [c, -s]], jnp.float32
  )
  masses = jnp.array([on_axis, 0.5, side, side], jnp.float32)
  return directions, masses


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
