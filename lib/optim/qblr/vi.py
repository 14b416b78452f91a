"""Mean-field variational posteriors, their ELBO and the BBVI-STL objective.

The paper's second experiment is variational Bayesian logistic regression,
p(w) = N(0, prec^-1 I) and p(y_i | x_i, w) = sigmoid(y_i x_i^T w), y in
{-1, +1}, with a mean-field Student-t posterior (fitted by QNG in the
Normal-Gamma lift, or by BBVI) against a Gaussian one (the BLR baseline).
A `Posterior` is what the ELBO and the metrics need of either family: its
mean, a reparameterised sampler and a closed-form entropy, so

  ELBO(q) = E_q[log p(y, w)] + H(q)

is estimated by Monte Carlo over the first term only.

References:
  Lukashchuk, Tresor, Senoz, Nuijten, de Vries, "The Quotient Bayesian
  Learning Rule", NeurIPS 2025 (logistic regression experiment). Roeder,
  Wu, Duvenaud, "Sticking the Landing: Simple, Lower-Variance Gradient
  Estimators for Variational Inference", NeurIPS 2017 (the BBVI baseline).
"""

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from lib.optim.qblr.student_t import sample_student_t
from lib.optim.qblr.student_t import student_t_entropy
from lib.optim.qblr.student_t import student_t_logpdf

Array = jax.Array
# w [n, d] -> log p(y, w) [n]: the log joint at n posterior draws.
LogJoint = Callable[[Array], Array]


class Posterior(NamedTuple):
  """A mean-field variational posterior, as the ELBO and the metrics see it."""

  mean: Array  # [d]
  sample: Callable[[Array, int], Array]  # (key, n) -> [n, d]
  entropy: Array  # scalar
  nu: Array | None = None  # [d] degrees of freedom (Student-t only)


def student_t_posterior(xi: Array) -> Posterior:
  """q(w) = prod_j t_{nu_j}(w_j | mu_j, sigma_j^2) for xi (d, 3)."""
  return Posterior(
    xi[:, 0],
    lambda k, n: sample_student_t(k, xi, n),
    jnp.sum(student_t_entropy(xi)),
    xi[:, 2],
  )


def gaussian_posterior(mean: Array, precision: Array) -> Posterior:
  """q(w) = N(mean, diag(precision)^-1)."""
  d = mean.shape[-1]
  return Posterior(
    mean,
    lambda k, n: (
      mean + jax.random.normal(k, (n, d), mean.dtype) / jnp.sqrt(precision)
    ),
    0.5 * jnp.sum(jnp.log(2 * jnp.pi * jnp.e / precision)),
  )


def logistic_log_lik(w: Array, x: Array, y: Array) -> Array:
  """sum_i log sigmoid(y_i x_i^T w) for w (..., d), x (N, d), y (N,)."""
  return jnp.sum(jax.nn.log_sigmoid(y * (w @ x.T)), -1)


def gaussian_log_prior(w: Array, precision) -> Array:
  """log N(w | 0, precision^-1 I) for w (..., d)."""
  d = w.shape[-1]
  return -0.5 * precision * jnp.sum(w**2, -1) + 0.5 * d * jnp.log(
    precision / (2 * jnp.pi)
  )


def logistic_log_joint(x: Array, y: Array, *, precision) -> LogJoint:
  """w -> log p(y | x, w) + log p(w) of Bayesian logistic regression."""
  return lambda w: logistic_log_lik(w, x, y) + gaussian_log_prior(w, precision)


def elbo(q: Posterior, key: Array, log_joint: LogJoint, *, num_samples: int):
  """MC estimate of E_q[log p(y, w)] + H(q), with H(q) in closed form."""
  w = q.sample(key, num_samples)
  return jnp.mean(log_joint(w)) + q.entropy


def stl_neg_elbo(
  xi: Array, key: Array, log_joint: LogJoint, *, num_samples: int
) -> Array:
  """-ELBO of a mean-field Student-t whose gradient is the STL estimator.

  -mean_s [log p(y, w_s) - log q(w_s | stop_gradient(xi))] with reparameterised
  draws w_s(xi): its value is the MC -ELBO, and its gradient in xi drops the
  score term E_q[grad_xi log q] (zero in expectation), "sticking the landing"
  (Roeder et al. 2017): the estimator's variance vanishes as q reaches an
  exact posterior.
  """
  w = sample_student_t(key, xi, num_samples)
  log_q = jnp.sum(student_t_logpdf(w, jax.lax.stop_gradient(xi)), -1)
  return -jnp.mean(log_joint(w) - log_q)
