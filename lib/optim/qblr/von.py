"""Gaussian BLR: variational online Newton (VON), the baseline of QBLR.

Khan & Rue, "The Bayesian Learning Rule", JMLR 2023 (§D of the spec): for a
Gaussian q = N(m, S^-1) the BLR step in natural parameters is

  S <- (1 - rho) S + rho E_q[hess l],   m <- m - rho S_new^-1 E_q[grad l],

with l the negative log joint (loss plus the prior's -log p).
"""

import jax
import jax.numpy as jnp


def von_step(mean, precision, expected_grad, expected_hess, *, rho):
  """One BLR step for a Gaussian q = N(mean, precision^-1).

  Full precision matrix (d, d) or diagonal precision (d,) (then expected_hess
  is the diagonal of the expected Hessian). With rho = 1 and exact
  expectations this is Newton's method and lands on the exact posterior of a
  conjugate Gaussian model in one step.
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
