"""The K-prior of multinomial logistic regression and its memory pytree.

After task t the learner keeps theta_t and a memory of vectors u_k with weights
w_k. Training on task t+1 minimises (official code, `loss_theta`):

  sum_i CE(y_i, softmax(theta^T x_i)) / B  +  K_t(theta) / N_new,
  K_t(theta) = (delta/2) ||theta - theta_t||^2
               + sum_k w_k CE(softmax(theta_t^T u_k), softmax(theta^T u_k)),

the old model's soft prediction on u_k acting as a soft label. Before the
first task there is no memory and theta_0 = 0, so K = (delta/2) ||theta||^2.
The model has no bias: a constant-1 feature is appended to the inputs.
theta has shape [d, C]; a theta of one column, [d, 1], is the binary model
of the official four-moons notebook (`LogisticRegression`: one weight
vector, p(y = 1) = sigmoid(x^T theta)), whose CE is the notebook's logistic
loss and whose soft CE its memory loss (`logits`).

Jung, Lee, Chen, Moellenhoff, Li, Lee, Khan, "How to Train Your Compact
Memory", NeurIPS 2025; Khan & Swaroop, "Knowledge-Adaptation Priors",
NeurIPS 2021.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from lib.core import dtypes
from lib.core.losses import token_nll


class Memory(NamedTuple):
  """The memory: vectors u [M, d] (unit norm after PPCA-EM) and weights w [M].

  A slot with w = 0 contributes nothing (the experiment pads memories of
  different sizes to one shape this way).
  """

  u: jax.Array
  w: jax.Array


def empty_memory(d: int, dtype=jnp.float32) -> Memory:
  """The memory before the first task: no vectors."""
  return Memory(jnp.zeros((0, d), dtype), jnp.zeros((0,), dtype))


def logits(theta, x):
  """The class logits [..., C] of inputs x [..., d] under theta [d, C].

  A theta of one column [d, 1] is the binary model (one weight vector, the
  four-moons notebook's `LogisticRegression`): its two class logits are
  [0, x @ theta], since softmax([0, z]) = [1 - sigmoid(z), sigmoid(z)]. So
  every softmax quantity below is, for it, the sigmoid model's: the CE is
  the logistic loss, the soft CE against sigmoid(z_old) the notebook's
  memory loss, the argmax sigmoid(z) > 1/2. (The notebook adds 1e-9 inside
  its logs; we do not: a difference only where a point is misclassified
  with |z| > ~20.)
  """
  z = x @ theta
  if theta.shape[-1] == 1:
    return jnp.concatenate([jnp.zeros_like(z), z], axis=-1)
  return z


def cross_entropy_sum(theta, x, y, mask=None):
  """Sum over rows of CE(y_i, softmax(logits(theta, x_i))); y holds class ids.

  Rows with mask 0 (padding, so that tasks of different sizes share a shape)
  contribute nothing.
  """
  nll = token_nll(logits(theta, x), y)
  return jnp.sum(nll if mask is None else mask * nll)


def _rows(x, mask):
  """The batch size B: rows of x, or the unmasked rows."""
  return x.shape[0] if mask is None else jnp.sum(mask)


def data_divisor(x, mask=None, batch_size: int = 0):
  """What the summed CE of the new data is divided by.

  batch_size 0: the rows B (the mean). Otherwise the official Split-CIFAR
  scripts' rule: they divide each batch's summed CE by their batch size
  (1024) also when the batch is smaller, a task of fewer points included.
  Full-batch, that is batch_size * ceil(B / batch_size): their per-step data
  term averaged over an epoch (exact for B <= batch_size).
  """
  rows = _rows(x, mask)
  if not batch_size:
    return rows
  return batch_size * jnp.ceil(rows / batch_size)


def soft_cross_entropy(theta, u, p_old):
  """Per-row CE of the soft label p_old [M, C] against softmax(logits(theta, u))."""
  log_p = jax.nn.log_softmax(logits(theta, u), axis=-1)
  return -jnp.sum(p_old * log_p, axis=-1)


def kprior(theta, theta_old, memory: Memory, delta, center=None):
  """K_t(theta) = (delta/2)||theta - center||^2 + sum_k w_k CE(p_old, p).

  `center` defaults to theta_old (the K-prior). The official "K-prior with
  random points" baseline pulls its L2 term towards 0 instead (center 0).
  """
  center = theta_old if center is None else center
  reg = 0.5 * delta * jnp.sum((theta - center) ** 2)
  if memory.u.shape[0] == 0:
    return reg
  p_old = jax.nn.softmax(
    logits(jax.lax.stop_gradient(theta_old), memory.u), axis=-1
  )
  return reg + jnp.sum(memory.w * soft_cross_entropy(theta, memory.u, p_old))


def task_loss(
  theta,
  x,
  y,
  theta_old,
  memory: Memory,
  delta,
  n_new,
  *,
  mask=None,
  center=None,
  batch_size: int = 0,
):
  """The code's per-batch objective: CE_sum / B + K_t(theta) / N_new.

  B is the batch's rows (with `mask`, its unmasked rows), or with
  `batch_size` the official scripts' fixed divisor (`data_divisor`);
  `center` as for `kprior` (0 for the official random-points baseline).
  """
  ce = cross_entropy_sum(theta, x, y, mask) / data_divisor(x, mask, batch_size)
  return ce + kprior(theta, theta_old, memory, delta, center=center) / n_new


def replay_loss(
  theta,
  x,
  y,
  mem_x,
  mem_y,
  mem_w,
  delta,
  n_new,
  *,
  mask=None,
  batch_size: int = 0,
):
  """Experience replay (official baseline): CE_new / B + (L2 + replay CE) / N.

  `mem_w` is 1 for a stored point and 0 for a padding slot; `mask` and
  `batch_size` (B) as for `task_loss`. The official replay script puts (delta/2)||theta||^2 only on
  the first task (no memory yet) and nothing but the replayed CE afterwards;
  the caller passes delta = 0 after the first task to follow it.
  """
  ce = cross_entropy_sum(theta, x, y, mask) / data_divisor(x, mask, batch_size)
  mem_ce = token_nll(logits(theta, mem_x), mem_y)
  extra = 0.5 * delta * jnp.sum(theta**2) + jnp.sum(mem_w * mem_ce)
  return ce + extra / n_new


def accuracy(theta, x, y):
  """Class-incremental accuracy: argmax over all classes, no task mask
  (binary theta [d, 1]: class 1 where x @ theta > 0)."""
  return jnp.mean(jnp.argmax(logits(theta, x), axis=-1) == y)


def kprior_linear(theta, theta_old, memory: Memory, delta):
  """K-prior of linear regression (squared error, unit noise), theta [d].

  (delta/2)||theta - theta_old||^2 + (1/2) sum_k w_k (u_k^T (theta - theta_old))^2:
  the memory reproduces the past data's gradient exactly whenever
  sum_k w_k u_k u_k^T = Phi^T Phi (spec section 2, "why memory can be compact").
  """
  diff = theta - theta_old
  quad = jnp.sum(memory.w * (memory.u @ diff) ** 2) if memory.u.shape[0] else 0
  return 0.5 * delta * jnp.sum(diff**2) + 0.5 * quad


def eigen_memory(phi, rtol: float = 1e-10) -> Memory:
  """The exact memory of Phi^T Phi: its eigenvectors (unit) and eigenvalues.

  Keeps the eigenpairs above rtol * largest, i.e. rank(Phi) vectors.
  A bfloat16/float16 Phi is decomposed in float32 (eigh has no
  half-precision kernel) and the memory returned in Phi's dtype.
  """
  if dtypes.is_half(phi.dtype):
    memory = eigen_memory(phi.astype(jnp.float32), rtol)
    return Memory(memory.u.astype(phi.dtype), memory.w.astype(phi.dtype))
  lam, vecs = jnp.linalg.eigh(phi.T @ phi)
  keep = lam > rtol * jnp.max(lam)
  return Memory(vecs.T[keep], lam[keep])
