"""The Quartet scaling law with precision efficiencies, and its Huber fit.

  L(N, D) = (A / (N * effN)^alpha + B / (D * effD)^beta)^gamma + E

N is the non-embedding parameter count, D the training tokens. effN (the
forward pass's "parameter efficiency") and effD (the backward pass's "data
efficiency") are 1 for the high-precision baseline; a low-precision scheme is
worth effN * N parameters and effD * D tokens of the baseline. The paper fits
the base law (A, alpha, B, beta, E, gamma) on BF16 runs, then each scheme's
(effN, effD) with the base frozen, minimising a Huber loss (delta 1e-4) on
log L.

The fit stays in the physical region by construction: it optimises
unconstrained coordinates theta = (log A, log alpha, log B, log beta, log E
[, logit gamma]), so A, B, E > 0 and alpha, beta > 0, and gamma lies in
`gamma_range` (lo == hi fixes it; the default fixes the paper's 0.2764).
L-BFGS (`optax.lbfgs`) runs from a grid of starts at once (`vmap`), the best
start kept.

`fit` returns the point estimate and its bootstrap in one vmapped call: the
point is replicate 0 (unit weights) of the very estimator the replicates
run, so point and band cannot disagree by construction of the code. A band
(`log_band`) is the union of the bootstrap percentile interval and the
normal interval exp(log point +- z sd) of the log replicates: it always holds
its own point, and it is at least as wide as either interval (conservative).
`identifiability` reports how well the data pin the base law down (the
Gauss-Newton sensitivity of log L to the log parameters).

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669), section 4 and the
  authors' plots notebook (base fit A=1.2744e5, alpha=0.5785, B=4.6583e5,
  beta=0.5389, E=1.3408, gamma=0.2764; Quartet effN 0.658, effD 0.822).
  Efron & Tibshirani, "An Introduction to the Bootstrap" (1993), ch. 12-13
  (normal and percentile bootstrap intervals).
"""

import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.core import errors

HUBER_DELTA = 1e-4


class Law(NamedTuple):
  """Base-law parameters in log form: A = exp(log_a), B = exp(log_b), E = exp(log_e)."""

  log_a: jax.Array
  alpha: jax.Array
  log_b: jax.Array
  beta: jax.Array
  log_e: jax.Array
  gamma: jax.Array

  @classmethod
  def from_values(cls, a, alpha, b, beta, e, gamma) -> "Law":
    f = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    return cls(
      f(np.log(a)), f(alpha), f(np.log(b)), f(beta), f(np.log(e)), f(gamma)
    )

  def values(self) -> dict:
    """A, alpha, B, beta, E, gamma as Python floats."""
    exp = lambda v: float(np.exp(np.float64(v)))  # noqa: E731  (f64: A, B can be huge)
    return {
      "A": exp(self.log_a),
      "alpha": float(self.alpha),
      "B": exp(self.log_b),
      "beta": float(self.beta),
      "E": exp(self.log_e),
      "gamma": float(self.gamma),
    }


# The authors' BF16 fit on C4 (plots notebook): a reference point, not ours.
PAPER_BASE = dict(
  a=1.2744e5, alpha=0.5785, b=4.6583e5, beta=0.5389, e=1.3408, gamma=0.2764
)
# gamma fixed at the paper's value: the default (lo == hi fixes it).
PAPER_GAMMA_RANGE = (PAPER_BASE["gamma"], PAPER_BASE["gamma"])
BASE_NAMES = ("log_A", "log_alpha", "log_B", "log_beta", "log_E", "log_gamma")


def log_loss(law: Law, n, d, log_eff_n=0.0, log_eff_d=0.0):
  """log L(N, D) of the law; eff in log form (0 = the baseline's precision)."""
  log_n = jnp.log(jnp.asarray(n, jnp.float32)) + log_eff_n
  log_d = jnp.log(jnp.asarray(d, jnp.float32)) + log_eff_d
  inner = jnp.logaddexp(
    law.log_a - law.alpha * log_n, law.log_b - law.beta * log_d
  )
  return jnp.logaddexp(law.gamma * inner, law.log_e)


def loss(law: Law, n, d, eff_n=1.0, eff_d=1.0):
  """L(N, D) of the law."""
  return jnp.exp(log_loss(law, n, d, jnp.log(eff_n), jnp.log(eff_d)))


def huber_objective(log_pred, log_obs, weights=None, delta=HUBER_DELTA):
  """Sum of Huber losses of log-loss residuals (the paper's fit objective)."""
  h = optax.losses.huber_loss(log_pred, log_obs, delta=delta)
  return jnp.sum(h if weights is None else weights * h)


# ---------------------------------------------------------------------------
# Constrained parameterisation.
# ---------------------------------------------------------------------------


def check_gamma_range(gamma_range) -> tuple[float, float]:
  """(lo, hi) with 0 < lo <= hi finite; ConfigError naming the problem."""
  try:
    lo, hi = (float(v) for v in gamma_range)
  except (TypeError, ValueError):
    raise errors.ConfigError(
      f"gamma_range must be a pair (lo, hi); got {gamma_range!r}"
    ) from None
  if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo <= hi):
    raise errors.ConfigError(
      f"gamma_range {gamma_range!r} must satisfy 0 < lo <= hi (lo == hi "
      "fixes gamma)"
    )
  return lo, hi


def _free_gamma(gamma_range) -> bool:
  return gamma_range[1] > gamma_range[0]


def _law(theta: jax.Array, gamma_range) -> Law:
  """Unconstrained theta -> a Law in the physical region."""
  lo, hi = gamma_range
  if _free_gamma(gamma_range):
    gamma = lo + (hi - lo) * jax.nn.sigmoid(theta[5])
  else:
    gamma = jnp.asarray(lo, jnp.float32)
  return Law(
    theta[0], jnp.exp(theta[1]), theta[2], jnp.exp(theta[3]), theta[4], gamma
  )


def _log_params(law: Law, free_gamma: bool) -> jax.Array:
  """The identifiability coordinates: log A, log alpha, log B, log beta, log E[, log gamma]."""
  p = [law.log_a, jnp.log(law.alpha), law.log_b, jnp.log(law.beta), law.log_e]
  if free_gamma:
    p.append(jnp.log(law.gamma))
  return jnp.stack([jnp.asarray(v, jnp.float32) for v in p])


def _law_from_log_params(phi: jax.Array, gamma) -> Law:
  g = jnp.exp(phi[5]) if phi.shape[0] > 5 else gamma
  return Law(phi[0], jnp.exp(phi[1]), phi[2], jnp.exp(phi[3]), phi[4], g)


# ---------------------------------------------------------------------------
# L-BFGS from many starts.
# ---------------------------------------------------------------------------


def _lbfgs(objective, init, steps: int):
  """Minimises `objective` from `init` with a fixed number of L-BFGS steps."""
  opt = optax.lbfgs()
  value_and_grad = optax.value_and_grad_from_state(objective)

  def step(carry, _):
    params, state = carry
    value, grad = value_and_grad(params, state=state)
    updates, state = opt.update(
      grad, state, params, value=value, grad=grad, value_fn=objective
    )
    return (optax.apply_updates(params, updates), state), None

  (params, _), _ = jax.lax.scan(step, (init, opt.init(init)), None, steps)
  return params, objective(params)


def _multistart(objective, starts, steps: int):
  """L-BFGS from every start at once; the best (params, objective)."""
  params, values = jax.vmap(lambda s: _lbfgs(objective, s, steps))(starts)
  values = jnp.where(jnp.isfinite(values), values, jnp.inf)
  i = jnp.argmin(values)
  return params[i], values[i]


def _base_starts(log_l_min: jax.Array, gamma_range) -> jax.Array:
  """A grid of starts in theta (as Hoffmann et al. and the authors do)."""
  rows = itertools.product(
    (0.0, 5.0, 10.0),  # log A
    np.log((0.3, 0.6, 1.0)),  # log alpha
    (0.0, 5.0, 10.0),  # log B
    np.log((0.3, 0.6, 1.0)),  # log beta
    (-1.1, 1.1) if _free_gamma(gamma_range) else (0.0,),  # logit gamma
  )
  g = jnp.asarray(list(rows), jnp.float32)
  # E starts a little below the smallest observed loss.
  e0 = jnp.log(jnp.maximum(jnp.exp(log_l_min) - 0.5, 1e-2))
  log_e = jnp.full(g.shape[0], e0, jnp.float32)
  cols = [g[:, 0], g[:, 1], g[:, 2], g[:, 3], log_e]
  if _free_gamma(gamma_range):
    cols.append(g[:, 4])
  return jnp.stack(cols, axis=1)


def _fit_base_theta(n, d, log_obs, weights, steps, gamma_range):
  def objective(theta):
    pred = log_loss(_law(theta, gamma_range), n, d)
    return huber_objective(pred, log_obs, weights)

  log_l_min = jnp.min(jnp.where(weights > 0, log_obs, jnp.inf))
  return _multistart(objective, _base_starts(log_l_min, gamma_range), steps)


def _fit_eff(law, n, d, log_obs, weights, steps):
  grid = np.log(np.asarray([0.1, 0.5, 1.0, 2.0], np.float32))
  starts = jnp.asarray(list(itertools.product(grid, grid)), jnp.float32)

  def objective(log_eff):
    pred = log_loss(law, n, d, log_eff[0], log_eff[1])
    return huber_objective(pred, log_obs, weights)

  return _multistart(objective, starts, steps)


def _points(n, d, loss_obs):
  """Checked points as float32 (n, d, log loss); ShapeError naming the problem."""
  n, d, loss_obs = (np.asarray(v, np.float64) for v in (n, d, loss_obs))
  if not (n.shape == d.shape == loss_obs.shape) or n.ndim != 1:
    raise errors.ShapeError(
      f"n, d, loss must be 1-D and equally long; got shapes {n.shape}, "
      f"{d.shape}, {loss_obs.shape}"
    )
  if len(n) < 2:
    raise errors.ShapeError(f"need at least 2 points to fit; got {len(n)}")
  for name, v in (("n", n), ("d", d), ("loss", loss_obs)):
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
      raise errors.ShapeError(f"{name} must be finite and positive; got {v}")
  f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
  return f32(n), f32(d), jnp.log(f32(loss_obs))


def num_base_params(gamma_range=PAPER_GAMMA_RANGE) -> int:
  """Free parameters of the base law: A, alpha, B, beta, E, and gamma if free."""
  return 6 if _free_gamma(check_gamma_range(gamma_range)) else 5


def _check_base_points(points, gamma_range):
  p = num_base_params(gamma_range)
  if len(points[0]) < p:
    raise errors.ShapeError(
      f"the base law has {p} free parameters; got {len(points[0])} points "
      f"(need >= {p})"
    )


def fit_base(
  n, d, loss_obs, *, steps: int = 500, gamma_range=PAPER_GAMMA_RANGE
) -> tuple[Law, float]:
  """Fits the base law to high-precision runs; returns (law, objective)."""
  gamma_range = check_gamma_range(gamma_range)
  points = _points(n, d, loss_obs)
  _check_base_points(points, gamma_range)
  theta, value = _fit_base_jit(
    *points, jnp.ones(len(points[0])), steps, gamma_range
  )
  return _law(theta, gamma_range), float(value)


def fit_efficiency(
  law: Law, n, d, loss_obs, *, steps: int = 300
) -> tuple[float, float]:
  """Fits (effN, effD) of a low-precision scheme with the base law frozen."""
  n, d, log_obs = _points(n, d, loss_obs)
  log_eff, _ = _fit_eff_jit(law, n, d, log_obs, jnp.ones(len(n)), steps)
  return float(jnp.exp(log_eff[0])), float(jnp.exp(log_eff[1]))


_fit_base_jit = jax.jit(_fit_base_theta, static_argnums=(4, 5))
_fit_eff_jit = jax.jit(_fit_eff, static_argnums=5)


# ---------------------------------------------------------------------------
# Point estimate and bootstrap in one call.
# ---------------------------------------------------------------------------


def _fit_all(base, schemes, w_base, w_schemes, base_steps, eff_steps, gr):
  """One replicate: the base law on weighted base points, then every scheme."""
  theta, objective = _fit_base_theta(*base, w_base, base_steps, gr)
  law = _law(theta, gr)
  log_effs = [
    _fit_eff(law, *p, w, eff_steps)[0] for p, w in zip(schemes, w_schemes)
  ]
  log_effs = jnp.stack(log_effs) if log_effs else jnp.zeros((0, 2))
  return law, objective, log_effs


_fit_all_vmapped = jax.jit(
  jax.vmap(_fit_all, in_axes=(None, None, 0, 0, None, None, None)),
  static_argnums=(4, 5, 6),
)


def _multinomial(key, replicates: int, size: int) -> jax.Array:
  """[replicates, size] counts of `size` draws with replacement."""
  idx = jax.random.randint(key, (replicates, size), 0, size)
  return jax.vmap(lambda i: jnp.zeros(size).at[i].add(1.0))(idx)


def fit(
  base_points,
  schemes: dict,
  *,
  key: jax.Array,
  samples: int = 64,
  base_steps: int = 500,
  eff_steps: int = 300,
  gamma_range=PAPER_GAMMA_RANGE,
) -> dict:
  """The base law and every scheme's (effN, effD), point and bootstrap.

  Replicate 0 is the point estimate (unit weights); replicates 1..samples
  resample the points with replacement (multinomial weights) and rerun the
  same estimator: base law, then each scheme's efficiencies with that base
  frozen. A scheme whose (n, d) equal the base's point for point is paired:
  it reuses the base's weights (the same (N, D) cells are drawn for both),
  else it is resampled independently.

  Args:
    base_points: (n, d, loss) of the high-precision runs, 1-D arrays.
    schemes: name -> (n, d, loss) of a low-precision scheme's runs.
    key: PRNG key of the resampling.
    samples: bootstrap replicates (0: point estimate only).
    base_steps, eff_steps: L-BFGS steps of each multi-start fit.
    gamma_range: (lo, hi) of gamma; lo == hi fixes it.

  Returns:
    {"law": the point Law, "objective": its Huber objective,
     "eff": name -> (effN, effD) point, "paired": name -> bool,
     "boot_law": Law with leading axis [samples],
     "boot_eff": name -> {"eff_n": [samples], "eff_d": [samples]}}.
  """
  gamma_range = check_gamma_range(gamma_range)
  base = _points(*base_points)
  _check_base_points(base, gamma_range)
  names = list(schemes)
  pts = [_points(*schemes[m]) for m in names]
  size = len(base[0])
  k_base, *k_schemes = jax.random.split(key, 1 + len(names))
  w_base = jnp.concatenate(
    [jnp.ones((1, size)), _multinomial(k_base, samples, size)]
  )
  paired, w_schemes = {}, []
  for name, p, k in zip(names, pts, k_schemes):
    paired[name] = bool(
      len(p[0]) == size
      and np.array_equal(np.asarray(p[0]), np.asarray(base[0]))
      and np.array_equal(np.asarray(p[1]), np.asarray(base[1]))
    )
    w = w_base
    if not paired[name]:
      m = len(p[0])
      w = jnp.concatenate([jnp.ones((1, m)), _multinomial(k, samples, m)])
    w_schemes.append(w)
  law, objective, log_effs = jax.device_get(
    _fit_all_vmapped(
      base,
      pts,
      w_base,
      w_schemes,
      base_steps,
      eff_steps,
      gamma_range,
    )
  )
  effs = np.exp(np.asarray(log_effs, np.float64))  # [1 + samples, schemes, 2]
  return {
    "law": jax.tree.map(lambda v: jnp.asarray(v[0]), law),
    "objective": float(objective[0]),
    "eff": {
      m: (float(effs[0, i, 0]), float(effs[0, i, 1]))
      for i, m in enumerate(names)
    },
    "paired": paired,
    "boot_law": jax.tree.map(lambda v: np.asarray(v[1:]), law),
    "boot_eff": {
      m: {"eff_n": effs[1:, i, 0], "eff_d": effs[1:, i, 1]}
      for i, m in enumerate(names)
    },
  }


def log_band(point: float, replicates, level: float = 0.95) -> dict:
  """A band around `point` from bootstrap replicates of a positive quantity.

  The union of the percentile interval of the replicates and the normal
  interval exp(log point +- z sd) on the log scale (z the normal quantile
  of `level`, sd a robust spread of the log replicates: the 16th-84th
  percentile half-width). It always holds its own point (the normal part is
  centred on it) and is at least as wide as the percentile interval, so a
  biased or skewed bootstrap widens the band instead of leaving the point
  outside it.

  Returns:
    {"lo", "hi", "log_sd", "median", "failed"}: `failed` counts replicates
    that are not finite and positive (left out of the quantiles; with more
    than half failed, the band is (0, inf)).
  """
  import scipy.stats  # noqa: PLC0415  (host-side only)

  r = np.asarray(replicates, np.float64)
  ok = np.isfinite(r) & (r > 0)
  failed = int(np.sum(~ok))
  if not (math.isfinite(point) and point > 0) or ok.sum() < max(2, r.size / 2):
    return {
      "lo": 0.0,
      "hi": math.inf,
      "log_sd": math.inf,
      "median": float(np.median(r[ok])) if ok.any() else math.nan,
      "failed": failed,
    }
  logs = np.log(r[ok])
  tail = 100 * (1 - level) / 2
  p_lo, p_hi = np.exp(np.percentile(logs, (tail, 100 - tail)))
  p16, p84 = np.percentile(logs, (16, 84))
  sd = (p84 - p16) / 2
  z = float(scipy.stats.norm.ppf(0.5 + level / 2))
  n_lo, n_hi = point * math.exp(-z * sd), point * math.exp(z * sd)
  return {
    "lo": float(min(p_lo, n_lo, point)),
    "hi": float(max(p_hi, n_hi, point)),
    "log_sd": float(sd),
    "median": float(np.exp(np.median(logs))),
    "failed": failed,
  }


def identifiability(law: Law, n, d, loss_obs, *, free_gamma: bool) -> dict:
  """How well the base points pin down the law, at the fitted optimum.

  The Huber objective (delta 1e-4) is linear in residuals beyond 1e-4, so its
  Hessian carries no curvature information there; the Gauss-Newton matrix
  J^T J, J = d log L_pred / d phi over the points, with phi = (log A,
  log alpha, log B, log beta, log E[, log gamma]), measures how much the
  predictions move per change of the log parameters. Reported:

    singular_values: of J / sqrt(m), m the number of points, largest first
      (rms change of log L per unit step in phi along each principal
      direction);
    condition_number: largest / smallest singular value;
    weakest_direction: the unit phi direction of the smallest one;
    weakest_se: Gauss-Newton standard error along it, sigma_res / s_min
      with sigma_res^2 = SSR / (m - p): > 1 means that combination of log
      parameters is not determined to within a factor e (not identified);
    se: per log parameter, sigma_res sqrt(diag (J^T J)^-1); directions with
      s < 1e-5 s_max (below float32 resolution) count as unidentified, and
      a parameter loading on one (|v| > 0.01) gets se = inf;
    exponent_se: the larger se of log alpha and log beta.
  """
  n, d, log_obs = _points(n, d, loss_obs)
  phi = _log_params(law, free_gamma)
  f = lambda p: log_loss(_law_from_log_params(p, law.gamma), n, d)  # noqa: E731
  jac = np.asarray(jax.jacfwd(f)(phi), np.float64)  # [points, p]
  resid = np.asarray(f(phi), np.float64) - np.asarray(log_obs, np.float64)
  m, p = jac.shape
  _, s, vt = np.linalg.svd(jac, full_matrices=False)
  sigma_res = math.sqrt(float(np.sum(resid**2)) / max(m - p, 1))
  s_min = float(s[-1])
  names = BASE_NAMES[:p]
  null = s < 1e-5 * s[0]
  var = np.sum(vt[~null] ** 2 / s[~null, None] ** 2, axis=0)
  se = sigma_res * np.sqrt(var)
  se[np.any(np.abs(vt[null]) > 0.01, axis=0)] = math.inf
  return {
    "param_space": ", ".join(names),
    "singular_values": [float(v) for v in s / math.sqrt(m)],
    "condition_number": float(s[0] / s_min) if s_min > 0 else math.inf,
    "weakest_direction": {k: float(v) for k, v in zip(names, vt[-1])},
    "weakest_se": sigma_res / s_min if s_min > 0 else math.inf,
    "se": {k: float(v) for k, v in zip(names, se)},
    "exponent_se": float(max(se[1], se[3])),
    "sigma_res": sigma_res,
  }
