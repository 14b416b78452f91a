"""The continual learners of the compact-memory paper: objective and task boundary.

Tasks t = 1..T arrive in turn. Each sequential method trains theta on task t
by minimising its `objective` with full-batch Adam, a fresh Adam per task (the
four-moons notebook's; the Split-CIFAR scripts take batches of 1024, one
batch for a task of at most 1024 points); at the end of the task
`task_boundary` stores what the method keeps of it, and theta_old <- theta.
The methods (ids are what a vmapped sweep passes as a traced per-member
setting; `task_boundary` also takes a Python int, and then runs the PPCA-EM
for compact only):

- replay: CE on the new task + CE of the stored raw points with their hard
  labels, (delta/2)||theta||^2 on the first task only (`replay_loss`);
- random_kprior: the K-prior on K class-balanced random points per task with
  unit weights, its L2 term towards 0 (the official baseline);
- random_kprior_anchored: the same, L2 towards theta_old (ours, a second
  baseline, anchored as the compact memory's K-prior is);
- compact: the K-prior on a memory fitted by PPCA-EM to the Hessian of the
  task's data and the old memory (Hessian matching, `update_memory`), started
  from the same random points or from the K points of largest beta.

Batch training on all tasks at once (`batch_loss`) is the upper bound.

References:
  Jung, Lee, Chen, Moellenhoff, Li, Lee, Khan, "How to Train Your Compact
  Memory", NeurIPS 2025 (arXiv 2511.09167), section 3 and the official
  scripts (team-approx-bayes/compact_memory_code).
"""

from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.continual.kprior import Memory
from lib.continual.kprior import cross_entropy_sum
from lib.continual.kprior import replay_loss
from lib.continual.kprior import task_loss
from lib.continual.memory import add_vectors
from lib.continual.memory import observed_rows
from lib.continual.memory import select_top_beta
from lib.continual.memory import tilde_rows
from lib.continual.memory import update_memory
from lib.core import errors

# random_kprior_weighted (ours): the anchored random K-prior whose K points
# each weigh N_t / K, the share of the task's N_t points it stands for (the
# official random K-prior keeps unit weights, while the compact memory's
# weights carry the task's data mass): what Hessian matching adds beyond
# weighting.
METHODS = (
  "replay",
  "random_kprior",
  "random_kprior_anchored",
  "random_kprior_weighted",
  "compact",
)
(
  REPLAY,
  RANDOM_KPRIOR,
  RANDOM_KPRIOR_ANCHORED,
  RANDOM_KPRIOR_WEIGHTED,
  COMPACT,
) = range(len(METHODS))


def objective(
  theta,
  method,
  theta_old,
  memory: Memory,
  mem_y,
  x,
  y,
  mask,
  *,
  delta,
  first,
  batch_size: int = 0,
):
  """Method `method`'s full-batch loss on a task (x, y; padding rows mask 0).

  Replay: `replay_loss` with the L2 term on the first task only. The K-prior
  methods: `task_loss`, CE / B + K_t(theta) / N with K_t's L2 term towards 0
  (random_kprior) or theta_old (the others). B is N, or with `batch_size`
  the Split-CIFAR scripts' divisor (`data_divisor`: 1024 for a task of at
  most 1024 points). `method`: a name in `METHODS` or its id, which may be
  traced (`method_id`).
  """
  method = method_id(method)
  n = jnp.sum(mask)
  replay = replay_loss(
    theta,
    x,
    y,
    memory.u,
    mem_y,
    memory.w,
    jnp.where(first, delta, 0.0),
    n,
    mask=mask,
    batch_size=batch_size,
  )
  center = jnp.where(method == RANDOM_KPRIOR, 0.0, theta_old)
  kp = task_loss(
    theta,
    x,
    y,
    theta_old,
    memory,
    delta,
    n,
    mask=mask,
    center=center,
    batch_size=batch_size,
  )
  return jnp.where(method == REPLAY, replay, kp)


def method_id(method):
  """`method` as an id into `METHODS`: a name ("replay", ...) maps to its
  index, a Python or numpy int in range stays; an integer array (a traced
  per-member id of a vmapped sweep) passes, its values checked where they
  are concrete. ConfigError, naming the allowed names, otherwise."""
  allowed = f"one of {METHODS} or an id in [0, {len(METHODS)})"
  if isinstance(method, str):
    errors.check(
      method in METHODS,
      errors.ConfigError,
      f"method={method!r} is not {allowed}",
    )
    return METHODS.index(method)
  if isinstance(method, (int, np.integer)) and not isinstance(method, bool):
    errors.check(
      0 <= method < len(METHODS),
      errors.ConfigError,
      f"method={int(method)} is not {allowed}",
    )
    return int(method)
  dtype = getattr(method, "dtype", None)
  errors.check(
    dtype is not None and jnp.issubdtype(dtype, jnp.integer),
    errors.ConfigError,
    f"method={method!r} is not {allowed}",
  )
  if errors.is_concrete(method):
    v = np.asarray(method)
    bad = v[(v < 0) | (v >= len(METHODS))]
    errors.check(
      bad.size == 0,
      errors.ConfigError,
      f"method={bad.ravel()[:1].tolist()} is not {allowed}",
    )
  return method


def _static(method) -> int | None:
  """A method id given as a Python (or numpy) int, or None if it is traced."""
  if isinstance(method, (int, np.integer)):
    return int(method)
  return None


def batch_loss(theta, x, y, mask, *, delta):
  """Joint training on every task: (sum CE + (delta/2)||theta||^2) / N."""
  ce = cross_entropy_sum(theta, x, y, mask)
  return (ce + 0.5 * delta * jnp.sum(theta**2)) / jnp.sum(mask)


class Trace(NamedTuple):
  """What `fixed_point_gap` measures of a task boundary's EM (Hessian matching).

  scatter: C = X^T X [d, d] of the observed rows (`observed_rows`); rows:
  the memory's tilde rows (`tilde_rows`) before and after the EM [2, M, d];
  em_steps: the EM steps run (fewer than `iters` where the "notebook"
  style stopped early; 0 where no EM ran).
  """

  scatter: jax.Array
  rows: jax.Array
  em_steps: jax.Array


def task_boundary(
  theta,
  method,
  memory: Memory,
  mem_y,
  x,
  y,
  mask,
  picks,
  pick_w,
  *,
  slot,
  top_beta: bool,
  iters: int,
  noise: float,
  eps: float,
  jitter: float,
  clamp: str,
  style: str = "script",
):
  """The memory `method` trains the next task with, after a task.

  The task's points `picks` (weights `pick_w`: 1 kept, 0 padding) go into
  slots [slot, slot + K) of the fixed-size memory. Replay and the random
  K-priors keep them as they are (unit weights, their labels in mem_y; the
  weighted random K-prior's weigh N_t / K each, N_t the task's points); the
  compact memory refines old + new vectors by PPCA-EM, starting from the
  picks or (`top_beta`, the four-moons notebook) the K points of largest
  beta; `style` is the EM's (`EM_STYLES`). Padding rows of x (mask 0)
  observe nothing. A traced `method` runs
  the EM whatever it is and selects; a name or a Python int runs it for
  compact only.

  Returns:
    (memory, mem_y, trace): the `Trace` of the compact memory's EM (zeros
    for a Python-int method other than compact, which runs no EM).
  """
  method = method_id(method)
  static = _static(method)
  if top_beta and static in (None, COMPACT):
    top = select_top_beta(theta, x, picks.shape[0], mask)
    picks = (
      top if static == COMPACT else jnp.where(method == COMPACT, top, picks)
    )
  init_u = x[picks]
  share = jnp.sum(mask) / jnp.maximum(jnp.sum(pick_w), 1.0)
  if static == RANDOM_KPRIOR_WEIGHTED:
    pick_w = pick_w * share
  elif static is None:
    pick_w = jnp.where(method == RANDOM_KPRIOR_WEIGHTED, pick_w * share, pick_w)
  raw = add_vectors(memory, init_u, pick_w, slot)
  mem_y = jax.lax.dynamic_update_slice_in_dim(mem_y, y[picks], slot, 0)
  if static is not None and static != COMPACT:
    d, dtype = x.shape[1], memory.u.dtype
    m = memory.u.shape[0]
    trace = Trace(
      jnp.zeros((d, d), dtype), jnp.zeros((2, m, d), dtype), jnp.asarray(0)
    )
    return raw, mem_y, trace
  x_obs = x * mask[:, None]
  em = dict(noise=noise, eps=eps, jitter=jitter, clamp=clamp, style=style)
  fitted, steps = update_memory(
    theta,
    x_obs,
    memory,
    init_u,
    pick_w,
    slot=slot,
    iters=iters,
    return_steps=True,
    **em,
  )
  obs = observed_rows(theta, x_obs, memory, eps, clamp)
  rows = jnp.stack([tilde_rows(theta, m, eps, clamp) for m in (raw, fitted)])
  trace = Trace(obs.T @ obs, rows, jnp.asarray(steps))
  if static == COMPACT:
    return fitted, mem_y, trace
  keep = jax.tree.map(
    lambda a, b: jnp.where(method == COMPACT, a, b), fitted, raw
  )
  return keep, mem_y, trace


class Learner(NamedTuple):
  """One sequential learner: the model, its optimizer and what it remembers.

  theta [d, C] (C = 1: the binary model); opt_state of the optax
  transformation it trains with; theta_old, the model after the previous
  task (0 before the first); the fixed-size memory (slots of weight 0
  unused) with its labels mem_y (used by replay); trace, the compact
  memory's EM at the latest task boundary.
  """

  theta: jax.Array
  opt_state: Any
  theta_old: jax.Array
  memory: Memory
  mem_y: jax.Array
  trace: "Trace"


def init_learner(theta, tx, slots: int) -> Learner:
  """A learner before the first task: no memory, theta_old = 0."""
  d, dtype = theta.shape[0], theta.dtype
  return Learner(
    theta,
    tx.init(theta),
    jnp.zeros_like(theta),
    Memory(jnp.zeros((slots, d), dtype), jnp.zeros(slots, dtype)),
    jnp.zeros(slots, jnp.int32),
    Trace(
      jnp.zeros((d, d), dtype),
      jnp.zeros((2, slots, d), dtype),
      jnp.asarray(0),
    ),
  )


def learner_step(
  learner: Learner, tx, x, y, mask, method, delta, first, batch_size: int = 0
):
  """One full-batch step of `tx` on `objective`: (learner, loss, grad);
  `first`: whether this is the first task (replay's L2 term); `batch_size`
  as for `objective`."""
  method = method_id(method)
  loss, grad = jax.value_and_grad(objective)(
    learner.theta,
    method,
    learner.theta_old,
    learner.memory,
    learner.mem_y,
    x,
    y,
    mask,
    delta=delta,
    first=first,
    batch_size=batch_size,
  )
  updates, opt_state = tx.update(grad, learner.opt_state, learner.theta)
  theta = optax.apply_updates(learner.theta, updates)
  return learner._replace(theta=theta, opt_state=opt_state), loss, grad


def end_task(
  learner: Learner, tx, x, y, mask, picks, pick_w, method, slot, **em
):
  """The end of a task: the new memory (`task_boundary`, same arguments),
  theta_old <- theta and a fresh optimizer state (the official scripts
  restart Adam for every task)."""
  memory, mem_y, trace = task_boundary(
    learner.theta,
    method,
    learner.memory,
    learner.mem_y,
    x,
    y,
    mask,
    picks,
    pick_w,
    slot=slot,
    **em,
  )
  theta = learner.theta
  return Learner(theta, tx.init(theta), theta, memory, mem_y, trace)


def init_theta(key, d: int, num_classes: int, dtype=None):
  """The official start: torch Linear's default U(-1/sqrt(d), 1/sqrt(d)).

  theta [d, num_classes]; num_classes 1 is the binary model (the four-moons
  notebook's `Linear(d, 1, bias=False)`, `kprior.logits`).

  `dtype` None is jax's default float: float64 under `jax.enable_x64` (as
  the official code and `compact_memory` run), float32 otherwise, without
  the truncation warning that asking for float64 without x64 gives.
  """
  if dtype is None:
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
  bound = 1.0 / np.sqrt(d)  # a Python float, as the official code
  return jax.random.uniform(key, (d, num_classes), dtype, -bound, bound)


def batch_step(learner: Learner, tx, x, y, mask, delta):
  """One full-batch step of `tx` on `batch_loss` over every task's rows
  (x [N, d], y [N], mask [N]): (learner, loss, grad); no memory is used."""
  loss, grad = jax.value_and_grad(batch_loss)(
    learner.theta, x, y, mask, delta=delta
  )
  updates, opt_state = tx.update(grad, learner.opt_state, learner.theta)
  theta = optax.apply_updates(learner.theta, updates)
  return learner._replace(theta=theta, opt_state=opt_state), loss, grad
