"""The Normal-Wishart lift of the multivariate Student-t (the paper's NG-Ours).

The lift (paper §5 and App. C; Table 1's "quotient-NG, NW"):

  S ~ W_d(nu, Psi)  (E[S] = nu Psi),   z | S ~ N(mu, (kappa S)^-1),

whose marginal is z ~ t_{nu'}(mu, Sigma), nu' = nu - d + 1 and
Sigma = Psi^-1 / (kappa nu'). It is a minimal exponential family with
sufficient statistics T = (S z, z^T S z, S, log|S|) and natural parameters

  lambda = (kappa mu, -kappa/2, -(Psi^-1 + kappa mu mu^T)/2, (nu - d)/2),

a pytree {"l1": [d], "l2": [], "l3": [d, d] symmetric, "l4": []} paired with T
by sum(l1 * Sz) + l2 z^T S z + tr(l3 S) + l4 log|S|. The log-partition is

  A = -(d/2) log kappa + (d/2) log 2 pi + (nu d/2) log 2 - (nu/2) log|Psi^-1|
      + log Gamma_d(nu/2),

and the mean parameters theta = grad A are closed forms (`mean_params`):
E[S z] = nu Psi mu, E[z^T S z] = d/kappa + nu mu^T Psi mu, E[S] = nu Psi,
E[log|S|] = psi_d(nu/2) + d log 2 + log|Psi|. At d = 1 every one of these is
the Normal-Gamma lift's (`normal_gamma`) with alpha = nu/2, beta = 1/(2 Psi).

The fibres are (Psi, kappa) -> (Psi / c, c kappa): lambda -> (c l1, c l2,
c l3, l4), one-dimensional (App. C.2), with tangent k = (l1, l2, l3, 0).

The lifted natural gradient F^-1 grad_lambda L = grad_theta L
(Khan & Nielsen 2018) is taken in theta without forming F
(`natural_gradient`): theta -> (mu, Sigma, nu') is closed form but for nu,
the root of psi_d(nu/2) - d log nu = theta4 - d log 2 - log|theta3|, whose
first derivative comes from the implicit function theorem at the current
nu. Each step costs a few d x d factorisations and triangular solves, as the paper's
Bonnet/Price updates do. On CPU, run a sweep of these steps member by member
(`lib.train.run_sweep(..., vectorize=False)`): jaxlib's batched LAPACK
kernels (a vmapped Cholesky or triangular solve) split a batch over XLA's
thread pool and can deadlock inside the training loop (`lib.core.linalg`). The gradient itself is the reparameterised MC gradient of
L(pi(lambda)) (implicit reparameterisation for the gamma draw behind nu'), not
the paper's Bonnet/Price estimator: both are unbiased; ours depends on
lambda only through pi(lambda), so it has no vertical part and the
projection removes nothing (the paper's §5 says the same of its estimator:
every quantity depends on (Psi, kappa) only through quotient invariants).

Reference: Lukashchuk, Tresor, Senoz, Nuijten, de Vries, "The Quotient
Bayesian Learning Rule", NeurIPS 2025, App. C.
"""

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.scipy import special

from lib.optim.qblr.student_t import NU_MAX

Array = jax.Array
Natural = dict  # {"l1": [d], "l2": [], "l3": [d, d], "l4": []}

_LOG_2PI = math.log(2.0 * math.pi)


def _sym(m: Array) -> Array:
  return 0.5 * (m + m.T)


def natural_from_normal_wishart(mu, kappa, psi_inv, nu) -> Natural:
  """lambda from (mu [d], kappa, Psi^-1 [d, d], nu)."""
  mu, psi_inv = jnp.asarray(mu), jnp.asarray(psi_inv)
  d = mu.shape[-1]
  kappa, nu = jnp.asarray(kappa, mu.dtype), jnp.asarray(nu, mu.dtype)
  return {
    "l1": kappa * mu,
    "l2": -kappa / 2,
    "l3": -0.5 * (psi_inv + kappa * jnp.outer(mu, mu)),
    "l4": (nu - d) / 2,
  }


def normal_wishart_from_natural(lam: Natural):
  """Inverse map: returns (mu, kappa, Psi^-1, nu)."""
  d = lam["l1"].shape[-1]
  kappa = -2.0 * lam["l2"]
  mu = lam["l1"] / kappa
  psi_inv = -2.0 * _sym(lam["l3"]) - kappa * jnp.outer(mu, mu)
  return mu, kappa, psi_inv, 2.0 * lam["l4"] + d


def natural_from_student_t(mu, sigma, nu, *, kappa=1.0) -> Natural:
  """A representative of pi^-1(t_nu(mu, Sigma)): Psi^-1 = kappa nu Sigma.

  nu is the marginal's degrees of freedom (nu' above; the Wishart's is
  nu + d - 1), `kappa` picks the point on the fibre.
  """
  mu, sigma = jnp.asarray(mu), jnp.asarray(sigma)
  d = mu.shape[-1]
  kappa = jnp.asarray(kappa, mu.dtype)
  nu = jnp.asarray(nu, mu.dtype)
  return natural_from_normal_wishart(mu, kappa, kappa * nu * sigma, nu + d - 1)


def in_domain(lam: Natural) -> Array:
  """kappa > 0, nu' = 2 l4 + 1 > 0 and Psi^-1 positive definite (finite)."""
  mu, kappa, psi_inv, _ = normal_wishart_from_natural(lam)
  chol = jnp.linalg.cholesky(psi_inv)
  finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(v)) for v in lam.values()]))
  pd = jnp.all(jnp.isfinite(chol)) & jnp.all(jnp.diagonal(chol) > 0)
  return (kappa > 0) & (2.0 * lam["l4"] + 1.0 > 0) & pd & finite


def _logdet(m: Array) -> Array:
  return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(m))))


def _spd_inverse(m: Array) -> Array:
  chol = jnp.linalg.cholesky(m)
  eye = jnp.eye(m.shape[-1], dtype=m.dtype)
  return jax.scipy.linalg.cho_solve((chol, True), eye)


def multi_digamma(a: Array, d: int) -> Array:
  """psi_d(a) = sum_{i=1..d} psi(a + (1 - i)/2), d/da log Gamma_d(a)."""
  i = jnp.arange(d, dtype=jnp.result_type(a, jnp.float32))
  return jnp.sum(special.digamma(a - i / 2))


def log_partition(lam: Natural) -> Array:
  """A(lambda), written in the natural parameters (autodiff gives theta, F)."""
  d = lam["l1"].shape[-1]
  _, kappa, psi_inv, nu = normal_wishart_from_natural(lam)
  return (
    -0.5 * d * jnp.log(kappa)
    + 0.5 * d * _LOG_2PI
    + 0.5 * nu * d * math.log(2.0)
    - 0.5 * nu * _logdet(psi_inv)
    + special.multigammaln(nu / 2, d)
  )


def mean_params(lam: Natural) -> Natural:
  """theta = grad A = (E[S z], E[z^T S z], E[S], E[log|S|]), closed form."""
  d = lam["l1"].shape[-1]
  mu, kappa, psi_inv, nu = normal_wishart_from_natural(lam)
  e_s = nu * _sym(_spd_inverse(psi_inv))
  return {
    "l1": e_s @ mu,
    "l2": d / kappa + mu @ e_s @ mu,
    "l3": e_s,
    "l4": multi_digamma(nu / 2, d) + d * math.log(2.0) - _logdet(psi_inv),
  }


def project(lam: Natural) -> tuple[Array, Array, Array]:
  """pi(lambda) = (mu, Sigma, nu') = (mu, Psi^-1 / (kappa nu'), nu - d + 1)."""
  d = lam["l1"].shape[-1]
  mu, kappa, psi_inv, nu = normal_wishart_from_natural(lam)
  nu_t = nu - d + 1
  return mu, psi_inv / (kappa * nu_t), nu_t


def inner(a: Natural, b: Natural) -> Array:
  """<a, b> pairing natural and mean coordinates (tr(a3 b3) for the matrix)."""
  return sum(jnp.sum(a[k] * b[k]) for k in ("l1", "l2", "l3", "l4"))


def lifted_kl(lam_p: Natural, lam_q: Natural) -> Array:
  """KL(q_p || q_q) of two Normal-Wishart laws, the Bregman divergence of A:
  A(lam_q) - A(lam_p) - <lam_q - lam_p, theta(lam_p)> (what RDoG measures
  its distance with; invariant when one fibre action moves both)."""
  diff = jax.tree.map(jnp.subtract, lam_q, lam_p)
  return (
    log_partition(lam_q)
    - log_partition(lam_p)
    - inner(diff, mean_params(lam_p))
  )


def vertical(lam: Natural) -> Natural:
  """Tangent of the fibre: d/dc of (c l1, c l2, c l3, l4) at c = 1."""
  return {**lam, "l4": jnp.zeros_like(lam["l4"])}


def fisher_vp(lam: Natural, v: Natural) -> Natural:
  """F v = D theta(lambda) v (F = hess A), by a forward-mode product."""
  return jax.jvp(mean_params, (lam,), (v,))[1]


def fisher_norm_sq(lam: Natural, v: Natural) -> Array:
  """|v|_F^2 = <v, F v> at lambda."""
  return inner(v, fisher_vp(lam, v))


def horizontal_project(g: Natural, lam: Natural) -> Natural:
  """g - k <k, F g> / <k, F k>: the F-orthogonal removal of the vertical part."""
  k = vertical(lam)
  fk = fisher_vp(lam, k)
  coef = inner(fk, g) / inner(fk, k)
  return jax.tree.map(lambda a, b: a - coef * b, g, k)


def _digamma_slope(nu: Array, d: int) -> Array:
  """d/dnu [psi_d(nu/2) - d log nu] (> 0 for nu > d - 1)."""
  i = jnp.arange(d, dtype=nu.dtype)
  return 0.5 * jnp.sum(special.polygamma(1, nu / 2 - i / 2)) - d / nu


def student_t_from_mean(theta: Natural, nu_now: Array):
  """(mu, Sigma, nu') from theta, exact in value and first derivative at a
  theta whose Wishart degrees of freedom are `nu_now` (held fixed).

  nu solves psi_d(nu/2) - d log nu = theta4 - d log 2 - log|theta3|; at the
  current point its value is nu_now and its derivative 1 / slope (implicit
  function theorem), which is all a gradient needs.
  """
  d = theta["l1"].shape[-1]
  m = _sym(theta["l3"])  # nu Psi
  chol = jnp.linalg.cholesky(m)
  mu = jax.scipy.linalg.cho_solve((chol, True), theta["l1"])
  kappa = d / (theta["l2"] - theta["l1"] @ mu)
  s = theta["l4"] - d * math.log(2.0) - _logdet(m)
  nu_now = jax.lax.stop_gradient(nu_now)
  nu = nu_now + (s - jax.lax.stop_gradient(s)) / _digamma_slope(nu_now, d)
  nu_t = nu - d + 1
  m_inv = jax.scipy.linalg.cho_solve((chol, True), jnp.eye(d, dtype=m.dtype))
  sigma = nu * _sym(m_inv) / (kappa * nu_t)
  return mu, sigma, nu_t


def natural_gradient(objective: Callable, lam: Natural):
  """(value, g): objective(mu, Sigma, nu') at pi(lambda) and its lifted
  natural gradient g = F^-1 grad_lambda = grad_theta, with g["l3"] the
  symmetric gradient (the trace pairing's)."""
  theta = mean_params(lam)
  nu_now = 2.0 * lam["l4"] + lam["l1"].shape[-1]
  f = lambda th: objective(*student_t_from_mean(th, nu_now))
  value, g = jax.value_and_grad(f)(theta)
  return value, {**g, "l3": _sym(g["l3"])}


def sample_student_t(key, mu, sigma, nu, num_samples: int) -> Array:
  """Reparameterised draws of t_nu(mu, Sigma), shape (num_samples, d).

  z = mu + L eps sqrt(nu / (2 g)), L L^T = Sigma, eps ~ N(0, I),
  g ~ Gamma(nu/2) (implicit reparameterisation in nu; nu capped at NU_MAX,
  as the univariate sampler).
  """
  d = mu.shape[-1]
  nu = jnp.minimum(nu, NU_MAX)
  k_n, k_g = jax.random.split(key)
  eps = jax.random.normal(k_n, (num_samples, d), mu.dtype)
  g = jax.random.gamma(k_g, jnp.full((num_samples, 1), nu / 2), dtype=mu.dtype)
  chol = jnp.linalg.cholesky(sigma)
  return mu + (eps @ chol.T) * jnp.sqrt(nu / (2.0 * g))


def student_t_entropy(sigma: Array, nu: Array) -> Array:
  """Differential entropy of the d-variate t_nu(mu, Sigma)."""
  d = sigma.shape[-1]
  a, b = nu / 2, (nu + d) / 2
  return (
    0.5 * _logdet(sigma)
    + 0.5 * d * jnp.log(nu * jnp.pi)
    + special.gammaln(a)
    - special.gammaln(b)
    + b * (special.digamma(b) - special.digamma(a))
  )


def student_t_logpdf(z: Array, mu: Array, sigma: Array, nu: Array) -> Array:
  """log t_nu(z | mu, Sigma) for z (..., d)."""
  d = mu.shape[-1]
  chol = jnp.linalg.cholesky(sigma)
  r = jax.scipy.linalg.solve_triangular(chol, (z - mu).T, lower=True)
  maha = jnp.sum(r**2, 0)
  return (
    special.gammaln((nu + d) / 2)
    - special.gammaln(nu / 2)
    - 0.5 * d * jnp.log(nu * jnp.pi)
    - 0.5 * _logdet(sigma)
    - (nu + d) / 2 * jnp.log1p(maha / nu)
  )
