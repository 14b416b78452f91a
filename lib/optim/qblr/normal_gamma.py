"""The Normal-Gamma lift of the Student-t: an exponential family and its fibres.

Coordinates (paper §4; spec C.2). Natural parameters and sufficient statistics

  lambda = (kappa mu, -kappa/2, -beta - kappa mu^2/2, alpha - 1/2),
  T      = (tau z, tau z^2, tau, log tau),

with log-partition A = log Gamma(alpha) - alpha log beta - log(kappa)/2
+ log(2 pi)/2 and domain l2 < 0, l4 > -1/2, l1^2 / (4 l2) - l3 > 0. Mean
parameters are grad A and the Fisher matrix is hess A (both by autodiff).
Every function acts on the last axis (size 4) and broadcasts over leading
axes, so a mean-field family over d coordinates is a (d, 4) array.

The projection pi(lambda) = (mu, sigma^2, nu) is constant on the fibres
(kappa, beta) -> (c kappa, c beta); the fibre's tangent is
k(lambda) = (l1, l2, l3, 0), and QBLR keeps only the F-orthogonal complement

  g_perp = g - k (k^T F g) / (k^T F k).

Finding about the paper's Theorem 2(ii) (see `quotient_metric`): the metric
the quotient induces on the Student-t is G_q = (J F^-1 J^T)^-1 with J = D pi.
It is well defined (the same at every point of a fibre) and QNG is invariant
to the representative, but it is **not** the Student-t Fisher metric: G_q is
the complete-data (EM) information, which dominates the marginal Fisher.
A second finding: for an objective that is constant along fibres (an exact
MLE or ELBO of the marginal, or a reparameterised MC estimate of it) the
lifted natural gradient is already horizontal, k^T F g = 0, so the projection
only matters for surrogate or noisy gradients with a vertical part.

Theorem 1 of the paper (quotient manifold) covers the Student-t only for
nu > 1; the code works for any nu > 0 but the theory, and finite means of the
variational family, need nu > 1.
"""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import special

from lib.core.errors import ConfigError
from lib.core.errors import is_concrete

Array = jax.Array

_LOG_2PI = math.log(2.0 * math.pi)


def natural_from_normal_gamma(mu, kappa, alpha, beta) -> Array:
  """lambda = (kappa mu, -kappa/2, -beta - kappa mu^2/2, alpha - 1/2)."""
  mu, kappa, alpha, beta = jnp.broadcast_arrays(
    *map(jnp.asarray, (mu, kappa, alpha, beta))
  )
  return jnp.stack(
    [kappa * mu, -kappa / 2, -beta - kappa * mu**2 / 2, alpha - 0.5], axis=-1
  )


def normal_gamma_from_natural(lam: Array) -> tuple[Array, Array, Array, Array]:
  """Inverse map: returns (mu, kappa, alpha, beta)."""
  l1, l2, l3, l4 = jnp.moveaxis(lam, -1, 0)
  kappa = -2.0 * l2
  mu = -l1 / (2.0 * l2)
  beta = -l3 + l1**2 / (4.0 * l2)
  alpha = l4 + 0.5
  return mu, kappa, alpha, beta


def in_domain(lam: Array) -> Array:
  """Elementwise (over leading axes) test of the Normal-Gamma domain."""
  l1, l2, l3, l4 = jnp.moveaxis(lam, -1, 0)
  ok = (l2 < 0) & (l4 > -0.5) & (l1**2 / (4.0 * l2) - l3 > 0)
  return ok & jnp.all(jnp.isfinite(lam), axis=-1)


def log_partition(lam: Array) -> Array:
  """A(lambda) = log Gamma(alpha) - alpha log beta - log(kappa)/2 + log(2pi)/2."""
  _, kappa, alpha, beta = normal_gamma_from_natural(lam)
  return (
    special.gammaln(alpha)
    - alpha * jnp.log(beta)
    - 0.5 * jnp.log(kappa)
    + 0.5 * _LOG_2PI
  )


def mean_params(lam: Array) -> Array:
  """theta = grad A = (E[tau z], E[tau z^2], E[tau], E[log tau])."""
  return jnp.vectorize(jax.grad(log_partition), signature="(n)->(n)")(lam)


def fisher(lam: Array) -> Array:
  """Fisher information of the lift, F = hess A (shape (..., 4, 4))."""
  return jnp.vectorize(jax.hessian(log_partition), signature="(n)->(n,n)")(lam)


def lifted_kl(lam_p: Array, lam_q: Array) -> Array:
  """KL(q_p || q_q) of Normal-Gamma laws as a Bregman divergence of A.

  Sums over leading axes (a mean-field family is a product of laws).
  """
  d = (
    log_partition(lam_q)
    - log_partition(lam_p)
    - jnp.sum((lam_q - lam_p) * mean_params(lam_p), axis=-1)
  )
  return jnp.sum(d)


def project(lam: Array) -> Array:
  """pi(lambda) = (mu, sigma^2, nu) = (mu, beta / (alpha kappa), 2 alpha)."""
  mu, kappa, alpha, beta = normal_gamma_from_natural(lam)
  return jnp.stack([mu, beta / (alpha * kappa), 2.0 * alpha], axis=-1)


def natural_from_student_t(xi, *, kappa=1.0) -> Array:
  """A representative lambda of pi^-1(xi) for xi = (mu, sigma^2, nu).

  Args:
    xi: array (..., 3) of (mu, sigma^2, nu).
    kappa: picks the representative on the fibre (any kappa > 0).

  Raises:
    ConfigError: if (concrete) sigma^2 <= 0, nu <= 0 or kappa <= 0: the
      Student-t needs nu > 0 and the lift needs alpha = nu/2 > 0.
  """
  xi = jnp.asarray(xi)
  if xi.shape[-1:] != (3,):
    raise ConfigError(
      f"xi must have last axis (mu, sigma2, nu), got {xi.shape}"
    )
  if is_concrete(xi):
    xi_np = np.asarray(xi)
    if np.any(~(xi_np[..., 2] > 0)):
      raise ConfigError(
        f"Student-t degrees of freedom nu must be > 0, got {xi_np[..., 2]}"
      )
    if np.any(~(xi_np[..., 1] > 0)):
      raise ConfigError(f"sigma^2 must be > 0, got {xi_np[..., 1]}")
  if is_concrete(kappa) and np.any(np.asarray(kappa) <= 0):
    raise ConfigError(f"kappa must be > 0, got {kappa}")
  mu, sigma2, nu = jnp.moveaxis(xi, -1, 0)
  alpha = nu / 2.0
  beta = sigma2 * alpha * kappa
  return natural_from_normal_gamma(mu, kappa, alpha, beta)


def vertical(lam: Array) -> Array:
  """Tangent of the fibre, d/dc lambda(mu, c kappa, alpha, c beta) at c = 1."""
  return lam * jnp.array([1.0, 1.0, 1.0, 0.0], lam.dtype)


def horizontal_project(g: Array, lam: Array, fisher_matrix=None) -> Array:
  """F-orthogonal projection of g onto the horizontal space at lambda.

  g_perp = g - k (k^T F g) / (k^T F k). The vertical space is one-dimensional
  for the Normal-Gamma lift, so this is one scalar division per coordinate.
  """
  f = fisher(lam) if fisher_matrix is None else fisher_matrix
  k = vertical(lam)
  fk = jnp.einsum("...ij,...j->...i", f, k)
  coef = jnp.sum(fk * g, -1, keepdims=True) / jnp.sum(fk * k, -1, keepdims=True)
  return g - coef * k


def pi_jacobian(lam: Array) -> Array:
  """J = D pi(lambda), shape (..., 3, 4)."""
  return jnp.vectorize(jax.jacobian(project), signature="(n)->(m,n)")(lam)


def quotient_metric(lam: Array) -> Array:
  """Metric induced on the Student-t by the quotient: (J F^-1 J^T)^-1.

  It is the same at every point of a fibre. It is NOT the Student-t Fisher
  metric (which the paper's Theorem 2(ii) asserts): at
  (mu, kappa, alpha, beta) = (1, 0.7, 2, 3) this returns
  diag(0.46667, 0.08711, 0.03623), while the Student-t Fisher
  (`student_t.student_t_fisher`) is
  [[0.3333, 0, 0], [0, 0.0622, -0.0133], [0, -0.0133, 0.0065]]. It equals the
  complete-data (EM) information, e.g. g_mumu = 1 / sigma^2.
  """
  j = pi_jacobian(lam)
  f = fisher(lam)
  jfj = j @ jnp.linalg.solve(f, jnp.swapaxes(j, -1, -2))
  return jnp.linalg.inv(jfj)


def natural_gradient(objective: Callable[[Array], Array], lam: Array):
  """Lifted natural gradient of objective(pi(lambda)): F^-1 grad_lambda.

  Args:
    objective: scalar function of xi (shape (..., 3)).
    lam: natural parameters (..., 4).

  Returns:
    (value, g) with g = F^-1 grad_lambda objective(pi(lambda)) = grad_theta.
  """
  value, grad = jax.value_and_grad(lambda lm: objective(project(lm)))(lam)
  g = jnp.linalg.solve(fisher(lam), grad[..., None])[..., 0]
  return value, g
