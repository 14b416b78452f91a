"""The Quartet scaling law with precision efficiencies, and its Huber fit.

  L(N, D) = (A / (N * effN)^alpha + B / (D * effD)^beta)^gamma + E

N is the non-embedding parameter count, D the training tokens. effN (the
forward pass's "parameter efficiency") and effD (the backward pass's "data
efficiency") are 1 for the high-precision baseline; a low-precision scheme is
worth effN * N parameters and effD * D tokens of the baseline. The paper fits
the base law (A, alpha, B, beta, E, gamma) on BF16 runs, then each scheme's
(effN, effD) with the base frozen, minimising a Huber loss (delta 1e-4) on
log L.

Everything here is jnp: the fit is L-BFGS (`optax.lbfgs`) run from a grid of
starting points at once (`vmap`), the best start kept; `bootstrap` refits on
resampled points (again vmapped) for the spread of the estimates.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669), section 4 and the
  authors' plots notebook (base fit A=1.2744e5, alpha=0.5785, B=4.6583e5,
  beta=0.5389, E=1.3408, gamma=0.2764; Quartet effN 0.658, effD 0.822).
"""

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

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


def _best(params, values):
  """The start with the lowest finite objective."""
  values = jnp.where(jnp.isfinite(values), values, jnp.inf)
  i = jnp.argmin(values)
  return jax.tree.map(lambda p: p[i], params), values[i]


def _base_starts(log_l_min: jax.Array) -> Law:
  """A grid of starting points (as Hoffmann et al. and the authors do)."""
  grid = list(
    itertools.product(
      (0.0, 5.0, 10.0),  # log A
      (0.3, 0.6, 1.0),  # alpha
      (0.0, 5.0, 10.0),  # log B
      (0.3, 0.6, 1.0),  # beta
      (0.3, 1.0),  # gamma
    )
  )
  g = jnp.asarray(grid, jnp.float32)
  # E starts a little below the smallest observed loss.
  e0 = jnp.log(jnp.maximum(jnp.exp(log_l_min) - 0.5, 1e-2))
  log_e = jnp.full(len(grid), e0, jnp.float32)
  return Law(g[:, 0], g[:, 1], g[:, 2], g[:, 3], log_e, g[:, 4])


def _points(n, d, loss_obs):
  """Checked points as float32 (n, d, log loss); raises ValueError naming the problem."""
  n, d, loss_obs = (np.asarray(v, np.float64) for v in (n, d, loss_obs))
  if not (n.shape == d.shape == loss_obs.shape) or n.ndim != 1:
    raise ValueError(
      f"n, d, loss must be 1-D and equally long; got shapes {n.shape}, "
      f"{d.shape}, {loss_obs.shape}"
    )
  if len(n) < 2:
    raise ValueError(f"need at least 2 points to fit; got {len(n)}")
  for name, v in (("n", n), ("d", d), ("loss", loss_obs)):
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
      raise ValueError(f"{name} must be finite and positive; got {v}")
  f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
  return f32(n), f32(d), jnp.log(f32(loss_obs))


def _multistart(objective, starts, steps: int):
  """L-BFGS from every start at once; the best (params, objective)."""
  params, values = jax.vmap(lambda s: _lbfgs(objective, s, steps))(starts)
  return _best(params, values)


def _fit_base_weighted(n, d, log_obs, weights, steps):
  def objective(law):
    return huber_objective(log_loss(law, n, d), log_obs, weights)

  return _multistart(objective, _base_starts(jnp.min(log_obs)), steps)


def _fit_eff_weighted(law, n, d, log_obs, weights, steps):
  grid = np.log(np.asarray([0.1, 0.5, 1.0, 2.0], np.float32))
  starts = jnp.asarray(list(itertools.product(grid, grid)), jnp.float32)

  def objective(log_eff):
    pred = log_loss(law, n, d, log_eff[0], log_eff[1])
    return huber_objective(pred, log_obs, weights)

  return _multistart(objective, starts, steps)


_fit_base_jit = jax.jit(_fit_base_weighted, static_argnums=4)
_fit_eff_jit = jax.jit(_fit_eff_weighted, static_argnums=5)


def fit_base(n, d, loss_obs, *, steps: int = 500) -> tuple[Law, float]:
  """Fits the base law to high-precision runs; returns (law, objective)."""
  n, d, log_obs = _points(n, d, loss_obs)
  if len(n) < 6:
    raise ValueError(
      f"the base law has 6 parameters; got {len(n)} points (need >= 6)"
    )
  law, value = _fit_base_jit(n, d, log_obs, jnp.ones(len(n)), steps)
  return law, float(value)


def fit_efficiency(
  law: Law, n, d, loss_obs, *, steps: int = 300
) -> tuple[float, float]:
  """Fits (effN, effD) of a low-precision scheme with the base law frozen."""
  n, d, log_obs = _points(n, d, loss_obs)
  log_eff, _ = _fit_eff_jit(law, n, d, log_obs, jnp.ones(len(n)), steps)
  return float(jnp.exp(log_eff[0])), float(jnp.exp(log_eff[1]))


def bootstrap(
  key: jax.Array,
  base_points,
  schemes: dict,
  *,
  samples: int = 64,
  base_steps: int = 300,
  eff_steps: int = 200,
) -> dict:
  """Spread of (effN, effD): refits base and efficiencies on resampled points.

  Each of `samples` replicates draws the base runs and every scheme's runs
  with replacement (as multinomial weights on the points), refits the base
  law once, then each scheme's efficiencies with that base frozen.

  Args:
    key: a PRNG key.
    base_points: (n, d, loss) of the high-precision runs, 1-D arrays.
    schemes: name -> (n, d, loss) of a low-precision scheme's runs.
    samples: bootstrap replicates.

  Returns:
    name -> {"eff_n": array [samples], "eff_d": array [samples]}.
  """
  base = _points(*base_points)
  points = {name: _points(*p) for name, p in schemes.items()}

  def weights(k, size):
    idx = jax.random.randint(k, (size,), 0, size)
    return jnp.zeros(size, jnp.float32).at[idx].add(1.0)

  def one(k):
    kb, *ks = jax.random.split(k, 1 + len(points))
    law, _ = _fit_base_weighted(*base, weights(kb, len(base[0])), base_steps)
    return {
      name: jnp.exp(
        _fit_eff_weighted(law, *p, weights(ki, len(p[0])), eff_steps)[0]
      )
      for ki, (name, p) in zip(ks, points.items())
    }

  effs = jax.device_get(jax.jit(jax.vmap(one))(jax.random.split(key, samples)))
  return {
    name: {"eff_n": e[:, 0], "eff_d": e[:, 1]} for name, e in effs.items()
  }
