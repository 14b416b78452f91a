"""The compact-memory update: PPCA-EM Hessian matching (official code, read).

After training on task t (model theta), the memory is rebuilt by PPCA-EM
(`learning_memory_tilde_repr` in the official scripts):

1. Observed rows X: sqrt(beta(x_i)) x_i for the new task's inputs, and
   sqrt(w_k) sqrt(beta(u_k)) u_k for the existing memory, with
   beta(x) = sum_c p_c (1 - p_c), p = softmax(theta^T x) clamped to
   [eps, 1 - eps] (eps = 1e-4), all at the current theta.
2. Learnable vectors: the old memory plus K_new fresh vectors (weight 1), so
   the memory grows by K_new per task. Tilde form W = sqrt(w) sqrt(beta(u)) u.
3. EM iterations with noise variance sigma^2 (`emnoise`):
     S = W^T W / sigma^2 + I,  M = S^-1 W^T X / sigma^2,
     W <- (X M^T)(S^-1 + M M^T + 1e-6 I)^-1,
   then un-transform: divide each column by sqrt(beta) at the *previous*
   u_k; its norm is sqrt(w_k) and its direction the new u_k.

This is Tipping-Bishop PPCA-EM with the un-normalised scatter C = X^T X in
place of the sample covariance (one S^-1 where the textbook has N S^-1), so
with beta held fixed its fixed point is W W^T = U_K (Lambda_K(C) - sigma^2 I)
U_K^T, the rank-K truncated Hessian: Hessian matching (spec oracle 3).

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.continual.kprior import Memory


def beta(theta, x, eps: float = 1e-4):
  """Scalar Hessian factor per row: sum_c p_c (1 - p_c), p clamped to [eps, 1-eps]."""
  p = jnp.clip(jax.nn.softmax(x @ theta, axis=-1), eps, 1.0 - eps)
  return jnp.sum(p * (1.0 - p), axis=-1)


def ppca_em_step(w, x, noise, jitter: float = 1e-6):
  """One EM step of the code's PPCA on columns: w [d, K], x [d, N] -> [d, K]."""
  k = w.shape[1]
  eye = jnp.eye(k, dtype=w.dtype)
  s = w.T @ w / noise + eye
  s_inv = jnp.linalg.inv(s)
  m = (s_inv @ w.T) @ x / noise  # [K, N] posterior means
  b = s_inv + m @ m.T + jitter * eye
  # (X M^T) B^-1, as a solve: B is symmetric.
  return jnp.linalg.solve(b, (x @ m.T).T).T


def observed_rows(theta, x_new, memory: Memory, eps: float = 1e-4):
  """X as rows [N + M, d]: sqrt(beta) x for new data, sqrt(w beta) u for memory."""
  new = jnp.sqrt(beta(theta, x_new, eps))[:, None] * x_new
  old = jnp.sqrt(memory.w * beta(theta, memory.u, eps))[:, None] * memory.u
  return jnp.concatenate([new, old], axis=0)


def update_memory(
  theta,
  x_new,
  memory: Memory,
  init_u,
  init_w=None,
  *,
  iters: int,
  noise: float = 1e-4,
  eps: float = 1e-4,
  jitter: float = 1e-6,
) -> Memory:
  """The memory after a task: old memory + init vectors, refined by PPCA-EM.

  Args:
    theta: the model after the task, [d, C].
    x_new: the task's inputs [N, d] (bias column included).
    memory: the memory before the task (M vectors).
    init_u: K_new fresh vectors [K_new, d] (raw points; the code's start).
    init_w: their starting weights (default 1). A 0 marks a padding slot,
      which EM leaves at weight 0 (its W column stays exactly 0).
    iters: EM iterations (`nmemupdate`); a plain jitted `fori_loop`.
    noise: sigma^2 (`emnoise`, default 1e-4); eps: the softmax clamp.

  Returns:
    Memory of M + K_new vectors: unit u (slots of weight 0 keep their
    vector) and weights w = squared column norms.
  """
  obs = observed_rows(theta, x_new, memory, eps)
  if init_w is None:
    init_w = jnp.ones(init_u.shape[:1], init_u.dtype)
  u = jnp.concatenate([memory.u, init_u.astype(memory.u.dtype)], axis=0)
  w = jnp.concatenate([memory.w, init_w.astype(memory.w.dtype)], axis=0)
  return refine(
    theta, obs, Memory(u, w), iters=iters, noise=noise, eps=eps, jitter=jitter
  )


def refine(
  theta,
  obs,
  memory: Memory,
  *,
  iters: int,
  noise: float = 1e-4,
  eps: float = 1e-4,
  jitter: float = 1e-6,
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
    b = jnp.sqrt(beta(theta, u, eps))  # at the previous u (the code's order)
    cols = (jnp.sqrt(w) * b)[:, None] * u
    new = ppca_em_step(cols.T, x, noise, jitter).T / b[:, None]
    norm = jnp.linalg.norm(new, axis=-1)
    safe = jnp.where(norm > 0, norm, 1.0)
    u = jnp.where((norm > 0)[:, None], new / safe[:, None], u)
    return u, norm**2

  u, w = jax.lax.fori_loop(0, iters, body, (memory.u, memory.w))
  return Memory(u, w)


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


def select_top_beta(theta, x, k: int) -> np.ndarray:
  """Indices of the k points of largest beta (the four-moons notebook's start)."""
  b = np.asarray(beta(theta, x, 0.0))
  return np.argsort(b, kind="stable")[::-1][:k]
