"""Gaussian-cluster data of "The Rich and the Simple" (Vasudeva et al., NeurIPS 2025), Eq. (1).

Label -1 (prob. 1/2) sits at (-r, 0); label +1 splits into two sub-clusters (1/4 each) at
(a, +mu) and (a, -mu), with r = (mu/2)(kappa*omega + 1/omega), a = (mu/2)(kappa*omega -
1/omega), kappa = sx^2 / sy^2 (the realizable geometry: the Bayes boundary passes through the
origin with slopes +-1/omega). Dimensions 3..d are N(0, sz^2) noise.

References:
  Vasudeva, Lee, Sharan, Soltanolkotabi. The Rich and the Simple: On the Implicit Bias of
  Adam and SGD. NeurIPS 2025 (arXiv 2505.24022).
"""

import jax
import jax.numpy as jnp

from lib.core import errors


def cluster_means(mu: float, omega: float, sx: float, sy: float):
  """(r, a): the -1 cluster is at (-r, 0), the +1 clusters at (a, +-mu)."""
  kappa = sx**2 / sy**2
  r = 0.5 * mu * (kappa * omega + 1.0 / omega)
  a = 0.5 * mu * (kappa * omega - 1.0 / omega)
  return r, a


def toy_population(mu: float, omega: float):
  """The three-point population of Theorem 4 (the sigma -> 0 limit of Eq. (1), kappa = 1).

  Label -1 with weight 1/2 at (-(mu/2)(omega + 1/omega), 0); label +1 with weight 1/4
  each at ((mu/2)(omega - 1/omega), +-mu). All three points lie at distance
  mu (omega^2 + 1) / (2 omega) from the origin (Vasudeva et al., NeurIPS 2025, Thm 4 and
  its proof in App. A.2).

  Returns x (3, 2), y (3,) in {-1, +1} and weights (3,) summing to 1, all float32.
  """
  errors.check(
    mu > 0 and omega > 0,
    errors.ConfigError,
    f"mu and omega must be > 0, got mu={mu}, omega={omega}",
  )
  r, a = cluster_means(mu, omega, 1.0, 1.0)
  x = jnp.array([[-r, 0.0], [a, mu], [a, -mu]], jnp.float32)
  y = jnp.array([-1.0, 1.0, 1.0], jnp.float32)
  weights = jnp.array([0.5, 0.25, 0.25], jnp.float32)
  return x, y, weights


def sample_gaussian_clusters(
  key: jax.Array,
  n: int,
  *,
  mu: float,
  omega: float,
  sx: float,
  sy: float,
  d: int = 2,
  sz: float = 0.01,
):
  """Draws n points; returns x (n, d) float32 and y (n,) in {-1, +1} float32."""
  if d < 2:
    raise errors.ConfigError(f"d must be >= 2 (two signal dimensions), got {d}")
  k_label, k_sub, k_noise = jax.random.split(key, 3)
  r, a = cluster_means(mu, omega, sx, sy)
  y = jnp.where(jax.random.bernoulli(k_label, 0.5, (n,)), 1.0, -1.0)
  upper = jax.random.bernoulli(k_sub, 0.5, (n,))
  mean_x1 = jnp.where(y > 0, a, -r)
  mean_x2 = jnp.where(y > 0, jnp.where(upper, mu, -mu), 0.0)
  scale = jnp.array([sx, sy] + [sz] * (d - 2), jnp.float32)
  noise = jax.random.normal(k_noise, (n, d)) * scale
  x = noise.at[:, 0].add(mean_x1).at[:, 1].add(mean_x2)
  return x.astype(jnp.float32), y.astype(jnp.float32)


def bayes_logodds(x, *, mu: float, omega: float, sy: float):
  """Exact Bayes log-odds log p(+1|x)/p(-1|x) (derived in spec A.3).

  log N(x; mu_+-) - log N(x; mu_0) = (mu/sy^2)(omega x1 +- x2) for any kappa, so the
  log-odds is (mu/sy^2) omega x1 + log cosh(mu x2 / sy^2).
  """
  z = mu * x[..., 1] / sy**2
  # log cosh(z) = |z| + log1p(exp(-2|z|)) - log 2, stable for large |z|.
  log_cosh = jnp.abs(z) + jnp.log1p(jnp.exp(-2.0 * jnp.abs(z))) - jnp.log(2.0)
  return (mu / sy**2) * omega * x[..., 0] + log_cosh
