"""Rollout metrics: relative L2, correlation time, Hamiltonian error.

Also the host-side interval of a mean that the HNS experiments put on their
paired comparisons (per seed or per validation trajectory).

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Sec. 4.2 and App. B.1.
"""

import jax.numpy as jnp

from lib.core import linalg
from lib.core import stats as stats_lib


def relative_l2(pred, true, axis=-1, eps=1e-12, *, zero_safe=True):
  """||pred - true|| / ||true|| over `axis` (unsquared, as the HNS code).

  With `zero_safe` (the default) it is differentiable everywhere: at
  pred == true the gradient is 0 (see `linalg.safe_sqrt`), never NaN; the value
  is the same either way. `zero_safe=False` is plain jnp.sqrt, NaN gradient
  at pred == true: only `solver.relative_l2_loss` uses it, because the
  guarded gradient compiles to other fusions and moved the last bits of the
  HNS experiments' training.
  """
  sqrt = linalg.safe_sqrt if zero_safe else jnp.sqrt
  num = sqrt(jnp.sum((pred - true) ** 2, axis=axis))
  den = sqrt(jnp.sum(true**2, axis=axis))
  return num / (den + eps)


def rollout_error(pred, true):
  """Mean over time (and batch) of the per-step relative L2; [..., T, n]."""
  return jnp.mean(relative_l2(pred, true))


def pearson_correlation(pred, true, axis=-1, eps=1e-12):
  """Pearson correlation over `axis`.

  A constant `pred` (or `true`) has correlation 0 and a finite gradient, the
  exact one of num / (den + eps): centred `true` / eps (the zero-norm factor's
  own gradient is 0 there, see `linalg.safe_sqrt`, and it multiplies num == 0).
  """
  p = pred - jnp.mean(pred, axis=axis, keepdims=True)
  t = true - jnp.mean(true, axis=axis, keepdims=True)
  num = jnp.sum(p * t, axis=axis)
  den = linalg.safe_sqrt(jnp.sum(p**2, axis=axis) * jnp.sum(t**2, axis=axis))
  return num / (den + eps)


# How a run's correlation time is computed (`solver.rollout_metrics`):
# "official" thresholds the batch-mean correlation, one time per validation
# batch (the authors' code); "per_trajectory" one time per trajectory (ours).
CORRELATION_TIMES = ("official", "per_trajectory")


def correlation_time(pred, true, threshold=0.8):
  """First step whose Pearson correlation drops below `threshold`.

  Args:
    pred, true: [..., T, n] trajectories.
    threshold: the paper uses 0.8.

  Returns:
    [...] steps (T when the correlation never drops: one more than the
    last step index T - 1, where the official code gives nt - 1). Per
    trajectory (the "per_trajectory" mode, ours): the official code
    thresholds the batch-mean correlation instead
    (`batch_correlation_time`). A non-finite step counts as
    decorrelated, so a rollout that blows up has a correlation time no later
    than the step it blew up at: divergence is counted, never dropped.
  """
  corr = pearson_correlation(pred, true)
  num_steps = corr.shape[-1]
  below = ~(corr >= threshold)  # NaN (blown-up rollout) counts as below
  first = jnp.argmax(below, axis=-1)
  return jnp.where(jnp.any(below, axis=-1), first, num_steps)


def batch_sizes(num, batch_size):
  """Sizes of the consecutive batches that `batch_correlation_time` forms."""
  return [min(batch_size, num - start) for start in range(0, num, batch_size)]


def batch_correlation_time(pred, true, threshold=0.8, *, batch_size=32):
  """The official correlation time: one per batch of trajectories.

  The authors' code (modules/train_module.py `rollout`, with
  `PearsonCorrelationScore(reduce_batch=True)`) rolls out a validation batch,
  averages the Pearson correlation over the batch at every step, and returns
  the first step t >= 1 where that batch mean is below `threshold`, or
  T - 1 (its nt - 1, the last step) when it never is. A NaN correlation never
  compares below, and the rollout loop stops at the first step whose
  prediction is NaN: no step from there on counts. So a batch with a diverged
  trajectory looks correlated from the step it diverged at (its mean is NaN)
  and, unless it dropped earlier, scores the full T - 1: the official rule
  lets a diverged batch look correlated. Count divergence apart
  (`solver.rollout_metrics`' num_diverged); `correlation_time` above counts
  it as decorrelation instead.

  Args:
    pred, true: [B, T, n] trajectories, step 0 the shared initial condition.
    threshold: the paper uses 0.8.
    batch_size: trajectories per batch (the official validation loader: 32,
      unshuffled); consecutive batches, the last one smaller when B is not a
      multiple (all B in one batch when B <= batch_size).

  Returns:
    [ceil(B / batch_size)] steps, one per batch (int32).
  """
  corr = pearson_correlation(pred, true)  # [B, T]
  num_steps = corr.shape[-1]
  steps = jnp.arange(num_steps)
  times = []
  for start in range(0, corr.shape[0], batch_size):
    batch = slice(start, start + batch_size)
    mean = jnp.mean(corr[batch], axis=0)  # [T]
    nonfinite = jnp.any(~jnp.isfinite(pred[batch]), axis=(0, -1))  # [T]
    counts = (steps >= 1) & (jnp.cumsum(nonfinite) == 0)
    below = counts & (mean < threshold)  # NaN compares False
    times.append(jnp.where(jnp.any(below), jnp.argmax(below), num_steps - 1))
  return jnp.stack(times).astype(jnp.int32)


def hamiltonian_error_steps(h_true, h_pred, eps=1e-12):
  """|H[u_t] - H[u_hat_t]|^2 / |H[u_t]|^2 at every step."""
  return (h_true - h_pred) ** 2 / (h_true**2 + eps)


def hamiltonian_error(h_true, h_pred, eps=1e-12):
  """(1/T) sum_t |H[u_t] - H[u_hat_t]|^2 / |H[u_t]|^2 over the last axis."""
  return jnp.mean(hamiltonian_error_steps(h_true, h_pred, eps), axis=-1)


# The Student-t interval of a mean, shared by every paper's report.
mean_interval = stats_lib.mean_interval
