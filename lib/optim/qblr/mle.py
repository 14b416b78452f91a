"""Student-t maximum likelihood: ECME and the reference solve QBLR is timed to.

The paper's first experiment fits t_nu(mu, sigma^2) by maximum likelihood on
draws x_1..x_N, with the quotient natural gradient against ECME (Liu & Rubin's
expectation / conditional maximisation, either) and first-order methods on the
unconstrained coordinates u = (mu, log sigma^2, log nu). Every method's gap
|l_t - l*| in the mean log-likelihood is measured against `reference_mle`.

References:
  Lukashchuk, Tresor, Senoz, Nuijten, de Vries, "The Quotient Bayesian
  Learning Rule", NeurIPS 2025 (Student-t MLE experiment). Liu & Rubin,
  "ML estimation of the t distribution using EM and its extensions, ECM and
  ECME", Statistica Sinica 1995.
"""

import jax
import jax.numpy as jnp

from lib.optim.qblr.student_t import student_t_logpdf

Array = jax.Array


def mean_loglik(x: Array, xi: Array) -> Array:
  """l(xi) = (1/N) sum_i log t_nu(x_i | mu, sigma^2); xi = (mu, sigma^2, nu)."""
  return jnp.mean(student_t_logpdf(x, xi))


def xi_from_log(u: Array) -> Array:
  """(mu, log sigma^2, log nu) -> xi = (mu, sigma^2, nu)."""
  return jnp.stack([u[0], jnp.exp(u[1]), jnp.exp(u[2])])


def log_from_xi(xi: Array) -> Array:
  """xi = (mu, sigma^2, nu) -> (mu, log sigma^2, log nu)."""
  return jnp.stack([xi[0], jnp.log(xi[1]), jnp.log(xi[2])])


def ecme_step(x: Array, xi: Array) -> Array:
  """One ECME step for the Student-t: EM for (mu, sigma^2), Newton on nu.

  E: w_i = (nu + 1) / (nu + (x_i - mu)^2 / sigma^2). CM1: the weighted mean
  mu = sum w_i x_i / sum w_i and scale sigma^2 = (1/N) sum w_i (x_i - mu)^2.
  CM2 (the "either" step of ECME): one Newton step on the observed
  log-likelihood in log nu (a gradient step where it is not concave).
  A fixed point of the step is a stationary point of `mean_loglik`.
  """

  def ll_nu(log_nu, mu, s2):
    return mean_loglik(x, jnp.stack([mu, s2, jnp.exp(log_nu)]))

  d1 = jax.grad(ll_nu)
  d2 = jax.grad(d1)
  mu, s2, nu = xi
  w = (nu + 1) / (nu + (x - mu) ** 2 / s2)
  mu = jnp.sum(w * x) / jnp.sum(w)
  s2 = jnp.mean(w * (x - mu) ** 2)
  u = jnp.log(nu)
  g, h = d1(u, mu, s2), d2(u, mu, s2)
  u = jnp.where(h < 0, u - g / h, u + 0.1 * g)
  return jnp.stack([mu, s2, jnp.exp(u)])


@jax.jit
def _reference_solve(x, xi0, em_steps, newton_steps):
  f = lambda u: mean_loglik(x, xi_from_log(u))
  xi = jax.lax.fori_loop(0, em_steps, lambda _, xi: ecme_step(x, xi), xi0)
  newton = lambda _, u: u - jnp.linalg.solve(jax.hessian(f)(u), jax.grad(f)(u))
  u = jax.lax.fori_loop(0, newton_steps, newton, log_from_xi(xi))
  return xi_from_log(u), f(u), jnp.max(jnp.abs(jax.grad(f)(u)))


def reference_mle(
  x: Array, xi0: Array, *, em_steps: int, newton_steps: int
) -> tuple[Array, Array, Array]:
  """The reference (xi*, l*, max |grad l|): ECME iterations, then Newton.

  Not a training run: a cheap fixed-point solve (one compile, milliseconds
  to run) that the gap of every method is measured against. Newton in
  (mu, log sigma^2, log nu) alone diverges from xi0 on most draws, so ECME
  brings it into Newton's basin; the returned gradient norm (in the log
  coordinates) says how stationary xi* is.
  """
  return _reference_solve(x, xi0, em_steps, newton_steps)
