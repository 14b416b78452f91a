"""The quotient natural gradient (QNG) as an optax transformation.

Params are natural parameters of the Normal-Gamma lift (`normal_gamma`), each
leaf an array (..., 4). One QNG step (paper §4, Alg. 1; spec C.1):

  1. g = F^-1 grad_lambda L(pi(lambda)) = grad_theta L (the lifted natural
     gradient, one 4x4 solve per coordinate);
  2. g_perp = g - k (k^T F g) / (k^T F k) (remove the vertical part);
  3. lambda <- lambda + s g_perp, with s halved until lambda stays in the
     Normal-Gamma domain (`guarded_step`).

Domain guard. A constant step can leave the domain (beta >= 0.5 leaves it at
step 1 on the Student-t MLE). The step is halved at most `max_halvings` times;
if even the smallest step is outside, it is rejected (lambda unchanged) and
counted in the state. `check_domain` turns a rejection into a `ConfigError`.
"""

import functools
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.core.errors import ConfigError
from lib.core.errors import DTypeError
from lib.core.errors import ShapeError
from lib.core.errors import is_concrete
from lib.optim.qblr import normal_gamma

Array = jax.Array


def guarded_step(
  lam,
  direction,
  step_size,
  *,
  max_halvings: int,
  in_domain=normal_gamma.in_domain,
):
  """lambda + s * direction, halving s until the result is in the domain.

  `lam` and `direction` are arrays or pytrees of one structure; `in_domain`
  tests a candidate (elementwise or as a whole): the Normal-Gamma domain by
  default, `normal_wishart.in_domain` for that lift.

  Returns:
    (new_lam, s, num_halvings, accepted). If the step is still outside after
    max_halvings halvings it is rejected: new_lam = lam, accepted = False.
  """
  step = lambda s: jax.tree.map(lambda a, d: a + s * d, lam, direction)

  def outside(s):
    return ~jnp.all(in_domain(step(s)))

  def cond(carry):
    s, n = carry
    return outside(s) & (n < max_halvings)

  def body(carry):
    s, n = carry
    return s / 2, n + 1

  s0 = jnp.asarray(step_size, jax.tree.leaves(lam)[0].dtype)
  s, n = jax.lax.while_loop(cond, body, (s0, jnp.zeros([], jnp.int32)))
  accepted = ~outside(s)
  new = jax.tree.map(lambda a, b: jnp.where(accepted, a, b), step(s), lam)
  return new, s, n, accepted


def rdog_step_size(max_dist, sum_sq, *, kl, sq_norm):
  """RDoG (Riemannian distance over gradients): (s_t, r_t, sum_t).

  sum_t = sum_{i <= t} |g_i|_F^2 adds the direction's squared Fisher norm
  `sq_norm`; r_t = max(r_{t-1}, sqrt(2 KL(lam_0 || lam_t))) with r_{-1} the
  initial distance eps (`kl` = KL(lam_0 || lam_t), the closed-form lifted
  KL); s_t = r_t / sqrt(sum_t). The paper's step-size rule for QBLR (§6:
  "RDoG using the closed-form lifted KL", eps 1e-3), the Riemannian form of
  DoG (Ivgi, Hinder & Carmon, ICML 2023).
  """
  sum_sq = sum_sq + sq_norm
  max_dist = jnp.maximum(max_dist, jnp.sqrt(2.0 * jnp.maximum(kl, 0.0)))
  s = max_dist / jnp.sqrt(sum_sq + jnp.finfo(sum_sq.dtype).tiny)
  return s, max_dist, sum_sq


class QNGLeafState(NamedTuple):
  """The state `qng` keeps for one leaf of the natural parameters."""

  num_halvings: Array  # int32: halvings used at the last step.
  num_rejected: Array  # int32: steps rejected so far (domain guard).
  first_rejected: Array  # int32: step of the first rejection, or -1.
  lam0: Array | None  # RDoG: initial natural parameters (None without RDoG).
  max_dist: Array | None  # RDoG: max_t sqrt(2 KL(lam0 || lam_t)).
  sum_sq: Array | None  # RDoG: sum of squared F-norms of the directions.


class QNGState(NamedTuple):
  """State of `qng`: the step count and a `QNGLeafState` per params leaf."""

  count: Array  # scalar int32: steps taken.
  leaves: Any  # the params tree with a QNGLeafState at every leaf.


class _LeafResult(NamedTuple):
  update: Array
  state: QNGLeafState


def _is_leaf_state(x) -> bool:
  return isinstance(x, QNGLeafState)


def _check_leaf(lam) -> None:
  if lam.shape[-1:] != (4,):
    raise ShapeError(
      "qng params are Normal-Gamma natural parameters with a last axis of 4 "
      f"(natural_from_student_t), got a leaf of shape {lam.shape}"
    )
  if lam.dtype not in (jnp.float32, jnp.float64):
    raise DTypeError(
      "qng solves a 4x4 Fisher system per coordinate, which jax does in "
      f"float32 or float64 only: got natural parameters of dtype {lam.dtype}"
    )


def qng(
  learning_rate: optax.ScalarOrSchedule | None = None,
  *,
  project_horizontal: bool = True,
  rdog: bool = False,
  rdog_eps: float = 1e-3,
  max_halvings: int = 20,
) -> optax.GradientTransformation:
  """Quotient natural gradient on Normal-Gamma natural parameters.

  `updates` are the Euclidean gradients of a loss to *minimise* with respect
  to the natural parameters, e.g. jax.grad(lambda lm: -mean_loglik(x,
  project(lm))) (the Student-t MLE; `elbo` takes a `Posterior`:
  -elbo(student_t_posterior(project(lm)), key, log_joint, num_samples=n)).
  The returned update is -s * g_perp with g = F^-1 grad (the lifted natural
  gradient), g_perp its horizontal projection, and s the step size after the
  domain guard, so that optax.apply_updates lands inside the domain.

  Step sizes: a constant/scheduled `learning_rate`, or RDoG (Riemannian
  distance over gradients, `rdog=True`): s_t = r_t / sqrt(sum_i |g_i|_F^2)
  with r_t = max(rdog_eps, max_i sqrt(2 KL(lam_0 || lam_i))), using the
  closed-form lifted KL; s_t, r_t and the sum are per params leaf (a (d, 4)
  mean-field leaf gets one step size for all its d coordinates). RDoG is
  fibre-invariant because the fibre action is a reparameterisation of tau,
  under which KL and the F-norm are invariant.

  Args:
    learning_rate: constant or schedule; required unless rdog.
    project_horizontal: remove the vertical component (QBLR). False gives the
      plain lifted natural gradient (drifts along fibres under noise).
    rdog: use RDoG step sizes instead of learning_rate.
    rdog_eps: initial distance of RDoG.
    max_halvings: domain guard budget per step.

  Returns:
    An optax GradientTransformation with state `QNGState`.
  """
  if rdog == (learning_rate is not None):
    raise ConfigError("qng needs exactly one of learning_rate or rdog=True")
  # optax.inject_hyperparams passes max_halvings as a (traced) array.
  if is_concrete(max_halvings) and max_halvings < 0:
    raise ConfigError(f"max_halvings must be >= 0, got {max_halvings}")

  def init_leaf(lam) -> QNGLeafState:
    lam = jnp.asarray(lam)
    _check_leaf(lam)
    zero = jnp.zeros([], jnp.int32)
    rdog_fields = (None, None, None)
    if rdog:
      rdog_fields = (
        lam,
        jnp.asarray(rdog_eps, lam.dtype),
        jnp.zeros([], lam.dtype),
      )
    return QNGLeafState(zero, zero, -jnp.ones([], jnp.int32), *rdog_fields)

  def init_fn(params):
    return QNGState(jnp.zeros([], jnp.int32), jax.tree.map(init_leaf, params))

  def update_leaf(grad, lam, leaf: QNGLeafState, count) -> _LeafResult:
    _check_leaf(lam)
    if grad.shape != lam.shape:
      raise ShapeError(
        f"qng: a gradient of shape {grad.shape} for natural parameters of "
        f"shape {lam.shape}"
      )
    f = normal_gamma.fisher(lam)
    g = -jnp.linalg.solve(f, grad[..., None])[..., 0]  # ascent direction
    if project_horizontal:
      g = normal_gamma.horizontal_project(g, lam, f)
    max_dist, sum_sq = leaf.max_dist, leaf.sum_sq
    if rdog:
      s, max_dist, sum_sq = rdog_step_size(
        max_dist,
        sum_sq,
        kl=normal_gamma.lifted_kl(leaf.lam0, lam),
        sq_norm=jnp.sum(g * jnp.einsum("...ij,...j->...i", f, g)),
      )
    else:
      lr = learning_rate(count) if callable(learning_rate) else learning_rate
      s = jnp.asarray(lr, lam.dtype)
    new, _, halvings, ok = guarded_step(lam, g, s, max_halvings=max_halvings)
    rejected = ~ok
    state = QNGLeafState(
      num_halvings=halvings,
      num_rejected=leaf.num_rejected + rejected.astype(jnp.int32),
      first_rejected=jnp.where(
        (leaf.first_rejected < 0) & rejected, count, leaf.first_rejected
      ),
      lam0=leaf.lam0,
      max_dist=max_dist,
      sum_sq=sum_sq,
    )
    return _LeafResult(new - lam, state)

  def update_fn(updates, state, params=None):
    if params is None:
      raise ConfigError("qng needs params (the natural parameters)")
    step = functools.partial(update_leaf, count=state.count)
    # `updates` fixes the leaves; params and state.leaves share its structure
    # (a QNGLeafState sits where updates has an array).
    out = jax.tree.map(step, updates, params, state.leaves)
    new_updates = jax.tree.map(lambda _, o: o.update, updates, out)
    new_leaves = jax.tree.map(lambda _, o: o.state, updates, out)
    return new_updates, QNGState(optax.safe_increment(state.count), new_leaves)

  return optax.GradientTransformation(init_fn, update_fn)


def _leaf_states(state: QNGState) -> list[QNGLeafState]:
  return jax.tree.leaves(state.leaves, is_leaf=_is_leaf_state)


def num_rejected(state: QNGState) -> Array:
  """Steps the domain guard rejected, summed over leaves (and over runs).

  Jittable, and on host (numpy) states it stays on the host: no program is
  compiled for a summary. For a vmapped stack of states, call it inside the
  vmap to get one count per run.
  """
  return sum(s.num_rejected.sum() for s in _leaf_states(state))


def check_domain(state: QNGState, *, learning_rate=None) -> None:
  """Raises ConfigError if the domain guard had to reject a step.

  Call it on the host after a (scanned) run of `qng`; a stacked state (a
  vmapped sweep) is checked as a whole.
  """
  leaves = _leaf_states(state)
  rejected = int(sum(np.asarray(s.num_rejected).sum() for s in leaves))
  if rejected:
    first = min(
      int(v)
      for s in leaves
      for v in np.asarray(s.first_rejected).ravel()
      if int(v) >= 0
    )
    raise ConfigError(
      f"QNG step size {learning_rate} left the Normal-Gamma domain even after "
      f"all halvings in {rejected} step(s), first at step {first}: reduce the "
      "step size or raise max_halvings"
    )
