"""State-entropy estimators: plug-in (discrete) and IS-weighted k-NN (continuous).

- `histogram_entropy`: -sum p log p of a histogram (counts or probabilities).
- `sample_entropy`: the plug-in entropy of the empirical distribution of T
  discrete samples, -(1/T) sum_t log(c_t / T) with c_t the count of x_t,
  computed by pairwise equality (no histogram over a huge joint space).
- `trajectory_entropies`: TRPE's finite-trial objectives of one trajectory
  of n agents' cells [T, n]: joint (tuples of cells), each agent's, and the
  mixture (all agents' cells pooled: the uniform mixture of the marginals).
- `knn_entropy`: MEPOL's IS-weighted k-NN estimator
  H = -sum_i (W_i / k) ln(W_i / V_i) + ln k - psi(k), W_i the summed
  normalised weights of i and its k - 1 nearest neighbours, V_i the volume
  of the ball out to the k-th neighbour (RiccZamboni/mepol, master,
  src/algorithms/mepol.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma
from jax.scipy.special import gammaln

from lib.core import dtypes
from lib.core import errors


def histogram_entropy(h) -> jax.Array:
  """Entropy (nats) of a histogram along its last axis."""
  p = h / jnp.sum(h, axis=-1, keepdims=True)
  return -jnp.sum(
    jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), -1
  )


def sample_entropy(x) -> jax.Array:
  """Plug-in entropy of the empirical distribution of samples x [T] (or [T, m])."""
  x = x.reshape(x.shape[0], -1)
  same = jnp.all(x[:, None, :] == x[None, :, :], axis=-1)
  t = x.shape[0]
  return -jnp.mean(jnp.log(jnp.sum(same, axis=1) / t))


def trajectory_entropies(cells) -> dict:
  """Finite-trial entropies of one trajectory cells [T, n] of n agents."""
  n = cells.shape[1]
  return {
    "joint": sample_entropy(cells),
    "agents": jnp.stack([sample_entropy(cells[:, i]) for i in range(n)]),
    "mixture": sample_entropy(cells.T.reshape(-1)),
  }


def knn_entropy(x, weights=None, k: int = 4) -> jax.Array:
  """IS-weighted k-NN entropy estimate (nats) of samples x [N, d].

  weights: [N] normalised importance weights (None: uniform 1/N). Integer
  or half-precision samples are taken in `dtypes.compute_dtype` (float32).

  Raises:
    ConfigError: k not in [1, N) (the k-th neighbour of a point needs k
      other points).
  """
  x = jnp.asarray(x)
  x = x.astype(dtypes.compute_dtype(x.dtype))
  n, d = x.shape
  errors.check(
    isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k < n,
    errors.ConfigError,
    f"knn_entropy: k={k!r} must be an integer in [1, n) for n={n} samples "
    "(the k-th nearest neighbour needs k other points)",
  )
  w = jnp.full((n,), 1.0 / n, x.dtype) if weights is None else weights
  sq = jnp.sum((x[:, None] - x[None]) ** 2, axis=-1)
  # sqrt'(0) is inf: the zero self-distances (and duplicates) would give a
  # NaN gradient with respect to x; the same distances, a finite gradient.
  dist = jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)
  # (k + 1)-NN including the point itself: columns 0 .. k.
  neg, idx = jax.lax.top_k(-dist, k + 1)
  radius = -neg[:, k]
  w_sum = jnp.sum(w[idx[:, :k]], axis=1)
  log_vol = d * jnp.log(radius) + (d / 2) * jnp.log(jnp.pi) - gammaln(d / 2 + 1)
  return (
    -jnp.sum((w_sum / k) * (jnp.log(w_sum) - log_vol))
    + jnp.log(k)
    - digamma(float(k))
  )
