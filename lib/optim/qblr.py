"""Quotient Bayesian learning rule (QBLR): the quotient natural gradient.

The univariate Student-t family t_nu(mu, sigma^2) is not an exponential
family, but it is the marginal of the Normal-Gamma family

  tau ~ Gamma(shape alpha, rate beta),  z | tau ~ N(mu, 1 / (kappa tau)),

which is a minimal, regular exponential family (the "lift"). The marginal is
z ~ t_nu(mu, sigma^2) with nu = 2 alpha and sigma^2 = beta / (alpha kappa).
The map pi: lambda -> xi = (mu, sigma^2, nu) is many-to-one; its fibres are the
orbits of (kappa, beta) -> (c kappa, c beta), c > 0, so the Student-t family
is the quotient Lambda / ~. Natural gradients are cheap in the lift
(F^-1 grad_lambda = grad_theta), and QBLR removes the *vertical* component of
the lifted natural gradient (the part that moves along a fibre) with the
F-orthogonal projection

  g_perp = g - k (k^T F g) / (k^T F k),  k(lambda) = (l1, l2, l3, 0),

then steps lambda <- lambda + beta g_perp.

Coordinates. Natural parameters and sufficient statistics of the lift are

  lambda = (kappa mu, -kappa/2, -beta - kappa mu^2/2, alpha - 1/2),
  T      = (tau z, tau z^2, tau, log tau),

with log-partition A = log Gamma(alpha) - alpha log beta - log(kappa)/2
+ log(2 pi)/2 and domain l2 < 0, l4 > -1/2, l1^2 / (4 l2) - l3 > 0. Mean
parameters are grad A and the Fisher matrix is hess A (both by autodiff).

Finding about the paper's Theorem 2(ii) (see `quotient_metric`). The metric
that the quotient construction induces on the Student-t family is
G_q = (J F^-1 J^T)^-1 with J = D pi. It is well defined (the same at every
point of a fibre) and QNG is invariant to the choice of representative, but it
is **not** the Student-t Fisher metric claimed by Theorem 2(ii): at
(mu, kappa, alpha, beta) = (1, 0.7, 2, 3), i.e. xi = (1, 15/7, 4),
G_q = diag(0.46667, 0.08711, 0.03623) whereas the Student-t Fisher is
[[0.3333, 0, 0], [0, 0.0622, -0.0133], [0, -0.0133, 0.0065]]. G_q is the
complete-data (EM) information, e.g. g_mumu = kappa alpha / beta = 1/sigma^2,
which dominates the marginal Fisher (nu+1)/((nu+3) sigma^2). So QNG is the
natural gradient of the quotient metric, not of the marginal Fisher metric.
A second finding: for an objective that is constant along fibres (an exact
MLE or ELBO of the marginal, or a reparameterised MC estimate of it) the lifted
natural gradient is already horizontal, k^T F g = 0, so the projection is a
no-op; it only matters for surrogate or noisy gradients with a vertical part.

Domain guard. A constant step can leave the Normal-Gamma domain (beta >= 0.5
leaves it at step 1 on the Student-t MLE). `qng` halves the step until the
new lambda is inside the domain, at most `max_halvings` times; if even the
smallest step is outside, the step is rejected (lambda unchanged) and counted
in the state. `check_domain` turns a rejection into a `ConfigError`.

Theorem 1 of the paper (quotient manifold) covers the Student-t only for
nu > 1; the code works for any nu > 0 but the theory, and finite means of the
variational family, need nu > 1.

References:
  Lukashchuk, Tresor, Senoz, Nuijten, de Vries, "The Quotient Bayesian
  Learning Rule", NeurIPS 2025. Khan & Rue, "The Bayesian Learning Rule",
  JMLR 2023 (the Gaussian variational online Newton baseline).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy import special

from lib.core.errors import ConfigError

Array = jax.Array

_LOG_2PI = math.log(2.0 * math.pi)

# -----------------------------------------------------------------------------
# Normal-Gamma lift: natural parameters, log-partition, mean parameters, Fisher.
# All functions act on the last axis (size 4) and broadcast over leading axes,
# so a mean-field family over d coordinates is a (d, 4) array.
# -----------------------------------------------------------------------------


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


def _vectorize(fn, signature):
  return jnp.vectorize(fn, signature=signature)


def mean_params(lam: Array) -> Array:
  """theta = grad A = (E[tau z], E[tau z^2], E[tau], E[log tau])."""
  return _vectorize(jax.grad(log_partition), "(n)->(n)")(lam)


def fisher(lam: Array) -> Array:
  """Fisher information of the lift, F = hess A (shape (..., 4, 4))."""
  return _vectorize(jax.hessian(log_partition), "(n)->(n,n)")(lam)


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


# -----------------------------------------------------------------------------
# Projection to the Student-t, fibres and the quotient metric.
# -----------------------------------------------------------------------------


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
  if not isinstance(xi, jax.core.Tracer):
    xi_np = np.asarray(xi)
    if np.any(~(xi_np[..., 2] > 0)):
      raise ConfigError(
        f"Student-t degrees of freedom nu must be > 0, got {xi_np[..., 2]}"
      )
    if np.any(~(xi_np[..., 1] > 0)):
      raise ConfigError(f"sigma^2 must be > 0, got {xi_np[..., 1]}")
  if not isinstance(kappa, jax.core.Tracer) and np.any(np.asarray(kappa) <= 0):
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
  return _vectorize(jax.jacobian(project), "(n)->(m,n)")(lam)


def quotient_metric(lam: Array) -> Array:
  """Metric induced on the Student-t by the quotient: (J F^-1 J^T)^-1.

  It is the same at every point of a fibre. It is NOT the Student-t Fisher
  metric (which the paper's Theorem 2(ii) asserts): at
  (mu, kappa, alpha, beta) = (1, 0.7, 2, 3) this returns
  diag(0.46667, 0.08711, 0.03623), while the Student-t Fisher is
  [[0.3333, 0, 0], [0, 0.0622, -0.0133], [0, -0.0133, 0.0065]]. It equals the
  complete-data (EM) information, e.g. g_mumu = 1 / sigma^2.
  """
  j = pi_jacobian(lam)
  f = fisher(lam)
  jfj = j @ jnp.linalg.solve(f, jnp.swapaxes(j, -1, -2))
  return jnp.linalg.inv(jfj)


def student_t_fisher(xi: Array) -> Array:
  """Closed-form Fisher metric of t_nu(mu, sigma^2) in (mu, sigma^2, nu).

  Used to document that it differs from `quotient_metric`.
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


# -----------------------------------------------------------------------------
# Student-t helpers (the marginal family).
# -----------------------------------------------------------------------------


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
  gamma draw is differentiable in nu by implicit reparameterisation.
  """
  mu, s2, nu = jnp.moveaxis(xi, -1, 0)
  shape = (num_samples, *mu.shape)
  k_n, k_g = jax.random.split(key)
  eps = jax.random.normal(k_n, shape, xi.dtype)
  g = jax.random.gamma(k_g, jnp.broadcast_to(nu / 2, shape), dtype=xi.dtype)
  return mu + jnp.sqrt(s2) * eps * jnp.sqrt(nu / (2.0 * g))


# -----------------------------------------------------------------------------
# The QNG step with a domain guard, and the optax transformation.
# -----------------------------------------------------------------------------


def guarded_step(lam: Array, direction: Array, step_size, *, max_halvings: int):
  """lambda + s * direction, halving s until the result is in the domain.

  Returns:
    (new_lam, s, num_halvings, accepted). If the step is still outside after
    max_halvings halvings it is rejected: new_lam = lam, accepted = False.
  """

  def outside(s):
    return ~jnp.all(in_domain(lam + s * direction))

  def cond(carry):
    s, n = carry
    return outside(s) & (n < max_halvings)

  def body(carry):
    s, n = carry
    return s / 2, n + 1

  s0 = jnp.asarray(step_size, lam.dtype)
  s, n = jax.lax.while_loop(cond, body, (s0, jnp.zeros([], jnp.int32)))
  accepted = ~outside(s)
  new = jnp.where(accepted, lam + s * direction, lam)
  return new, s, n, accepted


class QNGState(NamedTuple):
  """State of `qng`; every field is per leaf of params unless noted."""

  count: Array  # scalar int32: steps taken.
  num_halvings: Any  # int32 per leaf: halvings used at the last step.
  num_rejected: Any  # int32 per leaf: steps rejected so far (domain guard).
  first_rejected: Any  # int32 per leaf: step of the first rejection, or -1.
  lam0: Any  # RDoG: initial natural parameters (None without RDoG).
  max_dist: Any  # RDoG: float per leaf, max_t sqrt(2 KL(lam0 || lam_t)).
  sum_sq: Any  # RDoG: float per leaf, sum of squared F-norms of directions.


def qng(
  learning_rate: optax.ScalarOrSchedule | None = None,
  *,
  project_horizontal: bool = True,
  rdog: bool = False,
  rdog_eps: float = 1e-3,
  max_halvings: int = 20,
) -> optax.GradientTransformation:
  """Quotient natural gradient on Normal-Gamma natural parameters.

  Params are natural parameters of the lift (each leaf an array (..., 4),
  a product of Normal-Gamma laws over the leading axes). `updates` are the
  Euclidean gradients of a loss to *minimise* with respect to those natural
  parameters, e.g. jax.grad(lambda lm: -elbo(project(lm))). The returned update
  is -s * g_perp with g = F^-1 grad (the lifted natural gradient), g_perp its
  horizontal projection, and s the step size after the domain guard, so that
  optax.apply_updates lands inside the domain.

  Step sizes: a constant/scheduled `learning_rate`, or RDoG (Riemannian
  distance over gradients, `rdog=True`): s_t = r_t / sqrt(sum_i |g_i|_F^2)
  with r_t = max(rdog_eps, max_i sqrt(2 KL(lam_0 || lam_i))), using the
  closed-form lifted KL. RDoG is fibre-invariant because the fibre action is a
  reparameterisation of tau, under which KL and the F-norm are invariant.

  Args:
    learning_rate: constant or schedule; required unless rdog.
    project_horizontal: remove the vertical component (QBLR). False gives the
      plain lifted natural gradient (drifts along fibres under noise).
    rdog: use RDoG step sizes instead of learning_rate.
    rdog_eps: initial distance of RDoG.
    max_halvings: domain guard budget per step.

  Returns:
    An optax GradientTransformation with state `QNGState`.
  """
  if rdog == (learning_rate is not None):
    raise ConfigError("qng needs exactly one of learning_rate or rdog=True")
  if max_halvings < 0:
    raise ConfigError(f"max_halvings must be >= 0, got {max_halvings}")

  def init_fn(params):
    zeros_i = jax.tree.map(lambda _: jnp.zeros([], jnp.int32), params)
    first = jax.tree.map(lambda _: -jnp.ones([], jnp.int32), params)
    if rdog:
      lam0 = jax.tree.map(jnp.asarray, params)
      r = jax.tree.map(lambda p: jnp.asarray(rdog_eps, p.dtype), params)
      g2 = jax.tree.map(lambda p: jnp.zeros([], p.dtype), params)
    else:
      lam0 = r = g2 = None
    return QNGState(
      jnp.zeros([], jnp.int32), zeros_i, zeros_i, first, lam0, r, g2
    )

  def leaf_update(grad, lam, state_leaves, count):
    n_rej, first_rej, lam0, r, g2 = state_leaves
    f = fisher(lam)
    g = -jnp.linalg.solve(f, grad[..., None])[..., 0]  # ascent direction
    if project_horizontal:
      g = horizontal_project(g, lam, f)
    if rdog:
      fnorm2 = jnp.sum(g * jnp.einsum("...ij,...j->...i", f, g))
      g2 = g2 + fnorm2
      dist = jnp.sqrt(2.0 * jnp.maximum(lifted_kl(lam0, lam), 0.0))
      r = jnp.maximum(r, dist)
      s = r / jnp.sqrt(g2 + jnp.finfo(lam.dtype).tiny)
    else:
      lr = learning_rate(count) if callable(learning_rate) else learning_rate
      s = jnp.asarray(lr, lam.dtype)
    new, _, n_halv, ok = guarded_step(lam, g, s, max_halvings=max_halvings)
    n_rej = n_rej + (~ok).astype(jnp.int32)
    first_rej = jnp.where((first_rej < 0) & ~ok, count, first_rej)
    return new - lam, (n_halv, n_rej, first_rej, r, g2)

  def update_fn(updates, state, params=None):
    if params is None:
      raise ConfigError("qng needs params (the natural parameters)")
    leaves_g, treedef = jax.tree.flatten(updates)
    leaves_p = treedef.flatten_up_to(params)
    n_rej = treedef.flatten_up_to(state.num_rejected)
    first = treedef.flatten_up_to(state.first_rejected)
    if rdog:
      lam0 = treedef.flatten_up_to(state.lam0)
      r = treedef.flatten_up_to(state.max_dist)
      g2 = treedef.flatten_up_to(state.sum_sq)
    else:
      lam0 = r = g2 = [None] * len(leaves_g)
    outs = [
      leaf_update(g, p, (a, b, c, d, e), state.count)
      for g, p, a, b, c, d, e in zip(
        leaves_g, leaves_p, n_rej, first, lam0, r, g2
      )
    ]
    new_updates = treedef.unflatten([o[0] for o in outs])
    unf = lambda i: treedef.unflatten([o[1][i] for o in outs])  # noqa: E731
    new_state = QNGState(
      count=optax.safe_increment(state.count),
      num_halvings=unf(0),
      num_rejected=unf(1),
      first_rejected=unf(2),
      lam0=state.lam0,
      max_dist=unf(3) if rdog else None,
      sum_sq=unf(4) if rdog else None,
    )
    return new_updates, new_state

  return optax.GradientTransformation(init_fn, update_fn)


def check_domain(state: QNGState, *, learning_rate=None) -> None:
  """Raises ConfigError if the domain guard had to reject a step.

  Call it on the host after a (scanned) run of `qng`.
  """
  n_rej = int(
    sum(np.asarray(x).sum() for x in jax.tree.leaves(state.num_rejected))
  )
  if n_rej:
    first = min(
      int(x) for x in jax.tree.leaves(state.first_rejected) if int(x) >= 0
    )
    raise ConfigError(
      f"QNG step size {learning_rate} left the Normal-Gamma domain even after "
      f"all halvings in {n_rej} step(s), first at step {first}: reduce the "
      "step size or raise max_halvings"
    )


# -----------------------------------------------------------------------------
# Gaussian BLR: variational online Newton (VON), the baseline.
# -----------------------------------------------------------------------------


def von_step(mean, precision, expected_grad, expected_hess, *, rho):
  """One BLR step for a Gaussian q = N(mean, precision^-1) (Khan & Rue).

  S <- (1 - rho) S + rho E_q[hess l], m <- m - rho S_new^-1 E_q[grad l], where
  l is the negative log joint (loss plus the prior's -log p). Full precision
  matrix (d, d) or diagonal precision (d,) (then expected_hess is the diagonal
  of the expected Hessian). With rho = 1 and exact expectations this is
  Newton's method and lands on the exact posterior of a conjugate Gaussian
  model in one step.
  """
  new_prec = (1.0 - rho) * precision + rho * expected_hess
  if precision.ndim == mean.ndim + 1:
    delta = jnp.linalg.solve(new_prec, expected_grad[..., None])[..., 0]
  else:
    delta = expected_grad / new_prec
  return mean - rho * delta, new_prec


def von_expectations(
  key, neg_log_joint, mean, precision_diag, *, num_samples=1
):
  """MC estimates of E_q[grad l] and E_q[diag hess l] for a diagonal Gaussian.

  Draws theta = m + eps / sqrt(s) and evaluates the exact gradient and exact
  Hessian diagonal at each draw (fine for the small d of our baselines).
  """
  eps = jax.random.normal(key, (num_samples, *mean.shape), mean.dtype)
  thetas = mean + eps / jnp.sqrt(precision_diag)
  grads = jax.vmap(jax.grad(neg_log_joint))(thetas)
  hess = jax.vmap(lambda t: jnp.diagonal(jax.hessian(neg_log_joint)(t)))(thetas)
  return grads.mean(0), hess.mean(0)
