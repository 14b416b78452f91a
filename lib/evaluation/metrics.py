"""Weighted group metrics, group-membership models, T_a(V) and the bootstrap.

Pfohl et al., "Understanding challenges to the interpretation of disaggregated
evaluations of algorithmic fairness", NeurIPS 2025 (spec:
extended_papers.md 3). Every metric takes sample weights (all ones = the
unweighted metric, exactly); the population-to-group statistic

  T_a(V) = metric(group a, unweighted) - metric(population, weights P(A=a|V))

is ~0 when group a's difference from the population is explained by a shift
in V (covariate shift for V = X, label shift for Y, score distribution for
R = logit of the score). Percentile-bootstrap intervals resample indices in
one vmapped call.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlog1py
from jax.scipy.special import xlogy

from lib.core import dtypes
from lib.core import errors

METRICS = (
  "log_loss",
  "auc",
  "label_rate",
  "recall",
  "specificity",
  "precision",
  "net_benefit",
)


def _wmean(v, w):
  return jnp.sum(w * v) / jnp.sum(w)


def tie_bounds(ps):
  """(lo, hi): for ascending scores ps, the slice of rows tied with each row."""
  return (
    jnp.searchsorted(ps, ps, side="left"),
    jnp.searchsorted(ps, ps, side="right"),
  )


def weighted_auc(p, y, w, presorted: bool = False, ties=None):
  """ROC-AUC with sample weights; ties count one half (exact for ties).

  presorted: p is already ascending (skips the sort; for many weightings of
  one score vector, sort once). ties: `tie_bounds(p)` of presorted scores,
  computed once for many weightings. Scores are ranked only: any finite
  real (a logit too); integer scores are cast to float32 (`_as_scores`).

  Raises (on concrete input; traced input is not checked):
    NonFiniteError: a NaN or infinite score or weight.
    ConfigError: a label other than 0 or 1, a negative weight.
  """
  _check_concrete(p, y, w, probabilities=False)
  p = _as_scores(p)
  y = y.astype(p.dtype)
  if presorted:
    ps, ys, ws = p, y, w
  else:
    order = jnp.argsort(p)
    ps, ys, ws = p[order], y[order], w[order]
  neg = jnp.concatenate([jnp.zeros(1, p.dtype), jnp.cumsum(ws * (1 - ys))])
  lo, hi = tie_bounds(ps) if ties is None or not presorted else ties
  below, tied = neg[lo], neg[hi] - neg[lo]
  pos_w = ws * ys
  return jnp.sum(pos_w * (below + 0.5 * tied)) / (
    jnp.sum(pos_w) * jnp.sum(ws * (1 - ys))
  )


def group_metrics(
  p, y, w=None, threshold: float = 0.5, presorted: bool = False, ties=None
) -> dict:
  """Every metric of scores p in (0, 1) against labels y, weights w.

  log_loss (nats), auc, label_rate, recall / specificity / precision at
  `threshold`, and net benefit NB = TPR p - FPR (1 - p) t / (1 - t), with p
  the (weighted) label rate and t the threshold. Integer scores (hard 0/1
  predictions) are cast to float32 (`_as_scores`), as float scores.

  Raises (on concrete input; traced input is not checked):
    NonFiniteError: a NaN or infinite score or weight.
    ConfigError: a score outside [0, 1] (a logit), a label other than 0 or
      1, a negative weight.
  """
  _check_concrete(p, y, w)
  p = _as_scores(p)
  w = jnp.ones_like(p) if w is None else w
  y = y.astype(p.dtype)
  eps = 1e-12
  pc = jnp.clip(p, eps, 1 - eps)
  # xlogy: a term of weight 0 is 0 even where its log is -inf (a score of
  # exactly 0 or 1: float32 rounds 1 - eps to 1), instead of 0 * inf = NaN.
  ce = -(xlogy(y, pc) + xlog1py(1 - y, -pc))
  pred = (p >= threshold).astype(p.dtype)
  tp, fp = jnp.sum(w * y * pred), jnp.sum(w * (1 - y) * pred)
  pos, neg = jnp.sum(w * y), jnp.sum(w * (1 - y))
  tpr, fpr = tp / pos, fp / neg
  prev = pos / (pos + neg)
  return {
    "log_loss": _wmean(ce, w),
    "auc": weighted_auc(p, y, w, presorted, ties),
    "label_rate": prev,
    "recall": tpr,
    "specificity": 1 - fpr,
    "precision": tp / (tp + fp),
    "net_benefit": tpr * prev - fpr * (1 - prev) * threshold / (1 - threshold),
  }


def calibration_in_the_large(p, y, w):
  """Weighted mean score minus weighted label rate (0 when calibrated)."""
  return _wmean(p, w) - _wmean(y.astype(p.dtype), w)


def polynomial_features(v, degree: int = 3):
  """[1, z, z^2, ..., z^degree] of the standardised 1-D variable v."""
  z = (v - jnp.mean(v)) / (jnp.std(v) + 1e-12)
  return jnp.stack([z**k for k in range(degree + 1)], axis=-1)


@functools.partial(jax.jit, static_argnames=("iters",))
def fit_logistic(features, y, w=None, l2: float = 1e-6, iters: int = 25):
  """Weighted logistic regression by Newton's method (IRLS); returns theta.

  P(y=1 | f) = sigmoid(f @ theta); a tiny ridge keeps separable data finite.
  Everything is computed in the features' dtype (y, w and the ridge are cast
  to it), so the loop carry keeps one dtype with or without jax_enable_x64;
  bfloat16/float16 features in float32 (the solve has no half-precision
  kernel), which is theta's dtype then.
  """
  dtype = dtypes.compute_dtype(features.dtype)
  features = features.astype(dtype)
  w = jnp.ones(features.shape[0], dtype) if w is None else w.astype(dtype)
  y = y.astype(dtype)
  d = features.shape[1]

  def step(_, theta):
    p = jax.nn.sigmoid(features @ theta)
    grad = features.T @ (w * (p - y)) + l2 * theta
    hess = (features * (w * p * (1 - p))[:, None]).T @ features
    return theta - jnp.linalg.solve(hess + l2 * jnp.eye(d, dtype=dtype), grad)

  return jax.lax.fori_loop(0, iters, step, jnp.zeros(d, dtype))


def predict_logistic(theta, features):
  """P(y = 1) = sigmoid(features @ theta), theta from `fit_logistic`."""
  return jax.nn.sigmoid(features @ theta)


# How P(A | V) models V: "binary" (an intercept and V) or "poly" (a
# polynomial of the standardised V).
GROUP_MODELS = ("binary", "poly")


def group_probability(
  v, a, kind: str, degree: int = 3, *, fit=None, folds: int = 0
):
  """P(A=1 | V) at the rows of v by logistic regression: V continuous
  ("poly") or "binary".

  Fitted on the same rows (in sample) by default; on other rows with
  `fit=(v_fit, a_fit)` (the official code fits P(A | X) and P(A | Y) on the
  training rows); or out of sample with `folds=K` (each of K contiguous
  blocks of rows predicted by a model fitted on the others, as sklearn's
  cross_val_predict; the official P(A | R)). Polynomial features are
  standardised over all the rows involved. Integer V (as `simulate` returns
  it) is cast to the default float dtype (float64 under jax_enable_x64),
  float V keeps its own.
  """
  errors.check(
    kind in GROUP_MODELS,
    errors.ConfigError,
    f"unknown group model kind {kind!r}; expected one of {GROUP_MODELS}",
  )
  errors.check(
    fit is None or not folds,
    errors.ConfigError,
    "group_probability takes fit= (other rows) or folds= (cross-fitting), "
    "not both",
  )

  def as_float(x):
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.floating):
      x = x.astype(jnp.result_type(float))
    return x

  v = as_float(v)
  n = v.shape[0]
  a = jnp.asarray(a)
  if fit is not None:
    v_all = jnp.concatenate([v, as_float(fit[0]).astype(v.dtype)])
    a_all = jnp.concatenate([jnp.zeros(n, a.dtype), jnp.asarray(fit[1])])
    w_all = jnp.concatenate([jnp.zeros(n), jnp.ones(len(fit[1]))])
  else:
    v_all, a_all, w_all = v, a, None
  if kind == "binary":
    f = jnp.stack([jnp.ones_like(v_all), v_all], axis=-1)
  else:
    f = polynomial_features(v_all, degree)
  if folds:
    block = (jnp.arange(n) * folds) // n  # contiguous folds, as KFold
    p = jnp.zeros(n, f.dtype)
    for k in range(folds):
      theta = fit_logistic(f, a_all, (block != k).astype(f.dtype))
      p = jnp.where(block == k, predict_logistic(theta, f), p)
    return p
  theta = fit_logistic(f, a_all, w_all)
  return predict_logistic(theta, f[:n])


def stable_weights(p_own, pi_own):
  """Stable (overlap) weights of Cai (2023), as in the official code.

  w_i = (1 - p_i) / (pi_a (1 - p_i) + (1 - pi_a) p_i), p_i = P(A = a_i | V)
  and pi_a the frequency of i's group. Without a shift (p_i = pi_a) this is
  the constant 1 / (2 pi_a).
  """
  return (1 - p_own) / (pi_own * (1 - p_own) + (1 - pi_own) * p_own)


def importance_weights(p_group, pi_group):
  """P(A = a | V) / P(A = a): reweights the population towards group a."""
  return p_group / pi_group


def t_statistic(
  p,
  y,
  a,
  group: int,
  p_group_given_v,
  threshold=0.5,
  presorted=False,
  ties=None,
  counts=None,
  own=None,
) -> dict:
  """T_a(V) for every metric: group a (unweighted) - population weighted.

  Pfohl et al. (NeurIPS 2025, section 4): T_a(V) = metric(rows of group a)
  - metric(all rows, weights P(A = a | V)); ~0 when the group's difference
  from the population is explained by the shift in V. `counts` [n] (default
  ones) multiplies both weightings: a bootstrap resample's row multiplicity.
  `presorted` and `ties` as for `group_metrics` (scores sorted once).
  `own`: group a's metrics when the caller has them already (a bootstrap
  resample reports them as the group's own numbers and takes T_a(V) for
  three V): `group_metrics` with weights counts * [a == group]; skips the
  second evaluation of the group's term.
  """
  if own is None:
    in_a = (a == group).astype(p.dtype)
    if counts is not None:
      in_a = counts * in_a
    own = group_metrics(p, y, in_a, threshold, presorted, ties)
  if counts is not None:
    p_group_given_v = counts * p_group_given_v
  pop = group_metrics(p, y, p_group_given_v, threshold, presorted, ties)
  return {k: own[k] - pop[k] for k in own}


@functools.cache
def _compiled(statistic, by: str):
  """jit(statistic) and jit(map of statistic over resamples), per function."""

  def one_resample(i, args, n):
    if by == "counts":  # multiplicity of each row in this resample
      i = jnp.zeros(n, jnp.float32).at[i].add(1.0)
    return statistic(i, args)

  many = lambda idx, args: jax.lax.map(
    lambda i: one_resample(i, args, idx.shape[1]),
    idx,
    batch_size=min(25, idx.shape[0]),
  )
  return jax.jit(statistic), jax.jit(many)


def bootstrap(
  statistic, n: int, key, resamples: int, args=(), level=0.95, by="indices"
):
  """Percentile bootstrap of `statistic(rows, args)` (a dict of scalars).

  Each resample draws n row indices uniformly with replacement; all resamples
  run in one jitted call, in blocks of 25 (`lax.map(batch_size=)`, bounded
  memory). `by` says what `statistic` receives:
    "indices": the (n,) int32 drawn indices (the point estimate gets arange(n));
    "counts": the (n,) float32 multiplicity of each row in the resample (the
      point estimate gets ones). The same multiset as "indices", so the same
      percentile interval up to float rounding; a statistic written as a
      weighted sum over fixed, presorted rows then needs no per-resample
      gather or sort (the AUC's sort is the expensive part on CPU).
  Pass a module-level `statistic` and its arrays in `args` so that repeated
  calls with equal shapes reuse one compilation.
  Returns {name: {"mean": on all rows, "lo", "hi"}}.
  """
  errors.check(
    resamples >= 2, errors.ConfigError, f"need >= 2 resamples, got {resamples}"
  )
  errors.check(
    by in ("indices", "counts"),
    errors.ConfigError,
    f"bootstrap by={by!r}: expected 'indices' or 'counts'",
  )
  errors.check(
    0.0 < level < 1.0,
    errors.ConfigError,
    f"bootstrap level={level!r}: a coverage in (0, 1), e.g. 0.95",
  )
  one, many = _compiled(statistic, by)
  point = one(
    jnp.arange(n) if by == "indices" else jnp.ones(n, jnp.float32), args
  )
  idx = jax.random.randint(key, (resamples, n), 0, n)
  draws = many(idx, args)
  q = 100 * (1 - level) / 2
  out = {}
  for k, v in draws.items():
    v = np.asarray(v)
    # A metric undefined in every resample (precision with no predicted
    # positive: 0 / 0) has no interval: NaN, said once by the point estimate.
    lo = hi = float("nan")
    if not np.isnan(v).all():
      lo, hi = np.nanpercentile(v, q), np.nanpercentile(v, 100 - q)
    out[k] = {"mean": float(point[k]), "lo": float(lo), "hi": float(hi)}
  return out


def _check_scores(p, probabilities: bool = True) -> None:
  """NonFiniteError for a NaN or infinite score; with `probabilities`,
  ConfigError for one outside [0, 1] (logits)."""
  p = np.asarray(p)
  errors.check(
    bool(np.all(np.isfinite(p))),
    errors.NonFiniteError,
    f"{int(np.sum(~np.isfinite(p)))} scores are not finite",
  )
  if not probabilities:
    return
  outside = (p < 0) | (p > 1)
  errors.check(
    not bool(np.any(outside)),
    errors.ConfigError,
    f"{int(np.sum(outside))} scores are not probabilities in [0, 1] (first: "
    f"{p[outside][0] if outside.any() else None}); logits? pass "
    "1 / (1 + exp(-logit))",
  )


def _check_labels(y) -> None:
  """ConfigError for a label other than 0 or 1."""
  y = np.asarray(y)
  binary = (y == 0) | (y == 1)
  errors.check(
    bool(np.all(binary)),
    errors.ConfigError,
    f"{int(np.sum(~binary))} labels are not 0 or 1 (first: "
    f"{y[~binary][0] if (~binary).any() else None})",
  )


def _check_weights(w) -> None:
  """NonFiniteError / ConfigError for a NaN, infinite or negative weight."""
  w = np.asarray(w)
  errors.check(
    bool(np.all(np.isfinite(w))),
    errors.NonFiniteError,
    f"{int(np.sum(~np.isfinite(w)))} weights are NaN or infinite",
  )
  errors.check(
    bool(np.all(w >= 0)),
    errors.ConfigError,
    f"{int(np.sum(w < 0))} weights are negative",
  )


def _check_concrete(p=None, y=None, w=None, probabilities=True) -> None:
  """The value checks of the arguments that are concrete (not traced)."""
  if p is not None and errors.is_concrete(p):
    _check_scores(p, probabilities)
  if y is not None and errors.is_concrete(y):
    _check_labels(y)
  if w is not None and errors.is_concrete(w):
    _check_weights(w)


def _as_scores(p):
  """Scores in the dtype metrics are computed in: at least float32
  (`dtypes.compute_dtype`), so that integer 0/1 predictions are clipped
  into (0, 1) and weigh as floats."""
  p = jnp.asarray(p)
  return p.astype(dtypes.compute_dtype(p.dtype))


def check_inputs(p, y, a, w=None) -> None:
  """One-line errors for input a disaggregated evaluation cannot use."""
  p, y, a = np.asarray(p), np.asarray(y), np.asarray(a)
  errors.check(
    p.shape == y.shape == a.shape and p.ndim == 1,
    errors.ShapeError,
    f"scores, labels and groups must be 1-D of one length, got {p.shape}, "
    f"{y.shape}, {a.shape}",
  )
  _check_scores(p)
  _check_labels(y)
  for g in np.unique(a):
    classes = np.unique(y[a == g])
    errors.check(
      classes.size == 2,
      errors.ConfigError,
      f"group {g} has a single class ({classes.tolist()}): recall, "
      f"specificity and AUC are undefined for it",
    )
  if w is not None:
    _check_weights(w)
