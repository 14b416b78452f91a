"""The compact-memory update: PPCA-EM Hessian matching (official code, read).

After training on task t (model theta), the memory is rebuilt by PPCA-EM
(`learning_memory_tilde_repr` in the official scripts):

1. Observed rows X: sqrt(beta(x_i)) x_i for the new task's inputs, and
   sqrt(w_k) sqrt(beta(u_k)) u_k for the existing memory, with
   beta(x) = sum_c p_c (1 - p_c), p = softmax(theta^T x), all at the
   current theta (the binary model: p (1 - p), p = sigmoid(theta^T x)).
   Two clamps (`BETA_CLAMPS`, eps = 1e-4): "probs", the Split-CIFAR
   script's, clips p to [eps, 1 - eps] for every row; "memory", the
   four-moons notebook's, leaves the new data's beta alone and floors only
   the memory's, beta(u) >= eps (there and in the un-transform).
2. Learnable vectors: the old memory plus K_new fresh vectors (weight 1), so
   the memory grows by K_new per task. Tilde form W = sqrt(w) sqrt(beta(u)) u.
3. EM iterations with noise variance sigma^2 (`emnoise`):
     S = W^T W / sigma^2 + I,  M = S^-1 W^T X / sigma^2,
     W <- (X M^T)(S^-1 + M M^T + 1e-6 I)^-1,
   then un-transform: divide each column by sqrt(beta) at the *previous*
   u_k; its norm is sqrt(w_k) and its direction the new u_k.

How a step's columns become the memory (`EM_STYLES`): "script" (the
Split-CIFAR script) stores the unit direction with weight norm^2 and runs all
`iters` steps; "notebook" (the four-moons notebook) floors the scale at 1,
scale = max(norm, 1), keeps u = column / scale (a column of norm < 1 as it
is, weight 1) with weight scale^2, and stops early: once the error
||U U^T - W^T W||_F (U: the new task's tilde rows only; W: the step's tilde
output, old and new vectors) rises above the previous step's at a step
>= `EARLY_STOP_FROM` (0-based), keeping that step's memory.

This is Tipping-Bishop PPCA-EM with the un-normalised scatter C = X^T X in
place of the sample covariance (one S^-1 where the textbook has N S^-1), so
with beta held fixed its fixed point is W W^T = U_K (Lambda_K(C) - sigma^2 I)
U_K^T, the rank-K truncated Hessian: Hessian matching (spec oracle 3).

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from lib.continual.kprior import Memory
from lib.continual.kprior import logits
from lib.core import dtypes
from lib.core import errors
from lib.core import linalg

# How beta is kept off zero: "probs" (Split-CIFAR script: p in [eps, 1 - eps]
# for data and memory) or "memory" (four-moons notebook: beta(u) >= eps for
# the memory only, the new data's beta unclamped).
BETA_CLAMPS = ("probs", "memory")

# How EM columns become the memory and when the EM stops (module docstring):
# "script" (Split-CIFAR script: unit u, w = norm^2, all iterations) or
# "notebook" (four-moons notebook: scale max(norm, 1), early stop).
EM_STYLES = ("script", "notebook")
# The notebook's early stop is checked from this (0-based) step on.
EARLY_STOP_FROM = 5


def beta(theta, x, eps: float = 1e-4):
  """Scalar Hessian factor per row: sum_c p_c (1 - p_c), p clamped to [eps, 1-eps].

  For the binary model (theta [d, 1], `kprior.logits`) it is the logistic
  loss's Hessian in its one logit, p (1 - p) with p = sigmoid(x^T theta)
  (the four-moons notebook's beta): half the two-class sum.
  """
  p = jnp.clip(jax.nn.softmax(logits(theta, x), axis=-1), eps, 1.0 - eps)
  b = jnp.sum(p * (1.0 - p), axis=-1)
  return b / 2 if theta.shape[-1] == 1 else b


def data_beta(theta, x, eps: float = 1e-4, clamp: str = "probs"):
  """beta of the new task's rows under `clamp` (see `BETA_CLAMPS`)."""
  errors.check_one_of(clamp, BETA_CLAMPS, "clamp")
  return beta(theta, x, eps if clamp == "probs" else 0.0)


def memory_beta(theta, u, eps: float = 1e-4, clamp: str = "probs"):
  """beta of memory vectors under `clamp` (see `BETA_CLAMPS`)."""
  errors.check_one_of(clamp, BETA_CLAMPS, "clamp")
  if clamp == "probs":
    return beta(theta, u, eps)
  return jnp.maximum(beta(theta, u, 0.0), eps)


def ppca_em_step(w, x, noise, jitter: float = 1e-6):
  """One EM step of the code's PPCA on columns: w [d, K], x [d, N] -> [d, K].

  bfloat16/float16 inputs are computed in float32 and returned in w's dtype.
  """
  if dtypes.is_half(w.dtype) or dtypes.is_half(x.dtype):
    f32 = lambda a: a.astype(jnp.float32)
    return ppca_em_step(f32(w), f32(x), noise, jitter).astype(w.dtype)
  k = w.shape[1]
  eye = jnp.eye(k, dtype=w.dtype)
  s = w.T @ w / noise + eye
  s_inv = linalg.inv(s)
  m = (s_inv @ w.T) @ x / noise  # [K, N] posterior means
  b = s_inv + m @ m.T + jitter * eye
  # (X M^T) B^-1, as a solve: B is symmetric.
  return linalg.solve(b, (x @ m.T).T).T


def observed_rows(
  theta, x_new, memory: Memory, eps: float = 1e-4, clamp: str = "probs"
):
  """X as rows [N + M, d]: sqrt(beta) x for new data, sqrt(w beta) u for memory."""
  new = jnp.sqrt(data_beta(theta, x_new, eps, clamp))[:, None] * x_new
  old = tilde_rows(theta, memory, eps, clamp)
  return jnp.concatenate([new, old], axis=0)


def tilde_rows(theta, memory: Memory, eps: float = 1e-4, clamp: str = "probs"):
  """The memory in tilde form, rows sqrt(w_k beta(u_k)) u_k [M, d].

  W W^T of these rows is the memory's Hessian sum_k w_k beta(u_k) u_k u_k^T,
  the quantity PPCA-EM matches to the data's (`fixed_point_gap`).
  """
  b = memory_beta(theta, memory.u, eps, clamp)
  return jnp.sqrt(memory.w * b)[:, None] * memory.u


def add_vectors(memory: Memory, init_u, init_w=None, slot=None) -> Memory:
  """The learnable memory of a task boundary: old vectors + K_new fresh ones.

  The fresh vectors (weights `init_w`, default 1) are appended, or, with
  `slot`, written over slots [slot, slot + K_new) of a fixed-size memory
  whose unused slots have weight 0, so that the memory keeps one shape
  inside a jitted loop over tasks (`slot` may be traced).
  """
  if init_w is None:
    init_w = jnp.ones(init_u.shape[:1], init_u.dtype)
  init_u = init_u.astype(memory.u.dtype)
  init_w = init_w.astype(memory.w.dtype)
  if slot is None:
    return Memory(
      jnp.concatenate([memory.u, init_u], axis=0),
      jnp.concatenate([memory.w, init_w], axis=0),
    )
  put = lambda a, v: jax.lax.dynamic_update_slice_in_dim(a, v, slot, 0)
  return Memory(put(memory.u, init_u), put(memory.w, init_w))


def update_memory(
  theta,
  x_new,
  memory: Memory,
  init_u,
  init_w=None,
  *,
  slot=None,
  iters: int,
  noise: float = 1e-4,
  eps: float = 1e-4,
  jitter: float = 1e-6,
  clamp: str = "probs",
  style: str = "script",
  return_steps: bool = False,
):
  """The memory after a task: old memory + init vectors, refined by PPCA-EM.

  Args:
    theta: the model after the task, [d, C].
    x_new: the task's inputs [N, d] (bias column included); padding rows
      must be zero (they then observe nothing).
    memory: the memory before the task (M vectors).
    init_u: K_new fresh vectors [K_new, d] (raw points; the code's start).
    init_w: their starting weights (default 1). A 0 marks a padding slot,
      which EM leaves at weight 0 (its W column stays exactly 0).
    slot: None appends the fresh vectors (M + K_new vectors); an index
      writes them over empty slots of a fixed-size memory (`add_vectors`).
    iters: EM iterations (`nmemupdate`); a plain jitted `fori_loop`.
    noise: sigma^2 (`emnoise`, default 1e-4); eps, clamp: beta's clamp
      (`BETA_CLAMPS`).
    style: "script" or "notebook" (`EM_STYLES`): how columns become (u, w)
      and whether the EM stops early (then `iters` is the cap).
    return_steps: also return the EM steps run (a scalar; `iters` for
      "script").

  Returns:
    The refined memory ("script": unit u and weights w = squared column
    norms; "notebook": see `refine_notebook`; slots of weight 0 keep their
    vector and weight 0), and with `return_steps` the steps run.
  """
  errors.check_one_of(style, EM_STYLES, "style")
  obs = observed_rows(theta, x_new, memory, eps, clamp)
  learnable = add_vectors(memory, init_u, init_w, slot)
  em = dict(iters=iters, noise=noise, eps=eps, jitter=jitter, clamp=clamp)
  if style == "notebook":
    new_rows = obs[: x_new.shape[0]]  # the new task's tilde rows only
    out, steps = refine_notebook(theta, obs, new_rows, learnable, **em)
  else:
    out, steps = refine(theta, obs, learnable, **em), jnp.asarray(iters)
  return (out, steps) if return_steps else out


def _em_step(theta, u, w, x, noise, eps, jitter, clamp):
  """One PPCA-EM step of the memory (u, w) against observed columns x [d, N]:
  (tilde output [M, d], sqrt(beta) [M] at the previous u, the code's order);
  the caller un-transforms tilde / sqrt(beta) its own way."""
  b = jnp.sqrt(memory_beta(theta, u, eps, clamp))
  cols = (jnp.sqrt(w) * b)[:, None] * u
  return ppca_em_step(cols.T, x, noise, jitter).T, b


def refine(
  theta,
  obs,
  memory: Memory,
  *,
  iters: int,
  noise: float = 1e-4,
  eps: float = 1e-4,
  jitter: float = 1e-6,
  clamp: str = "probs",
) -> Memory:
  """`iters` PPCA-EM steps of the learnable memory against observed rows.

  obs [N, d] (from `observed_rows`); each step forms W = sqrt(w beta(u)) u,
  takes one `ppca_em_step`, divides by sqrt(beta) at the previous u and
  splits the columns into norm^2 (weights) and direction (unit u). Slots of
  weight 0 keep weight 0 and their vector.
  """
  x = obs.T  # [d, N]

  def body(_, carry):
    u, w = carry
    tilde, b = _em_step(theta, u, w, x, noise, eps, jitter, clamp)
    new = tilde / b[:, None]
    norm = jnp.linalg.norm(new, axis=-1)
    safe = jnp.where(norm > 0, norm, 1.0)
    u = jnp.where((norm > 0)[:, None], new / safe[:, None], u)
    return u, norm**2

  u, w = jax.lax.fori_loop(0, iters, body, (memory.u, memory.w))
  return Memory(u, w)


def notebook_columns(new, u, active):
  """The notebook's (u, w) of un-transformed EM columns new [M, d].

  scale = max(||column||, 1): u = column / scale, w = scale^2, so a column
  of norm < 1 is kept as it is with weight 1 (the K-prior weighs u by w).
  Slots not `active` (weight 0: padding) keep their u and weight 0.
  """
  scale = jnp.maximum(jnp.linalg.norm(new, axis=-1), 1.0)
  u = jnp.where(active[:, None], new / scale[:, None], u)
  return u, jnp.where(active, scale**2, 0.0).astype(new.dtype)


def refine_notebook(
  theta,
  obs,
  new_rows,
  memory: Memory,
  *,
  iters: int,
  noise: float = 1e-4,
  eps: float = 1e-4,
  jitter: float = 1e-6,
  clamp: str = "memory",
):
  """The four-moons notebook's PPCA-EM: (memory, steps run).

  Each step is `refine`'s EM step (beta at the previous u), its columns
  split by `notebook_columns`; its error is ||U U^T - W^T W||_F with U the
  new task's tilde rows `new_rows` [N, d] only (not the old memory's rows
  of `obs`) and W the step's tilde output. From step `EARLY_STOP_FROM` on
  the EM stops at the first step whose error exceeds the previous step's,
  keeping that step's memory; at most `iters` steps. A `lax.while_loop`:
  jittable, and under vmap each member stops on its own.
  """
  x = obs.T  # [d, N]
  target = new_rows.T @ new_rows  # U U^T
  active = memory.w > 0

  def step(carry):
    u, w = carry
    tilde, b = _em_step(theta, u, w, x, noise, eps, jitter, clamp)
    u, w = notebook_columns(tilde / b[:, None], u, active)
    return (u, w), jnp.linalg.norm(target - tilde.T @ tilde)

  (u, w), steps = until_rise(step, (memory.u, memory.w), iters=iters)
  return Memory(u, w), steps


def until_rise(step, carry, *, iters: int, start: int = EARLY_STOP_FROM):
  """Runs `step` (carry -> (carry, error)) until its error rises.

  The notebook's stop: steps j = 0, 1, ... (at most `iters`); from j =
  `start` on, the loop ends after the first step whose error exceeds the
  previous step's (its running minimum: while it has not risen, the previous
  error is the smallest since step start - 1), keeping that step's carry.
  Returns (carry, steps run). A `lax.while_loop`: under vmap each member
  stops on its own (finished members' carries are left as they are).
  """

  def cond(state):
    j, _, _, stop = state
    return (j < iters) & jnp.logical_not(stop)

  def body(state):
    j, carry, prev, _ = state
    carry, err = step(carry)
    return j + 1, carry, err, (j >= start) & (err > prev)

  _, err0 = jax.eval_shape(step, carry)
  init = (jnp.asarray(0), carry, jnp.full(err0.shape, jnp.inf, err0.dtype))
  j, carry, _, _ = jax.lax.while_loop(cond, body, (*init, jnp.asarray(False)))
  return carry, j


class FixedPointGap(NamedTuple):
  """How far a memory is from PPCA-EM's fixed point (Hessian matching).

  max_angle: the largest principal angle (radians) between span(W) and the
    top-K eigenvectors U_K of C = X^T X; scale: trace(W^T W) /
    trace(Lambda_K - sigma^2)_+, 1 at the fixed point; rel_error:
    ||W W^T - U_K (Lambda_K - sigma^2)_+ U_K^T||_F / ||the same target||_F.
  """

  max_angle: jax.Array
  scale: jax.Array
  rel_error: jax.Array


def fixed_point_gap(scatter, cols, noise) -> FixedPointGap:
  """Compares tilde memory rows with the truncated eigendecomposition of C.

  The code's PPCA-EM (beta held fixed) converges to W W^T =
  U_K (Lambda_K(C) - sigma^2 I) U_K^T, C = X^T X (module docstring); this
  measures how far a memory is from it. Jittable: K = the number of non-zero
  rows of `cols` (empty slots are zero rows), capped at d; the K rows are
  assumed linearly independent.

  Args:
    scatter: C = X^T X [d, d] of the observed rows X (`observed_rows`).
    cols: the memory's tilde rows sqrt(w_k beta(u_k)) u_k [M, d].
    noise: sigma^2.
  """
  d = scatter.shape[0]
  lam, vecs = linalg.eigh(scatter)
  lam, vecs = lam[::-1], vecs[:, ::-1]  # descending
  k = jnp.minimum(jnp.sum(jnp.any(cols != 0, axis=1)), d)
  top = (jnp.arange(d) < k).astype(scatter.dtype)
  gain = jnp.maximum(lam - noise, 0.0) * top
  target = (vecs * gain) @ vecs.T
  ww = cols.T @ cols
  # span(W): the top-K eigenvectors of W W^T; sin of the largest principal
  # angle = ||(I - U_K U_K^T) Q_W||_2 (accurate for small angles).
  _, q = linalg.eigh(ww)
  q = q[:, ::-1] * top
  u_k = vecs * top
  resid = q - u_k @ (u_k.T @ q)
  sin_max = linalg.spectral_norm(resid)
  return FixedPointGap(
    max_angle=jnp.arcsin(jnp.minimum(sin_max, 1.0)),
    scale=jnp.trace(ww) / jnp.sum(gain),
    rel_error=jnp.linalg.norm(ww - target) / jnp.linalg.norm(target),
  )


def select_balanced(rng: np.random.Generator, y, k: int) -> np.ndarray:
  """Indices of k random points, balanced over the classes present in y.

  The code takes k // n_classes per class; we hand the remainder to randomly
  chosen classes so that exactly k points are kept (inferred, so that memory
  sizes like 5 with 2 classes keep 5 points).
  """
  y = np.asarray(y)
  classes = np.unique(y)
  per = np.full(len(classes), k // len(classes))
  per[rng.permutation(len(classes))[: k % len(classes)]] += 1
  chosen = []
  for c, n in zip(classes, per):
    idx = np.flatnonzero(y == c)
    chosen.append(rng.permutation(idx)[: min(n, len(idx))])
  out = np.concatenate(chosen)
  if len(out) < k:  # a class too small: fill from the rest
    rest = np.setdiff1d(np.arange(len(y)), out)
    out = np.concatenate([out, rng.permutation(rest)[: k - len(out)]])
  return out


def balanced_picks(labels, sizes, seeds: int, seed: int) -> np.ndarray:
  """Replay's / the random K-prior's points: [T - 1, len(sizes), seeds, max].

  Entry [t, i, s, :sizes[i]] holds the indices into task t's training points
  of a class-balanced random draw (`select_balanced`) of sizes[i] points,
  seeded by (seed, s, t, sizes[i]) so that every method of a seed keeps the
  same points; the rest of the row is 0 (masked by the memory's weights).
  The last task needs no memory.
  """
  kmax = max(sizes)
  picks = np.zeros((len(labels) - 1, len(sizes), seeds, kmax), np.int32)
  for t, y in enumerate(labels[:-1]):
    for i, k in enumerate(sizes):
      for s in range(seeds):
        rng = np.random.default_rng([seed, s, t, k])
        picks[t, i, s, :k] = select_balanced(rng, y, k)
  return picks


def select_top_beta(theta, x, k: int, mask=None):
  """Indices of the k rows of largest beta, unclamped (the four-moons
  notebook's EM start); rows with mask 0 (padding) are never picked.

  Jittable (`lax.top_k`: among equal betas the lower index comes first).
  """
  b = beta(theta, x, 0.0)
  if mask is not None:
    b = jnp.where(mask > 0, b, -jnp.inf)
  return jax.lax.top_k(b, k)[1]
