"""NanoAdam: Adam on the k smallest-magnitude weights of each layer.

During fine-tuning, large gradients concentrate on small-magnitude weights.
NanoAdam exploits this: per leaf (layer) it selects the k = ceil(density * n)
entries of smallest |theta| (a gradient-free mask), runs Adam on those entries
only and freezes the rest (their update is exactly 0). The mask is refreshed
every `mask_interval` steps and whenever the density schedule changes k.

State. Per leaf the state holds `k_max` int32 indices, `k_max` first and
`k_max` second moments and `k_max` int32 per-coordinate step counts, where
k_max = ceil(density * n) is the initial (largest) k: the moments cost
2 * density of Adam's. A decreasing density schedule keeps shapes static
(jittable inside `lax.scan`): the selection is sorted by the criterion, so the
bottom-k_t set is the prefix of length k_t of the bottom-k_max set, and
entries past k_t are inactive (no update, moments zero).

Moments on a mask change (`moments_on_change`, not fixed by the paper):
  "carry": entries that stay selected keep their moments and bias-correction
    counts; newly selected entries start from zero with count 0 (the spec's
    suggested default). At density 1 no entry is ever new, so NanoAdam equals
    optax.adam exactly.
  "reset": every refresh restarts all moments and counts.

Ties in |theta| are broken by the lower flat index (`lax.top_k` is stable).

References:
  Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small Weights"
  (NanoAdam), NeurIPS 2025.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.core.errors import ConfigError
from lib.core.errors import is_concrete
from lib.core.errors import is_static_zero

CRITERIA = ("smallest", "largest", "random")


class NanoAdamLeaf(NamedTuple):
  """Per-leaf state; arrays of length k_max (the initial k)."""

  indices: jax.Array  # int32 (k_max,): flat indices, sorted by the criterion.
  mu: jax.Array  # (k_max,): first moments of the selected entries.
  nu: jax.Array  # (k_max,): second moments of the selected entries.
  count: jax.Array  # int32 (k_max,): Adam steps per entry (bias correction).
  k: jax.Array  # int32 scalar: active entries (prefix of `indices`).


class NanoAdamState(NamedTuple):
  """State of `nanoadam`: the step count and a `NanoAdamLeaf` per leaf."""

  step: jax.Array  # int32 scalar: optimizer steps taken.
  leaves: Any  # pytree of NanoAdamLeaf, same structure as params.


def num_selected(density: float, n: int) -> int:
  """k = ceil(density * n), at least 1 and at most n."""
  return int(min(n, max(1, math.ceil(density * n - 1e-9))))


def select_indices(
  leaf: jax.Array, k: int, *, criterion: str = "smallest", key=None
) -> jax.Array:
  """Flat indices of the k entries of `leaf` picked by `criterion`.

  Gradient-free: only the weights are read. "smallest" is the bottom-k of
  |theta| (NanoAdam), "largest" the top-k (ablation), "random" a uniform
  random k-subset (ablation; needs `key`). Sorted by the criterion, ties by
  lower index.
  """
  flat = jnp.ravel(leaf)
  if criterion == "smallest":
    score = -jnp.abs(flat)
  elif criterion == "largest":
    score = jnp.abs(flat)
  elif criterion == "random":
    if key is None:
      raise ConfigError("criterion 'random' needs a key")
    score = jax.random.uniform(key, flat.shape)
  else:
    raise ConfigError(f"unknown criterion {criterion!r}; known: {CRITERIA}")
  _, idx = jax.lax.top_k(score, k)
  return idx.astype(jnp.int32)


def bottom_k_mask(params, *, density: float):
  """Boolean masks of the per-leaf bottom-k |theta| (k = ceil(density n))."""
  _check_density(density, "density")

  def one(p):
    k = num_selected(density, p.size)
    idx = select_indices(p, k)
    return jnp.zeros(p.size, bool).at[idx].set(True).reshape(p.shape)

  return jax.tree.map(one, params)


def _check_density(d, name):
  if isinstance(d, jax.Array | np.ndarray):
    raise ConfigError(
      f"NanoAdam {name} must be a Python number (it sizes the state), got an "
      f"array {d!r}: with optax.inject_hyperparams, list {name!r} in "
      "static_args"
    )
  if not isinstance(d, int | float) or not 0.0 < d <= 1.0:
    raise ConfigError(f"NanoAdam {name} must be in (0, 1], got {d!r}")


def _check_interval(v, name):
  """An int >= 1; a traced integer scalar (optax.inject_hyperparams) passes."""
  if not is_concrete(v):
    ok = v.ndim == 0 and jnp.issubdtype(v.dtype, jnp.integer)
  elif isinstance(v, jax.Array | np.ndarray | np.integer):
    ok = np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.integer)
    ok = ok and int(v) >= 1
  else:
    ok = isinstance(v, int) and not isinstance(v, bool) and v >= 1
  if not ok:
    raise ConfigError(f"{name} must be an int >= 1, got {v!r}")


def cosine_density(
  step, *, density: float, final_density: float, total_steps: int, interval: int
):
  """Cosine decay from density to final_density, piecewise constant per interval."""
  t = (step // interval) * interval
  frac = jnp.minimum(t / max(total_steps, 1), 1.0)
  return final_density + (density - final_density) * 0.5 * (
    1.0 + jnp.cos(jnp.pi * frac)
  )


def nanoadam(
  learning_rate: optax.ScalarOrSchedule,
  *,
  density: float,
  mask_interval: int = 1,
  final_density: float | None = None,
  density_interval: int = 1,
  total_steps: int | None = None,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-8,
  weight_decay: float = 0.0,
  criterion: str = "smallest",
  moments_on_change: str = "carry",
  exclude: Callable[[Any, jax.Array], bool] | None = None,
  seed: int = 0,
) -> optax.GradientTransformation:
  """NanoAdam as an optax GradientTransformation (returns -lr-scaled updates).

  Args:
    learning_rate: float or schedule of the step.
    density: fraction of each leaf that is updated, in (0, 1] (initial density
      with a schedule).
    mask_interval: refresh the mask every m steps (m >= 1).
    final_density: if set, cosine-decay the density to it over total_steps,
      changing every density_interval steps (a change of k refreshes the mask).
    density_interval: steps between density changes.
    total_steps: length of the density schedule.
    b1, b2, eps: Adam's beta_1, beta_2 and epsilon, as in optax.adam: the
      step of a selected entry is -lr * (m_hat / (sqrt(v_hat) + eps) +
      weight_decay * theta).
    weight_decay: decoupled weight decay, applied to selected entries only.
    criterion: "smallest" (NanoAdam), "largest" or "random" (ablations).
    moments_on_change: "carry" or "reset" (see the module docstring).
    exclude: (path, leaf) -> bool; excluded leaves get dense Adam (density 1,
      never re-selected), e.g. biases or a head.
    seed: seed of the "random" criterion.

  Raises:
    ConfigError: density or final_density outside (0, 1], final_density >
      density, bad mask_interval, criterion or moments_on_change.
  """
  _check_density(density, "density")
  if final_density is not None:
    _check_density(final_density, "final_density")
    if final_density > density:
      raise ConfigError(
        f"final_density {final_density} must be <= density {density}: the "
        "state is sized for the initial density"
      )
    if isinstance(total_steps, jax.Array | np.ndarray):
      raise ConfigError(
        f"total_steps must be a Python int, got an array {total_steps!r}: "
        "with optax.inject_hyperparams, list it in static_args"
      )
    if total_steps is None or total_steps <= 0:
      raise ConfigError("a density schedule needs total_steps > 0")
  _check_interval(mask_interval, "mask_interval")
  _check_interval(density_interval, "density_interval")
  if criterion not in CRITERIA:
    raise ConfigError(f"unknown criterion {criterion!r}; known: {CRITERIA}")
  if moments_on_change not in ("carry", "reset"):
    raise ConfigError(
      f"moments_on_change must be 'carry' or 'reset', got {moments_on_change!r}"
    )
  root = jax.random.key(seed)
  dense_adam = optax.scale_by_adam(b1=b1, b2=b2, eps=eps)

  def leaf_density(path, p):
    """1.0 for leaves updated densely (excluded, or every entry selected)."""
    if exclude is not None and exclude(path, p):
      return 1.0
    if final_density is None and num_selected(density, p.size) == p.size:
      return 1.0  # The mask is everything: skip gather/scatter (bitwise Adam).
    return None

  def k_at(step, n, dense):
    if dense or final_density is None:
      return jnp.asarray(num_selected(1.0 if dense else density, n), jnp.int32)
    d = cosine_density(
      step,
      density=density,
      final_density=final_density,
      total_steps=total_steps,
      interval=density_interval,
    )
    k = jnp.ceil(d * n - 1e-6).astype(jnp.int32)
    return jnp.clip(k, 1, num_selected(density, n))

  def select(p, k_max, dense, step, leaf_id):
    if dense:
      return jnp.arange(k_max, dtype=jnp.int32)
    key = jax.random.fold_in(jax.random.fold_in(root, leaf_id), step)
    return select_indices(p, k_max, criterion=criterion, key=key)

  def init_fn(params):
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    out = []
    for i, (path, p) in enumerate(leaves):
      dense = leaf_density(path, p) is not None
      k_max = num_selected(1.0 if dense else density, p.size)
      idx = select(p, k_max, dense, 0, i)
      z = jnp.zeros(k_max, p.dtype)
      out.append(
        NanoAdamLeaf(
          idx, z, z, jnp.zeros(k_max, jnp.int32), k_at(0, p.size, dense)
        )
      )
    return NanoAdamState(jnp.zeros([], jnp.int32), treedef.unflatten(out))

  def leaf_update(i, g, p, s: NanoAdamLeaf, step, lr):
    """Masked Adam on one (non-dense) leaf."""
    k_max = s.indices.shape[0]
    k = k_at(step, p.size, False)
    # A function of the step alone (s.k == k_at(step - 1) after every update):
    # with the step shared by a vmapped stack of runs (`with_step`), the
    # predicate stays unbatched and this lax.cond a branch.
    refresh = (step % mask_interval == 0) | (
      k != k_at(jnp.maximum(step - 1, 0), p.size, False)
    )

    def do_refresh(s):
      idx = select(p, k_max, False, step, i)
      if moments_on_change == "reset":
        z = jnp.zeros_like(s.mu)
        return idx, z, z, jnp.zeros_like(s.count)

      # Carry moments of entries that stay selected: scatter the old
      # moments into a transient full-size buffer, gather at the new set.
      def move(v):
        full = jnp.zeros(p.size, v.dtype).at[s.indices].set(v)
        return full[idx]

      return idx, move(s.mu), move(s.nu), move(s.count)

    idx, mu, nu, count = jax.lax.cond(
      refresh, do_refresh, lambda s: (s.indices, s.mu, s.nu, s.count), s
    )
    active = jnp.arange(k_max) < k
    g_sel = jnp.ravel(g)[idx]
    # Same operation order as optax.scale_by_adam.
    mu = (1 - b1) * g_sel + b1 * mu
    nu = (1 - b2) * (g_sel**2) + b2 * nu
    count = optax.safe_increment(count)
    if final_density is not None:  # Only a schedule makes entries inactive.
      mu, nu = jnp.where(active, mu, 0), jnp.where(active, nu, 0)
      count = jnp.where(active, count, 0)
    # Bias correction per entry. Entries selected since step 0 use the scalar
    # power, as optax does: a vector pow rounds differently on XLA:CPU.
    safe = jnp.maximum(count, 1)
    step_inc = optax.safe_increment(step)
    since_start = count == step_inc
    bc1 = jnp.where(since_start, 1 - b1**step_inc, 1 - b1**safe)
    bc2 = jnp.where(since_start, 1 - b2**step_inc, 1 - b2**safe)
    mu_hat = mu / bc1.astype(mu.dtype)
    nu_hat = nu / bc2.astype(nu.dtype)
    upd = mu_hat / (jnp.sqrt(nu_hat + 0.0) + eps)
    if not is_static_zero(weight_decay):
      upd = upd + weight_decay * jnp.ravel(p)[idx]
    upd = upd * (-lr)
    if final_density is not None:
      upd = jnp.where(active, upd, 0)
    full = jnp.zeros(p.size, upd.dtype).at[idx].set(upd).reshape(p.shape)
    # The dtype optax.adam returns (the dense path): bf16 grads of f32
    # weights give f32 updates, not updates rounded to bf16.
    return full, NanoAdamLeaf(idx, mu, nu, count, k)

  def update_fn(updates, state, params=None):
    if params is None:
      raise ConfigError("nanoadam needs params: the mask reads the weights")
    step = state.step
    lr = learning_rate(step) if callable(learning_rate) else learning_rate
    g_leaves, treedef = jax.tree_util.tree_flatten_with_path(updates)
    p_leaves = treedef.flatten_up_to(params)
    s_leaves = treedef.flatten_up_to(state.leaves)
    dense = [
      leaf_density(path, p) is not None
      for (path, _), p in zip(g_leaves, p_leaves)
    ]
    # Dense leaves: optax's own Adam over all of them at once. optax's bias
    # correction is one jitted function over the whole tree and its rounding
    # depends on the tree, so this is what makes density 1 bitwise optax.adam.
    dense_ids = [i for i, d in enumerate(dense) if d]
    adam_state = optax.ScaleByAdamState(
      count=step,
      mu=[s_leaves[i].mu.reshape(p_leaves[i].shape) for i in dense_ids],
      nu=[s_leaves[i].nu.reshape(p_leaves[i].shape) for i in dense_ids],
    )
    dense_upd, adam_state = dense_adam.update(
      [g_leaves[i][1] for i in dense_ids], adam_state
    )
    outs = [None] * len(g_leaves)
    for j, i in enumerate(dense_ids):
      upd = dense_upd[j]
      if not is_static_zero(weight_decay):
        upd = upd + weight_decay * p_leaves[i]
      s = s_leaves[i]
      leaf = NanoAdamLeaf(
        s.indices,
        adam_state.mu[j].ravel(),
        adam_state.nu[j].ravel(),
        jnp.broadcast_to(adam_state.count, s.count.shape),
        s.k,
      )
      outs[i] = (jax.tree.map(lambda u: -lr * u, upd), leaf)
    for i, ((_, g), p, s) in enumerate(zip(g_leaves, p_leaves, s_leaves)):
      if not dense[i]:
        outs[i] = leaf_update(i, g, p, s, step, lr)
    new_updates = treedef.unflatten([o[0] for o in outs])
    new_leaves = treedef.unflatten([o[1] for o in outs])
    return new_updates, NanoAdamState(optax.safe_increment(step), new_leaves)

  return optax.GradientTransformation(init_fn, update_fn)


def state_floats(state) -> int:
  """Floating-point entries in an optimizer state, or in its `eval_shape`."""
  return int(
    sum(
      np.size(x)
      for x in jax.tree.leaves(state)
      if jnp.issubdtype(jnp.result_type(x), jnp.floating)
    )
  )
