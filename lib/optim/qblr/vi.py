"""Variational posteriors, their ELBO and the BBVI-STL objective.

The paper's second experiment is variational Bayesian logistic regression,
p(w) = N(0, prec^-1 I) and p(y_i | x_i, w) = sigmoid(y_i x_i^T w), y in
{-1, +1}, with a Student-t posterior: full-covariance, fitted by QNG in the
Normal-Wishart lift (the paper's NG-Ours), or mean-field, fitted by QNG in
the Normal-Gamma lift or by BBVI; against a mean-field Gaussian (the BLR
baseline).
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
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy import special

from lib.core.errors import ConfigError
from lib.core.errors import is_concrete
from lib.optim.qblr import normal_wishart as nw
from lib.optim.qblr.normal_gamma import natural_from_student_t
from lib.optim.qblr.normal_gamma import project
from lib.optim.qblr.student_t import sample_student_t
from lib.optim.qblr.student_t import student_t_entropy
from lib.optim.qblr.student_t import student_t_logpdf
from lib.optim.qblr.transform import guarded_step
from lib.optim.qblr.transform import qng
from lib.optim.qblr.transform import rdog_step_size
from lib.optim.qblr.von import von_expectations
from lib.optim.qblr.von import von_step

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


def multivariate_t_posterior(mu: Array, sigma: Array, nu: Array) -> Posterior:
  """q(w) = t_nu(w | mu, Sigma), full covariance (the Normal-Wishart lift's)."""
  return Posterior(
    mu,
    lambda k, n: nw.sample_student_t(k, mu, sigma, nu, n),
    nw.student_t_entropy(sigma, nu),
    nu,
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


# -----------------------------------------------------------------------------
# The compared methods as pure (init, step, posterior) pieces, and the metrics.
# -----------------------------------------------------------------------------


class NWState(NamedTuple):
  """State of "qng_nw": steps the domain guard rejected (lambda unchanged),
  and with RDoG its initial point, distance and summed squared F-norms."""

  num_rejected: Array  # int32
  lam0: Any = None  # RDoG: the initial natural parameters.
  max_dist: Array | None = None  # RDoG: r_t.
  sum_sq: Array | None = None  # RDoG: sum of |g_i|_F^2.


class VIMethod(NamedTuple):
  """One VI method: init(h) -> (params, opt_state); one step; q(params).

  step(params, opt_state, x, y, key, h) -> (params, opt_state, elbo), with h
  the run's step size and elbo the MC ELBO at the params before the step.
  """

  init: Callable
  step: Callable
  posterior: Callable  # params -> Posterior


def vi_method(
  name: str,
  xi0: Array,
  *,
  prior_precision: float,
  num_samples: int,
  kappa: float,
  max_halvings: int,
  rdog: bool = False,
  rdog_eps: float = 1e-3,
) -> VIMethod:
  """A method of the paper's logistic-regression comparison, from xi0 (d, 3).

  "qng_nw": QBLR as the paper's NG-Ours, the quotient natural gradient on
  the Normal-Wishart lift of a full-covariance multivariate Student-t
  (`normal_wishart`; RDoG step sizes with `rdog` as the paper, from the
  closed-form lifted KL and initial distance `rdog_eps`, else a constant
  step h; one MC sample of the ELBO per step, the step halved up to
  `max_halvings` times to stay in the domain).
  "qng": the mean-field variant [ours], the Normal-Gamma lift of each
  weight's Student-t (constant step h, or RDoG with `rdog`). "bbvi":
  reparameterised BBVI with the STL gradient (`stl_neg_elbo`) on (mu,
  log sigma, log nu), by Adam(h), or with `rdog` by Euclidean DoG from
  distance `rdog_eps` (the paper's BBVI-NS; `optax.contrib.dog`).
  "blr_gauss": the Gaussian BLR, diagonal variational online Newton with
  step rho = h (Khan & Rue 2023), from N(0, prior_precision^-1); it has no
  distance-over-gradients rule (`rdog` is an error).

  With `rdog` the step size h passed to init and step is ignored.
  """
  prec, n_mc = prior_precision, num_samples
  log_joint = lambda x, y: logistic_log_joint(x, y, precision=prec)
  if name == "qng_nw":
    nu0 = xi0[:, 2]
    if is_concrete(nu0) and not np.all(np.asarray(nu0) == np.asarray(nu0)[0]):
      raise ConfigError(
        "qng_nw's multivariate Student-t has one degrees of freedom: xi0's nu "
        f"column must be constant, got {np.asarray(nu0)}"
      )
    posterior = lambda lam: multivariate_t_posterior(*nw.project(lam))

    def init(h):
      del h
      lam = nw.natural_from_student_t(
        xi0[:, 0], jnp.diag(xi0[:, 1]), xi0[0, 2], kappa=kappa
      )
      zero = jnp.zeros([], jnp.int32)
      if not rdog:
        return lam, NWState(zero)
      dtype = lam["l2"].dtype
      eps = jnp.asarray(rdog_eps, dtype)
      return lam, NWState(zero, lam, eps, jnp.zeros([], dtype))

    def step(lam, opt_state, x, y, key, h):
      def objective(mu, sigma, nu):
        q = multivariate_t_posterior(mu, sigma, nu)
        return elbo(q, key, log_joint(x, y), num_samples=n_mc)

      value, g = nw.natural_gradient(objective, lam)
      g = nw.horizontal_project(g, lam)
      state = opt_state
      if rdog:
        h, max_dist, sum_sq = rdog_step_size(
          state.max_dist,
          state.sum_sq,
          kl=nw.lifted_kl(state.lam0, lam),
          sq_norm=nw.fisher_norm_sq(lam, g),
        )
        state = state._replace(max_dist=max_dist, sum_sq=sum_sq)
      lam, _, _, ok = guarded_step(
        lam, g, h, max_halvings=max_halvings, in_domain=nw.in_domain
      )
      return lam, state._replace(num_rejected=state.num_rejected + (~ok)), value

    return VIMethod(init, step, posterior)

  if name == "qng":
    if rdog:
      make_tx = lambda h: qng(None, rdog=True, rdog_eps=rdog_eps)
    else:
      make_tx = lambda h: qng(h, max_halvings=max_halvings)
    posterior = lambda lam: student_t_posterior(project(lam))

    def init(h):
      lam = natural_from_student_t(xi0, kappa=kappa)
      return lam, make_tx(h).init(lam)

    def step(lam, opt_state, x, y, key, h):
      def neg_elbo(lm):
        return -elbo(posterior(lm), key, log_joint(x, y), num_samples=n_mc)

      neg, g = jax.value_and_grad(neg_elbo)(lam)
      u, opt_state = make_tx(h).update(g, opt_state, lam)
      return optax.apply_updates(lam, u), opt_state, -neg

    return VIMethod(init, step, posterior)

  if name == "bbvi":
    to_xi = lambda p: jnp.stack(
      [p["mu"], jnp.exp(2 * p["log_s"]), jnp.exp(p["log_nu"])], -1
    )

    if rdog:  # the paper's BBVI-NS: Euclidean DoG from distance rdog_eps
      make_tx = lambda h: optax.contrib.dog(init_step=("distance", rdog_eps))
    else:
      make_tx = optax.adam

    def init(h):
      p = {
        "mu": xi0[:, 0],
        "log_s": 0.5 * jnp.log(xi0[:, 1]),
        "log_nu": jnp.log(xi0[:, 2]),
      }
      return p, make_tx(h).init(p)

    def step(p, opt_state, x, y, key, h):
      stl = lambda p: stl_neg_elbo(
        to_xi(p), key, log_joint(x, y), num_samples=n_mc
      )
      g = jax.grad(stl)(p)
      q = student_t_posterior(to_xi(p))
      value = elbo(q, key, log_joint(x, y), num_samples=n_mc)
      u, opt_state = make_tx(h).update(g, opt_state, p)
      return optax.apply_updates(p, u), opt_state, value

    return VIMethod(init, step, lambda p: student_t_posterior(to_xi(p)))

  if name != "blr_gauss":
    raise ConfigError(f"unknown VI method {name!r}")
  if rdog:
    raise ConfigError("blr_gauss has no distance-over-gradients (rdog) rule")

  def init(h):
    del h
    d = xi0.shape[0]
    return (jnp.zeros(d, xi0.dtype), jnp.full(d, prec, xi0.dtype)), None

  def step(params, opt_state, x, y, key, h):
    m, s = params
    nlj = lambda w: -logistic_log_lik(w, x, y) + 0.5 * prec * jnp.sum(w**2)
    k_elbo, k_von = jax.random.split(key)
    q = gaussian_posterior(m, s)
    value = elbo(q, k_elbo, log_joint(x, y), num_samples=n_mc)
    eg, eh = von_expectations(k_von, nlj, m, s, num_samples=n_mc)
    return von_step(m, s, eg, eh, rho=h), opt_state, value

  return VIMethod(init, step, lambda p: gaussian_posterior(*p))


def map_logistic(x: Array, y: Array, *, precision, steps: int = 30) -> Array:
  """MAP weights of Bayesian logistic regression: argmax of
  `logistic_log_joint` (prior N(0, precision^-1 I)), by Newton's method
  from 0 (the objective is strictly concave: it converges quadratically).

  The point estimate the VI posteriors' mean classifiers are read against:
  what the prior and data give without any posterior spread.
  """
  d = x.shape[-1]

  def newton(w, _):
    s = jax.nn.sigmoid(-y * (x @ w))  # d/dz of -log sigmoid(z), negated
    grad = -(x.T @ (y * s)) + precision * w
    hess = (x.T * (s * (1.0 - s))) @ x + precision * jnp.eye(d, dtype=x.dtype)
    return w - jnp.linalg.solve(hess, grad), None

  w, _ = jax.lax.scan(newton, jnp.zeros(d, x.dtype), None, length=steps)
  return w


def posterior_metrics(
  q: Posterior,
  x: Array,
  y: Array,
  x_test: Array,
  y_test: Array,
  *,
  prior_precision: float,
  elbo_key: Array,
  elbo_samples: int,
  eval_key: Array,
  eval_samples: int,
) -> dict:
  """What the paper reports of a fitted posterior, plus the ELBO that picks it.

  elbo: the MC training ELBO on `elbo_samples` draws (step-size selection);
  acc_mean: test accuracy of the posterior-mean classifier sign(x^T E_q[w]);
  acc_sample: that of the posterior predictive, averaging sigmoid(x^T w) over
  `eval_samples` draws; entropy: the binary entropy (nats) of that average,
  over the test points (the paper's Table 2 "Entropy"; a point-mass
  posterior reads its plug-in classifier's); nu_mean: the mean degrees of
  freedom (Student-t q).
  """
  log_joint = logistic_log_joint(x, y, precision=prior_precision)
  value = elbo(q, elbo_key, log_joint, num_samples=elbo_samples)
  correct = lambda f: (jnp.sign(f) == y_test).astype(x_test.dtype)
  draws = q.sample(eval_key, eval_samples)
  prob = jnp.mean(jax.nn.sigmoid(draws @ x_test.T), 0)
  out = {
    "elbo": value,
    "acc_mean": jnp.mean(correct(x_test @ q.mean)),
    "acc_sample": jnp.mean(correct(prob - 0.5)),
    "entropy": jnp.mean(special.entr(prob) + special.entr(1.0 - prob)),
  }
  if q.nu is not None:
    out["nu_mean"] = jnp.mean(q.nu)
  return out


class VIRun(NamedTuple):
  """One VI run: a method's parameters and state, and its ELBO trace."""

  params: Any
  opt_state: Any
  elbo_ema: Array  # exponential average of the one-sample ELBO (biased)


def init_vi_run(method: VIMethod, h) -> VIRun:
  """A run of `method` at step size h."""
  params, opt_state = method.init(h)
  return VIRun(
    params, opt_state, jnp.zeros([], jax.tree.leaves(params)[0].dtype)
  )


def step_vi_run(method: VIMethod, run: VIRun, x, y, key, step, h, *, decay):
  """One step: (run, {"loss": -ELBO, "elbo_ema": the debiased average}).

  The one-sample ELBO is noisy; its exponential average with `decay`,
  divided by 1 - decay^(step + 1) (Adam's bias correction), is what a
  training curve can show.
  """
  params, opt_state, value = method.step(
    run.params, run.opt_state, x, y, key, h
  )
  ema = decay * run.elbo_ema + (1 - decay) * value
  debiased = ema / (1 - decay ** (step + 1).astype(ema.dtype))
  return VIRun(params, opt_state, ema), {"loss": -value, "elbo_ema": debiased}
