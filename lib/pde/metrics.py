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


def correlation_time(pred, true, threshold=0.8):
  """First step whose Pearson correlation drops below `threshold`.

  Args:
    pred, true: [..., T, n] trajectories.
    threshold: the paper uses 0.8.

  Returns:
    [...] steps (T when the correlation never drops: one more than the
    last step index T - 1, where the official code gives nt - 1). Per
    trajectory: the official code thresholds the batch-mean correlation
    instead (see `solver.rollout_metrics`). A non-finite step counts as
    decorrelated, so a rollout that blows up has a correlation time no later
    than the step it blew up at: divergence is counted, never dropped.
  """
  corr = pearson_correlation(pred, true)
  num_steps = corr.shape[-1]
  below = ~(corr >= threshold)  # NaN (blown-up rollout) counts as below
  first = jnp.argmax(below, axis=-1)
  return jnp.where(jnp.any(below, axis=-1), first, num_steps)


def hamiltonian_error_steps(h_true, h_pred, eps=1e-12):
  """|H[u_t] - H[u_hat_t]|^2 / |H[u_t]|^2 at every step."""
  return (h_true - h_pred) ** 2 / (h_true**2 + eps)


def hamiltonian_error(h_true, h_pred, eps=1e-12):
  """(1/T) sum_t |H[u_t] - H[u_hat_t]|^2 / |H[u_t]|^2 over the last axis."""
  return jnp.mean(hamiltonian_error_steps(h_true, h_pred, eps), axis=-1)


# The Student-t interval of a mean, shared by every paper's report.
mean_interval = stats_lib.mean_interval
