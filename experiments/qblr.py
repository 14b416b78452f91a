"""Quotient natural gradient (QBLR) on Student-t MLE and Student-t VI.

(i) Student-t MLE on N draws from t_3(1, 2^2): QNG on the Normal-Gamma lift
(constant beta; beta >= 0.5 only runs thanks to the domain guard), Euclidean GD
and Adam on (mu, log sigma^2, log nu), and ECME. Records iterations to a 1e-8
gap in the mean log-likelihood and plots the convergence.
(ii) Mean-field Student-t variational Bayesian logistic regression on
scikit-learn's bundled breast-cancer data: QNG (Normal-Gamma lift per weight,
one MC sample per step) vs the Gaussian BLR (diagonal variational online
Newton) vs BBVI (reparameterised, sticking-the-landing, Adam), posterior-mean
test accuracy over stratified 80/20 splits.

Run: python -m experiments.qblr --config configs/qblr.py:quick --workdir runs/qblr

References: Lukashchuk et al., "The Quotient Bayesian Learning Rule",
NeurIPS 2025; Khan & Rue, "The Bayesian Learning Rule", JMLR 2023.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _cli
from lib import train as train_lib
from lib.core import rng
from lib.core.errors import ConfigError
from lib.optim import qblr

# -----------------------------------------------------------------------------
# (i) Student-t MLE.
# -----------------------------------------------------------------------------


def _loglik(x, xi):
  return jnp.mean(qblr.student_t_logpdf(x, xi))


def _log_xi(u):
  """(mu, log sigma^2, log nu) -> xi."""
  return jnp.stack([u[0], jnp.exp(u[1]), jnp.exp(u[2])])


def _to_log(xi):
  return jnp.stack([xi[0], jnp.log(xi[1]), jnp.log(xi[2])])


def run_qng_mle(x, xi0, *, kappa0, betas, num_steps, max_halvings):
  """Log-likelihood per iterate (len num_steps + 1) for each beta."""
  lam0 = qblr.natural_from_student_t(xi0, kappa=kappa0)

  def one(beta):
    tx = qblr.qng(beta, max_halvings=max_halvings)

    def step(carry, _):
      lam, state = carry
      ll, g = jax.value_and_grad(lambda lm: -_loglik(x, qblr.project(lm)))(lam)
      u, state = tx.update(g, state, lam)
      return (lam + u, state), -ll

    (lam, state), lls = jax.lax.scan(
      step, (lam0, tx.init(lam0)), None, num_steps
    )
    return jnp.append(lls, _loglik(x, qblr.project(lam))), state

  return jax.jit(jax.vmap(one))(jnp.asarray(betas, x.dtype))


def run_optax_mle(x, xi0, make_tx, lrs, *, num_steps):
  """GD/Adam on (mu, log sigma^2, log nu); one run per learning rate."""
  u0 = _to_log(xi0)

  def one(lr):
    tx = make_tx(lr)

    def step(carry, _):
      u, state = carry
      loss, g = jax.value_and_grad(lambda v: -_loglik(x, _log_xi(v)))(u)
      upd, state = tx.update(g, state, u)
      return (optax.apply_updates(u, upd), state), -loss

    (u, _), lls = jax.lax.scan(step, (u0, tx.init(u0)), None, num_steps)
    return jnp.append(lls, _loglik(x, _log_xi(u)))

  return jax.jit(jax.vmap(one))(jnp.asarray(lrs, x.dtype))


def run_ecme(x, xi0, *, num_steps):
  """ECME for the Student-t: EM updates of (mu, sigma^2), Newton step on nu.

  E: w_i = (nu + 1) / (nu + (x_i - mu)^2 / sigma^2). CM1: weighted mean and
  scale. CM2 (the "either" step of ECME): one Newton step on the observed
  log-likelihood in log nu (falls back to a gradient step where not concave).
  """

  def ll_nu(log_nu, mu, s2):
    return _loglik(x, jnp.stack([mu, s2, jnp.exp(log_nu)]))

  d1 = jax.grad(ll_nu)
  d2 = jax.grad(d1)

  def step(xi, _):
    ll = _loglik(x, xi)
    mu, s2, nu = xi
    w = (nu + 1) / (nu + (x - mu) ** 2 / s2)
    mu = jnp.sum(w * x) / jnp.sum(w)
    s2 = jnp.mean(w * (x - mu) ** 2)
    u = jnp.log(nu)
    g, h = d1(u, mu, s2), d2(u, mu, s2)
    u = jnp.where(h < 0, u - g / h, u + 0.1 * g)
    return jnp.stack([mu, s2, jnp.exp(u)]), ll

  xi, lls = jax.lax.scan(step, xi0, None, num_steps)
  return jnp.append(lls, _loglik(x, xi)), xi


def newton_mle(x, xi_start, *, num_steps=30):
  """Newton's method in (mu, log sigma^2, log nu): the reference l*."""
  f = lambda u: _loglik(x, _log_xi(u))

  def step(u, _):
    g, h = jax.grad(f)(u), jax.hessian(f)(u)
    return u - jnp.linalg.solve(h, g), None

  u, _ = jax.lax.scan(step, _to_log(xi_start), None, num_steps)
  return _log_xi(u), f(u), jnp.max(jnp.abs(jax.grad(f)(u)))


def iterations_to_gap(lls, l_star, tol) -> int:
  """First t from which |l_t - l*| < tol for good; -1 if never."""
  bad = np.flatnonzero(~(np.abs(np.asarray(lls) - l_star) < tol))
  if bad.size == 0:
    return 0
  return -1 if bad[-1] == len(lls) - 1 else int(bad[-1] + 1)


def student_t_mle(config, workdir) -> dict:
  c = config.mle
  # jax.random.key(seed) directly: seed 0 gives the spec's draws (C.5).
  key = jax.random.key(config.seed)
  x = c.true_mu + np.sqrt(c.true_sigma2) * jax.random.t(
    key, c.true_nu, (c.n,), dtype=jnp.float64
  )
  xi0 = jnp.asarray(c.xi0, jnp.float64)
  ecme_lls, ecme_xi = run_ecme(x, xi0, num_steps=c.num_steps)
  xi_star, l_star, grad_max = newton_mle(x, ecme_xi)
  l_star = float(l_star)
  logging.info("MLE xi*=%s l*=%.8f |grad|=%.1e", xi_star, l_star, grad_max)

  curves = {"ecme": np.asarray(ecme_lls)}
  qng_lls, qng_state = run_qng_mle(
    x,
    xi0,
    kappa0=c.kappa0,
    betas=c.qng_betas,
    num_steps=c.num_steps,
    max_halvings=c.max_halvings,
  )
  # A step the guard had to reject is a bad step size: fail with a clear error.
  qblr.check_domain(qng_state, learning_rate=c.qng_betas)
  for beta, lls in zip(c.qng_betas, np.asarray(qng_lls)):
    curves[f"qng_beta{beta:g}"] = lls
  gd = run_optax_mle(x, xi0, optax.sgd, c.gd_lrs, num_steps=c.num_steps)
  for lr, lls in zip(c.gd_lrs, np.asarray(gd)):
    curves[f"gd_lr{lr:g}"] = lls
  adam = run_optax_mle(x, xi0, optax.adam, c.adam_lrs, num_steps=c.num_steps)
  for lr, lls in zip(c.adam_lrs, np.asarray(adam)):
    curves[f"adam_lr{lr:g}"] = lls

  iters = {k: iterations_to_gap(v, l_star, c.tol) for k, v in curves.items()}
  writer = train_lib.MetricWriter(workdir)
  for t in range(0, c.num_steps + 1, max(1, c.num_steps // 50)):
    writer.write(t, {k: float(abs(v[t] - l_star)) for k, v in curves.items()})
  _mle_figure(
    os.path.join(workdir, "mle_convergence.png"), curves, l_star, c.tol
  )
  rejected = int(np.sum(np.asarray(qng_state.num_rejected)))
  return {
    "xi_star": [float(v) for v in xi_star],
    "l_star": l_star,
    "iterations": iters,
    "qng_rejected_steps": rejected,
    "final_gap": {k: float(abs(v[-1] - l_star)) for k, v in curves.items()},
  }


def _mle_figure(path, curves, l_star, tol):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(7, 4.5))
  for name, lls in curves.items():
    gap = np.maximum(np.abs(lls - l_star), 1e-16)
    style = "-" if name.startswith("qng") else ("--" if "ecme" in name else ":")
    ax.semilogy(gap, style, label=name)
  ax.axhline(tol, color="k", lw=0.5)
  ax.set_xlabel("iteration")
  ax.set_ylabel("|l - l*| (mean log-likelihood)")
  ax.set_title("Student-t MLE on t_3(1, 2^2) draws")
  ax.legend(fontsize=7, ncol=2)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


# -----------------------------------------------------------------------------
# (ii) Student-t variational Bayesian logistic regression.
# -----------------------------------------------------------------------------


def breast_cancer_splits(num_splits, test_fraction, seed):
  """Stratified splits, standardised with train statistics, bias column."""
  from sklearn import datasets

  x, y = datasets.load_breast_cancer(return_X_y=True)
  xs, ys, xts, yts = [], [], [], []
  for s in range(num_splits):
    r = np.random.default_rng(seed + s)
    test = np.concatenate(
      [
        r.permutation(np.flatnonzero(y == c))[
          : int(round(test_fraction * np.sum(y == c)))
        ]
        for c in (0, 1)
      ]
    )
    train = np.setdiff1d(np.arange(len(y)), test)
    mean, std = x[train].mean(0), x[train].std(0) + 1e-12
    f = lambda idx, mean=mean, std=std: np.concatenate(
      [(x[idx] - mean) / std, np.ones((len(idx), 1))], 1
    )
    xs.append(f(train))
    ys.append(2.0 * y[train] - 1)
    xts.append(f(np.sort(test)))
    yts.append(2.0 * y[np.sort(test)] - 1)
  return tuple(np.stack(a) for a in (xs, ys, xts, yts))


def _log_lik(w, x, y):
  """sum_i log sigmoid(y_i x_i^T w); w (..., d)."""
  return jnp.sum(jax.nn.log_sigmoid(y * (w @ x.T)), -1)


def _log_prior(w, prec):
  d = w.shape[-1]
  return -0.5 * prec * jnp.sum(w**2, -1) + 0.5 * d * jnp.log(
    prec / (2 * jnp.pi)
  )


def student_t_elbo(xi, key, x, y, *, prec, num_samples):
  """MC ELBO of a mean-field Student-t (closed-form entropy)."""
  w = qblr.sample_student_t(key, xi, num_samples)
  return jnp.mean(_log_lik(w, x, y) + _log_prior(w, prec)) + jnp.sum(
    qblr.student_t_entropy(xi)
  )


def _accuracies(mean, sampler, x, y, key, eval_samples):
  acc_mean = jnp.mean(jnp.sign(x @ mean) == y)
  w = sampler(key, eval_samples)
  prob = jnp.mean(jax.nn.sigmoid(w @ x.T), 0)
  acc_sample = jnp.mean(jnp.sign(prob - 0.5) == y)
  return acc_mean, acc_sample


def vi_qng(c, x, y, xt, yt, key, xi0):
  lam0 = qblr.natural_from_student_t(xi0, kappa=c.kappa0)
  tx = (
    qblr.qng(None, rdog=True, rdog_eps=c.rdog_eps)
    if c.qng_rdog
    else (qblr.qng(c.qng_lr, max_halvings=c.max_halvings))
  )

  def step(carry, t):
    lam, state = carry
    k = jax.random.fold_in(key, t)
    neg, g = jax.value_and_grad(
      lambda lm: (
        -student_t_elbo(
          qblr.project(lm),
          k,
          x,
          y,
          prec=c.prior_precision,
          num_samples=c.num_samples,
        )
      )
    )(lam)
    u, state = tx.update(g, state, lam)
    return (lam + u, state), -neg

  (lam, state), elbos = jax.lax.scan(
    step, (lam0, tx.init(lam0)), jnp.arange(c.num_steps)
  )
  xi = qblr.project(lam)
  accs = _accuracies(
    xi[:, 0],
    lambda k, n: qblr.sample_student_t(k, xi, n),
    xt,
    yt,
    jax.random.fold_in(key, 2**31 - 1),
    c.eval_samples,
  )
  return accs, elbos, jnp.mean(xi[:, 2]), jnp.sum(state.num_rejected)


def vi_bbvi(c, x, y, xt, yt, key, xi0):
  """Reparameterised BBVI with sticking-the-landing, Adam on (mu, log s, log nu)."""
  p0 = {
    "mu": xi0[:, 0],
    "log_s": 0.5 * jnp.log(xi0[:, 1]),
    "log_nu": jnp.log(xi0[:, 2]),
  }
  to_xi = lambda p: jnp.stack(
    [p["mu"], jnp.exp(2 * p["log_s"]), jnp.exp(p["log_nu"])], -1
  )
  tx = optax.adam(c.bbvi_lr)

  def neg_elbo(p, k):
    xi = to_xi(p)
    w = qblr.sample_student_t(k, xi, c.num_samples)
    xi_sg = jax.lax.stop_gradient(xi)
    log_q = jnp.sum(qblr.student_t_logpdf(w, xi_sg), -1)  # STL: no score term
    return -jnp.mean(
      _log_lik(w, x, y) + _log_prior(w, c.prior_precision) - log_q
    )

  def step(carry, t):
    p, state = carry
    k = jax.random.fold_in(key, t)
    _, g = jax.value_and_grad(neg_elbo)(p, k)
    u, state = tx.update(g, state, p)
    elbo = student_t_elbo(
      to_xi(p), k, x, y, prec=c.prior_precision, num_samples=c.num_samples
    )
    return (optax.apply_updates(p, u), state), elbo

  (p, _), elbos = jax.lax.scan(step, (p0, tx.init(p0)), jnp.arange(c.num_steps))
  xi = to_xi(p)
  accs = _accuracies(
    xi[:, 0],
    lambda k, n: qblr.sample_student_t(k, xi, n),
    xt,
    yt,
    jax.random.fold_in(key, 2**31 - 1),
    c.eval_samples,
  )
  return accs, elbos, jnp.mean(xi[:, 2])


def vi_blr(c, x, y, xt, yt, key):
  """Gaussian BLR (diagonal VON) with one MC sample per step."""
  d = x.shape[-1]
  prec = c.prior_precision
  nlj = lambda w: -_log_lik(w, x, y) + 0.5 * prec * jnp.sum(w**2)
  m0, s0 = jnp.zeros(d, x.dtype), jnp.full(d, prec, x.dtype)

  def step(carry, t):
    m, s = carry
    k = jax.random.fold_in(key, t)
    eg, eh = qblr.von_expectations(k, nlj, m, s, num_samples=c.num_samples)
    m, s = qblr.von_step(m, s, eg, eh, rho=c.blr_rho)
    return (m, s), -nlj(m)

  (m, s), logjoint = jax.lax.scan(step, (m0, s0), jnp.arange(c.num_steps))
  sampler = lambda k, n: m + jax.random.normal(k, (n, d), x.dtype) / jnp.sqrt(s)
  accs = _accuracies(
    m, sampler, xt, yt, jax.random.fold_in(key, 2**31 - 1), c.eval_samples
  )
  return accs, logjoint


def logistic_vi(config, workdir) -> dict:
  c = config.vi
  x, y, xt, yt = map(
    jnp.asarray,
    breast_cancer_splits(c.num_splits, c.test_fraction, config.seed),
  )
  d = x.shape[-1]
  xi0 = jnp.tile(jnp.asarray([0.0, c.sigma2_0, c.nu0], x.dtype), (d, 1))
  root = rng.root_key(config.seed)
  keys = jax.vmap(lambda s: rng.stream(root, "vi", s))(jnp.arange(c.num_splits))
  out, curves, accs = {}, {}, {}
  args = (x, y, xt, yt, keys)
  if "qng" in c.methods:
    res = jax.jit(jax.vmap(lambda *a: vi_qng(c, *a, xi0)))(*args)
    (am, asmp), elbos, nu_mean, rejected = map(jax.device_get, res)
    if int(rejected.sum()):
      raise ConfigError(
        f"QNG step size {c.qng_lr} left the Normal-Gamma domain even after "
        f"{c.max_halvings} halvings in {int(rejected.sum())} step(s)"
      )
    out["qng"] = dict(
      nu_mean=float(np.mean(nu_mean)), rejected=int(rejected.sum())
    )
    curves["QNG (Normal-Gamma lift)"] = elbos
    accs["qng"] = (am, asmp)
  if "bbvi" in c.methods:
    res = jax.jit(jax.vmap(lambda *a: vi_bbvi(c, *a, xi0)))(*args)
    (am, asmp), elbos, nu_mean = map(jax.device_get, res)
    out["bbvi"] = dict(nu_mean=float(np.mean(nu_mean)))
    curves["BBVI (STL, Adam)"] = elbos
    accs["bbvi"] = (am, asmp)
  if "blr_gauss" in c.methods:
    res = jax.jit(jax.vmap(lambda *a: vi_blr(c, *a)))(*args)
    (am, asmp), _ = map(jax.device_get, res)
    accs["blr_gauss"] = (am, asmp)
  for name, (am, asmp) in accs.items():
    am, asmp = np.asarray(am), np.asarray(asmp)
    se = float(np.std(am) / np.sqrt(len(am)))
    out.setdefault(name, {}).update(
      acc_mean=float(am.mean()),
      acc_mean_se=se,
      acc_sample=float(asmp.mean()),
      acc_mean_per_split=[float(v) for v in am],
    )
  for other in ("bbvi", "blr_gauss"):
    if "qng" in out and other in out:
      out[f"qng_minus_{other}"] = (
        out["qng"]["acc_mean"] - out[other]["acc_mean"]
      )
  _vi_figure(os.path.join(workdir, "vi_elbo.png"), curves, out)
  return out


def _vi_figure(path, curves, out):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, axes = plt.subplots(1, 2, figsize=(10, 4))
  for name, elbos in curves.items():
    e = np.asarray(elbos).mean(0)
    w = max(1, len(e) // 50)
    smooth = np.convolve(e, np.ones(w) / w, mode="valid")
    axes[0].plot(smooth, label=name)
  # Robust limits: early MC estimates are wild.
  vals = np.concatenate(
    [np.asarray(v).mean(0)[len(v[0]) // 10 :] for v in curves.values()]
  )
  lo, hi = np.percentile(vals, [5, 99])
  axes[0].set_ylim(lo - 0.2 * (hi - lo) - 1, hi + 0.2 * (hi - lo) + 1)
  axes[0].set_xlabel("step")
  axes[0].set_ylabel("MC ELBO (mean over splits, smoothed)")
  axes[0].legend(fontsize=8)
  names = [n for n in ("qng", "blr_gauss", "bbvi") if n in out]
  axes[1].bar(
    names,
    [out[n]["acc_mean"] for n in names],
    yerr=[out[n]["acc_mean_se"] for n in names],
    color=["C0", "C2", "C1"][: len(names)],
  )
  axes[1].set_ylim(0.9, 1.0)
  axes[1].set_ylabel("posterior-mean test accuracy")
  axes[1].set_title("breast cancer, mean +- SE over splits")
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def run(config, workdir) -> dict:
  train_lib.prepare_run(workdir, config)
  # float64: the 1e-8 gap of the MLE and the Fisher solves need it.
  with jax.enable_x64(True):
    results = {"mle": student_t_mle(config, workdir)}
    results["vi"] = logistic_vi(config, workdir)
  results["figures"] = ["mle_convergence.png", "vi_elbo.png"]
  logging.info("qblr results: %s", results)
  return train_lib.write_results(workdir, results)


if __name__ == "__main__":
  _cli.main(run)
