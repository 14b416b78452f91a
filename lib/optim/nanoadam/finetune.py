"""NanoAdam's fine-tuning setting: what it measures, and NanoAdam in a sweep.

The paper pretrains a network on one task and fine-tunes it on another
(digits 0-4, then 5-9 here). Its motivating observation: at the start of
fine-tuning, large gradients concentrate on small weights, so |w| and |g| are
negatively rank-correlated (`weight_gradient_spearman`), while at the start of
training from scratch they are not. Old and new tasks are scored task-
incrementally (`task_accuracy`: the argmax within the task's classes), so
forgetting is the drop of old-task accuracy.

`with_step` lets a vmapped stack of NanoAdam runs (learning rates, seeds)
share one step counter, which keeps the mask refresh a branch.

References:
  Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small Weights"
  (NanoAdam), NeurIPS 2025 (Sec. 3, the |w|-|g| correlation; Sec. 5,
  fine-tuning and forgetting).
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.optim.nanoadam.optimizer import NanoAdamState


def task_accuracy(logits, labels, lo: int, num_classes: int = 5):
  """Task-incremental accuracy: argmax among the classes [lo, lo + num_classes).

  Args:
    logits: [N, C] logits over every class.
    labels: [N] integer labels, all in the task's classes.
    lo, num_classes: the task's classes.

  Returns:
    The fraction of rows whose best task class is the label (a scalar).
  """
  task = logits[:, lo : lo + num_classes]
  return jnp.mean(jnp.argmax(task, -1) + lo == labels)


def drift(params, params0) -> dict:
  """{"drift": ||params - params0||_2, "frac_changed": entries changed}.

  How far fine-tuning moved the pretrained weights: NanoAdam and the masks
  change about `density` of the masked weights, Adam nearly all of them.
  """
  diff = jax.tree.leaves(jax.tree.map(jnp.subtract, params, params0))
  norm = jnp.sqrt(sum(jnp.sum(v**2) for v in diff))
  changed = sum(jnp.sum(v != 0) for v in diff) / sum(v.size for v in diff)
  return {"drift": norm, "frac_changed": changed}


def spearman(a, b) -> float:
  """Spearman's rank correlation of two 1-D samples (host numpy).

  The Pearson correlation of the ranks, tied values sharing their average
  rank (as scipy.stats.spearmanr): gradients that are exactly 0 (a weight no
  example touches) tie, and ranking them by position would make the value
  depend on the parameters' order.
  """
  return float(np.corrcoef(_average_ranks(a), _average_ranks(b))[0, 1])


def _average_ranks(x) -> np.ndarray:
  """Ranks 1..n of x, each group of equal values at its mean rank."""
  _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
  last = np.cumsum(counts)  # the rank of each distinct value's last copy
  return (last - (counts - 1) / 2.0)[inverse.reshape(-1)]


def weight_gradient_spearman(params, grads) -> float:
  """Spearman(|w|, |g|) over the entries of all weight matrices (ndim 2).

  Biases (ndim 1) are left out, as the fine-tuning experiment leaves them
  out of NanoAdam's masks (its `exclude`; `nanoadam` itself masks every leaf
  unless told). Negative: the large gradients sit on the small weights (the
  paper's Fig. 1).
  """
  w = [np.abs(np.ravel(v)) for v in jax.tree.leaves(params) if np.ndim(v) == 2]
  g = [np.abs(np.ravel(v)) for v in jax.tree.leaves(grads) if np.ndim(v) == 2]
  return spearman(np.concatenate(w), np.concatenate(g))


def lr_ratio(ours, theirs) -> dict:
  """Per seed, our selected learning rate over a baseline's (log-paired).

  The paper's claim that NanoAdam prefers larger learning rates, read per
  seed: the lrs each method selected on that seed's training loss.

  Returns:
    {"point": geometric mean of the ratios, "lo", "hi": their min and max
    over seeds (a grid choice, not a t interval), "by_seed": the ratios}.
  """
  r = np.asarray(ours, np.float64) / np.asarray(theirs, np.float64)
  return {
    "point": float(np.exp(np.mean(np.log(r)))),
    "lo": float(r.min()),
    "hi": float(r.max()),
    "by_seed": r.tolist(),
  }


def with_step(opt_state, step):
  """`opt_state` with the step counter of each NanoAdam state set to `step`.

  For a vmapped sweep (`lib.train.run_sweep`) whose members all take one
  optimizer step per training step: pass the loop's step, which vmap leaves
  unbatched. NanoAdam's mask-refresh predicate is a function of its step
  alone, so it stays unbatched too and its `lax.cond` stays a branch; with a
  per-member (batched) counter vmap would run the top-k selection of every
  member at every step instead of every `mask_interval` steps. Values are
  unchanged: every member's counter equals the loop's step. Other optimizer
  states pass through.
  """

  def one(x):
    if isinstance(x, NanoAdamState):
      return x._replace(step=jnp.asarray(step, x.step.dtype))
    return x

  return jax.tree.map(
    one, opt_state, is_leaf=lambda x: isinstance(x, NanoAdamState)
  )
