"""Preference losses (DPO, IPO, SLiC) and the last-layer DPO model and dynamics.

Im & Li, "Can DPO Learn Diverse Human Values? A Theoretical Scaling Law"
(NeurIPS 2025; arXiv 2408.03459, "On the Generalization of Preference
Learning with DPO"). The policy's logits are W g(x): g is a frozen final
embedding, only the unembedding W [V, d] trains, starting from W_ref. The
paper follows each sample's reward margin

  r = beta [log pi_W(y_w|x)/pi_ref(y_w|x) - log pi_W(y_l|x)/pi_ref(y_l|x)]

through finitely many gradient steps. For single-token responses the
log-partitions cancel and the margin is linear in W,

  r = beta (e_w - e_l)^T (W - W_ref) g,                       (margin identity)

so one full-batch GD step of size eta on the mean DPO loss moves every margin
exactly by

  dr_j = (eta beta^2 / N) sum_i sigma(-r_i) <e_j, e_i> <g_j, g_i>,   e = e_w - e_l

(the discrete form of the paper's trajectory analysis; exact for GD, not for
Adam). `margins` computes r through log-softmax (what a model gives),
`closed_form_margins` through the identity, `gd_margin_update` the step.
When every value has its own token pair (the paper's model, <e_j, e_i> = 0
across values) the sum runs over the pairs of j's own value only: the
preference-sharing term between values is exactly zero.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from lib.core import dtypes
from lib.core import errors

LOSSES = ("dpo", "ipo", "slic")


def log_ratio_difference(logp_w, logp_l, ref_logp_w, ref_logp_l):
  """h = (log pi(y_w) - log pi_ref(y_w)) - (log pi(y_l) - log pi_ref(y_l))."""
  return (logp_w - ref_logp_w) - (logp_l - ref_logp_l)


def preference_loss(h, beta: float, kind: str = "dpo"):
  """Per-pair loss of the log-ratio difference h (policy vs reference).

  dpo: -log sigma(beta h) (Rafailov et al. 2023).
  ipo: (h - 1 / (2 beta))^2 (Azar et al. 2024; beta plays tau).
  slic: max(0, 1 - beta h), the calibration hinge of SLiC-HF (Zhao et al.
    2023) on the reference-normalised margin, as TRL's "hinge" loss.

  Raises:
    ConfigError: beta <= 0 or an unknown kind.
  """
  check_beta(beta)
  if kind == "dpo":
    return -jax.nn.log_sigmoid(beta * h)
  if kind == "ipo":
    return (h - 1.0 / (2.0 * beta)) ** 2
  if kind == "slic":
    return jax.nn.relu(1.0 - beta * h)
  raise errors.ConfigError(f"unknown loss {kind!r}; expected one of {LOSSES}")


def check_beta(beta) -> None:
  """ConfigError unless beta is a scalar > 0; a traced beta (an argument of
  a jitted or vmapped function) is checked for its shape only."""
  traced = not errors.is_concrete(beta)
  errors.check(
    np.ndim(beta) == 0 and (traced or float(beta) > 0),
    errors.ConfigError,
    f"beta must be a number > 0, got {beta!r}",
  )


def check_pairs(w, g, y_w, y_l, mask=None) -> None:
  """One-line errors for a head/embedding mismatch, token ids outside
  [0, vocab) (their log-probabilities would be a silent NaN) or y_w == y_l.

  The shapes are always checked; the ids where y_w and y_l are concrete
  (`errors.is_concrete`: not inside jit or vmap). Rows with `mask` 0
  (padding) may repeat a token; a traced mask skips that check.
  """
  errors.check(
    np.ndim(w) == 2,
    errors.ShapeError,
    f"the head W must be [vocab, width], got shape {np.shape(w)}",
  )
  errors.check(
    np.shape(g)[-1] == np.shape(w)[1],
    errors.ShapeError,
    f"embedding width {np.shape(g)[-1]} does not match the head's width "
    f"{np.shape(w)[1]} (W is {np.shape(w)})",
  )
  if not (errors.is_concrete(y_w) and errors.is_concrete(y_l)):
    return
  y_w, y_l = np.asarray(y_w), np.asarray(y_l)
  same_rows = y_w == y_l
  if mask is not None:
    if not errors.is_concrete(mask):
      same_rows = np.zeros_like(same_rows)
    else:
      same_rows = same_rows & (np.asarray(mask) != 0)
  same = int(np.sum(same_rows))
  errors.check(
    same == 0,
    errors.ShapeError,
    f"{same} preference pair(s) have the same preferred and rejected token "
    f"(first at index {int(np.argmax(same_rows)) if same else -1})",
  )
  vocab = np.shape(w)[0]
  bad = (y_w < 0) | (y_w >= vocab) | (y_l < 0) | (y_l >= vocab)
  if np.any(bad):
    i = int(np.argmax(bad))
    raise errors.ShapeError(
      f"token ids must lie in [0, {vocab}); {int(np.sum(bad))} pair(s) do "
      f"not (first: y_w[{i}]={y_w[i].item()}, y_l[{i}]={y_l[i].item()})"
    )


def token_logprobs(w, g, y):
  """log pi_W(y | x) = log_softmax(W g)[y] for rows g [N, d], tokens y [N]."""
  logp = jax.nn.log_softmax(g @ w.T, axis=-1)
  return jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0]


def margins(w, w_ref, g, y_w, y_l, beta):
  """Reward margins r [N] of the last-layer policy, through log-softmax.

  Raises:
    ShapeError: a bad pair (`check_pairs`; its ids where concrete).
  """
  check_pairs(w, g, y_w, y_l)
  return _margins(w, w_ref, g, y_w, y_l, beta)


def _margins(w, w_ref, g, y_w, y_l, beta):
  """`margins` without the checks (its callers check, with their mask)."""
  h = log_ratio_difference(
    token_logprobs(w, g, y_w),
    token_logprobs(w, g, y_l),
    token_logprobs(w_ref, g, y_w),
    token_logprobs(w_ref, g, y_l),
  )
  return beta * h


def closed_form_margins(w, w_ref, g, y_w, y_l, beta):
  """beta (e_w - e_l)^T (W - W_ref) g: the margin identity (single token).

  Raises:
    ShapeError: a bad pair (`check_pairs`; its ids where concrete).
  """
  check_pairs(w, g, y_w, y_l)
  dw = w - w_ref
  return beta * jnp.sum((dw[y_w] - dw[y_l]) * g, axis=-1)


def value_block_margins(w, w_ref, g, sign, beta):
  """Margins when value k owns tokens (2k, 2k+1): g [K, M, d], sign [K, M].

  The layout of the paper's data model (`data.value_pairs` reshaped to
  [K, 2Q, d]): sign +1 prefers token 2k over 2k+1, -1 the reverse, so by the
  margin identity r = beta s delta_k^T g with delta_k = (W - W_ref)[2k] -
  (W - W_ref)[2k+1]. The same numbers as `closed_form_margins` on the
  flattened pairs, without its gathers: the gradient is then a dense product
  instead of a scatter-add (~40x faster on CPU at K = 32, 2Q = 256).
  """
  num_values, _, dim = g.shape
  dw = (w - w_ref).reshape(num_values, 2, dim)
  delta = dw[:, 0] - dw[:, 1]
  return beta * sign * jnp.einsum("kmd,kd->km", g, delta)


def value_block_loss(w, w_ref, g, sign, beta, kind: str = "dpo", mask=None):
  """Mean preference loss of the paper's layout by `value_block_margins`.

  g [K*M, d] and sign [K*M] value-major (`data.value_pairs`), W [2K, d]:
  value k owns rows k*M .. k*M + M - 1 and tokens (2k, 2k+1). The same
  number as `loss` on the flattened pairs, without its gathers.
  """
  num_values = w.shape[0] // 2
  g = g.reshape(num_values, -1, g.shape[-1])
  r = value_block_margins(w, w_ref, g, sign.reshape(num_values, -1), beta)
  return mean_loss(r.reshape(-1), beta, kind, mask)


def mean_loss(r, beta, kind: str = "dpo", mask=None):
  """Mean preference loss of margins r (mask: weights, e.g. padding 0/1)."""
  per = preference_loss(r / beta, beta, kind)
  if mask is None:
    return jnp.mean(per)
  return jnp.sum(mask * per) / jnp.maximum(jnp.sum(mask), 1.0)


def loss(w, w_ref, g, y_w, y_l, beta, kind: str = "dpo", mask=None):
  """Mean preference loss over the pairs (mask: weights, e.g. padding 0/1).

  Raises:
    ShapeError: a bad pair (`check_pairs`; its ids where concrete).
  """
  check_pairs(w, g, y_w, y_l, mask)
  return mean_loss(_margins(w, w_ref, g, y_w, y_l, beta), beta, kind, mask)


def gd_margin_update(r, g, y_w, y_l, beta, lr, vocab: int):
  """Exact change of every margin after one GD step on the mean DPO loss.

  dr_j = (lr beta^2 / N) sum_i sigma(-r_i) <e_j, e_i> <g_j, g_i>.
  """
  e = jax.nn.one_hot(y_w, vocab) - jax.nn.one_hot(y_l, vocab)
  kernel = (e @ e.T) * (g @ g.T)
  return lr * beta**2 / r.shape[0] * kernel @ jax.nn.sigmoid(-r)


def population_accuracy(w, w_ref, mean, y_w, y_l, noise: float):
  """Exact P(r > 0) for g ~ N(mean, noise^2 I), per row of `mean` [N, d].

  By the margin identity r = beta delta^T g with delta = (W - W_ref)[y_w] -
  (W - W_ref)[y_l], so r ~ N(beta delta^T mean, beta^2 noise^2 |delta|^2) and

    P(r > 0) = Phi(delta^T mean / (noise |delta|))

  for any beta > 0: the test accuracy of a Gaussian cluster without test-set
  sampling noise (the paper's test error is this expectation). delta = 0
  gives r = 0, never > 0: accuracy 0, as `reward_accuracy` counts it.
  `noise` may be traced (a jitted or vmapped argument). Phi is evaluated in
  at least float32 (jax's ndtr takes no bfloat16/float16).

  Raises:
    ConfigError: a concrete noise that is not a number >= 0.
    ShapeError: a bad pair (`check_pairs`; its ids where concrete).
  """
  check_pairs(w, mean, y_w, y_l)
  errors.check(
    np.ndim(noise) == 0
    and (not errors.is_concrete(noise) or float(noise) >= 0),
    errors.ConfigError,
    f"noise must be a number >= 0 (a standard deviation), got {noise!r}",
  )
  ndtr32 = lambda z: ndtr(z.astype(dtypes.compute_dtype(z.dtype)))
  dw = w - w_ref
  delta = dw[y_w] - dw[y_l]
  norm = jnp.linalg.norm(delta, axis=-1)
  mean_margin = jnp.sum(delta * mean, axis=-1)
  hard = (mean_margin > 0).astype(mean.dtype)
  if errors.is_concrete(noise):
    if noise == 0:
      return hard
    z = mean_margin / (noise * jnp.where(norm > 0, norm, 1.0))
    return jnp.where(norm > 0, ndtr32(z), 0.0)
  # Traced noise: the same numbers, with noise = 0 selected, not branched on.
  spread = jnp.where(noise > 0, noise, 1.0) * jnp.where(norm > 0, norm, 1.0)
  soft = jnp.where(norm > 0, ndtr32(mean_margin / spread), 0.0)
  return jnp.where(noise > 0, soft, hard)


def reward_accuracy(w, w_ref, g, y_w, y_l, beta, mask=None):
  """Fraction of pairs with a positive margin (the paper's 0-1 criterion)."""
  check_pairs(w, g, y_w, y_l, mask)
  right = (_margins(w, w_ref, g, y_w, y_l, beta) > 0).astype(g.dtype)
  if mask is None:
    return jnp.mean(right)
  return jnp.sum(mask * right) / jnp.maximum(jnp.sum(mask), 1.0)
