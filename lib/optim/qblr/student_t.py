"""The univariate Student-t t_nu(mu, sigma^2): the marginal family of QBLR.

xi = (mu, sigma^2, nu) on the last axis, broadcasting over leading axes (a
mean-field family over d weights is a (d, 3) array). The log-density, entropy
and Fisher metric are closed forms; sampling is reparameterised through the
Normal-Gamma scale mixture, so draws are differentiable in all of xi
(Lukashchuk et al., "The Quotient Bayesian Learning Rule", NeurIPS 2025).
"""

import jax
import jax.numpy as jnp
from jax.scipy import special

Array = jax.Array

# Degrees of freedom beyond which draws use t_NU_MAX. There the Student-t is
# Gaussian to within an excess kurtosis of 6 / (nu - 4) ~ 6e-6, while jax's
# implicit gamma gradient loses accuracy above shape ~1e8 and, near 1e16 (a
# diverging variational run reaches it), never returns.
NU_MAX = 1e6


def student_t_logpdf(x: Array, xi: Array) -> Array:
  """log t_nu(x | mu, sigma^2); xi = (mu, sigma^2, nu) broadcasts against x."""
  mu, s2, nu = jnp.moveaxis(jnp.asarray(xi), -1, 0)
  r2 = (x - mu) ** 2 / (nu * s2)
  return (
    special.gammaln((nu + 1) / 2)
    - special.gammaln(nu / 2)
    - 0.5 * jnp.log(nu * jnp.pi * s2)
    - (nu + 1) / 2 * jnp.log1p(r2)
  )


def student_t_entropy(xi: Array) -> Array:
  """Differential entropy of t_nu(mu, sigma^2), elementwise."""
  _, s2, nu = jnp.moveaxis(jnp.asarray(xi), -1, 0)
  log_b = (
    special.gammaln(nu / 2)
    + 0.5 * jnp.log(jnp.pi)
    - special.gammaln((nu + 1) / 2)
  )
  return (
    0.5 * jnp.log(s2)
    + (nu + 1) / 2 * (special.digamma((nu + 1) / 2) - special.digamma(nu / 2))
    + 0.5 * jnp.log(nu)
    + log_b
  )


def sample_student_t(key: Array, xi: Array, num_samples: int) -> Array:
  """Reparameterised draws, shape (num_samples, *xi.shape[:-1]).

  t = eps * sqrt(nu / (2 g)) with eps ~ N(0, 1) and g ~ Gamma(nu / 2): the
  gamma draw is differentiable in nu by implicit reparameterisation. Draws
  for nu > NU_MAX are those of t_NU_MAX (and carry no gradient in nu).
  """
  mu, s2, nu = jnp.moveaxis(xi, -1, 0)
  nu = jnp.minimum(nu, NU_MAX)
  shape = (num_samples, *mu.shape)
  k_n, k_g = jax.random.split(key)
  eps = jax.random.normal(k_n, shape, xi.dtype)
  g = jax.random.gamma(k_g, jnp.broadcast_to(nu / 2, shape), dtype=xi.dtype)
  return mu + jnp.sqrt(s2) * eps * jnp.sqrt(nu / (2.0 * g))


def student_t_fisher(xi: Array) -> Array:
  """Closed-form Fisher metric of t_nu(mu, sigma^2) in (mu, sigma^2, nu).

  Used to document that it differs from the quotient metric
  (`normal_gamma.quotient_metric`), against the paper's Theorem 2(ii).
  """
  _, s2, nu = jnp.moveaxis(jnp.asarray(xi), -1, 0)
  g_mm = (nu + 1) / ((nu + 3) * s2)
  g_ss = nu / (2 * (nu + 3) * s2**2)
  g_sn = -1.0 / ((nu + 1) * (nu + 3) * s2)
  g_nn = 0.25 * (
    special.polygamma(1, nu / 2)
    - special.polygamma(1, (nu + 1) / 2)
    - 2 * (nu + 5) / (nu * (nu + 1) * (nu + 3))
  )
  z = jnp.zeros_like(g_mm)
  return jnp.stack(
    [
      jnp.stack([g_mm, z, z], -1),
      jnp.stack([z, g_ss, g_sn], -1),
      jnp.stack([z, g_sn, g_nn], -1),
    ],
    -2,
  )
