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

import functools
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.core.errors import ConfigError
from lib.optim.qblr.normal_gamma import natural_from_student_t
from lib.optim.qblr.normal_gamma import project
from lib.optim.qblr.student_t import student_t_logpdf
from lib.optim.qblr.transform import qng

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


# -----------------------------------------------------------------------------
# The compared methods, as pure pieces, and their convergence record.
# -----------------------------------------------------------------------------


class Tracked(NamedTuple):
  """One MLE run: the iterate, the optimizer state and its convergence record.

  The record is kept on device, so the iteration count to the gap is exact
  whatever the logging resolution: `last_bad` is the last iterate t whose gap
  |l_t - l*| was not below tol (NaN counts as not below).
  """

  params: Any  # xi (ECME), natural parameters (QNG), log-coordinates (GD/Adam)
  opt_state: Any
  loglik: Array  # l_t of the current iterate t
  last_bad: Array  # int32: last iterate t with |l_t - l*| >= tol; -1: none


def _track(params, opt_state, ll, t, l_star, tol, last_bad=-1) -> Tracked:
  """The run after iterate t, whose mean log-likelihood is `ll`."""
  bad = ~(jnp.abs(ll - l_star) < tol)  # NaN counts as bad
  return Tracked(
    params, opt_state, ll, jnp.where(bad, t, last_bad).astype(jnp.int32)
  )


def iterations_to_gap(last_bad: int, num_steps: int) -> int:
  """First t from which |l_t - l*| < tol for good; -1 if never.

  `last_bad` is the last iterate (of 0..num_steps) whose gap was >= tol.
  """
  if last_bad < 0:
    return 0
  return -1 if last_bad >= num_steps else last_bad + 1


class MLEMethod(NamedTuple):
  """One compared method: its parameterisation of xi and its step.

  to_params(xi) -> params; to_xi(params) -> xi; init_opt(h, params) -> the
  optimizer state; step(params, opt_state, x, h) -> (params, opt_state), with
  h the run's setting (QNG's beta, GD's or Adam's learning rate; unused by
  ECME).
  """

  to_params: Callable
  to_xi: Callable
  init_opt: Callable
  step: Callable


MLE_METHODS = ("ecme", "qng", "gd", "adam")


def mle_method(name: str, *, kappa: float, max_halvings: int) -> MLEMethod:
  """A method of the paper's Student-t MLE comparison: ecme, qng, gd or adam.

  ECME iterates xi directly (`ecme_step`). QNG (`qng`, constant beta) steps
  the Normal-Gamma natural parameters of the lift, starting from the
  representative with kappa = `kappa` of xi0, and reads xi off by `project`.
  GD and Adam descend -l in u = (mu, log sigma^2, log nu) (`log_from_xi`).

  Raises:
    ConfigError: an unknown name.
  """
  if name not in MLE_METHODS:
    raise ConfigError(f"unknown MLE method {name!r}; one of {MLE_METHODS}")
  if name == "ecme":

    def ecme(params, opt_state, x, h):
      del h
      return ecme_step(x, params), opt_state

    return MLEMethod(lambda xi: xi, lambda p: p, lambda h, p: None, ecme)
  if name == "qng":
    to_params = lambda xi: natural_from_student_t(xi, kappa=kappa)
    to_xi = project
    make_tx = lambda h: qng(h, max_halvings=max_halvings)
  else:
    to_params, to_xi = log_from_xi, xi_from_log
    make_tx = {"gd": optax.sgd, "adam": optax.adam}[name]

  def step(params, opt_state, x, h):
    grad = jax.grad(lambda p: -mean_loglik(x, to_xi(p)))(params)
    updates, opt_state = make_tx(h).update(grad, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

  return MLEMethod(to_params, to_xi, lambda h, p: make_tx(h).init(p), step)


@functools.partial(jax.jit, static_argnums=range(5))
def student_t_draws(seed: int, mu: float, sigma2: float, nu: float, n: int):
  """n draws from t_nu(mu, sigma2) with `jax.random.key(seed)`.

  float64 under `jax.enable_x64` (as the experiment runs), else float32.

  The paper's MLE data (seed 0 gives the spec's draws); one compiled program
  rather than one per eager op.
  """
  t = jax.random.t(jax.random.key(seed), nu, (n,), dtype=jnp.float64)
  return mu + np.sqrt(sigma2) * t


def init_run(method: MLEMethod, x, xi0, h, *, l_star, tol) -> Tracked:
  """A run of `method` from xi0 (setting h), its iterate 0 recorded."""
  params = method.to_params(xi0)
  ll = mean_loglik(x, method.to_xi(params))
  return _track(params, method.init_opt(h, params), ll, 0, l_star, tol)


def step_run(method: MLEMethod, run: Tracked, x, t, h, *, l_star, tol):
  """Iterate t -> t + 1 of a run: (run, {"loss": -l, "gap": |l - l*|})."""
  params, opt_state = method.step(run.params, run.opt_state, x, h)
  ll = mean_loglik(x, method.to_xi(params))
  run = _track(params, opt_state, ll, t + 1, l_star, tol, run.last_bad)
  return run, {"loss": -ll, "gap": jnp.abs(ll - l_star)}
