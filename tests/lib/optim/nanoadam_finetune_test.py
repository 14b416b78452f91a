"""NanoAdam's fine-tuning measures and `with_step` (the vmapped sweep)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from scipy import stats

from lib.optim import nanoadam as na


def test_task_accuracy_takes_the_argmax_within_the_task():
  logits = np.zeros((4, 10), np.float32)
  logits[0, [0, 6]] = [9.0, 1.0]  # Global argmax 0; within 5-9: 6 (right).
  logits[1, 7] = 1.0  # 7, label 7 (right).
  logits[2, [5, 9]] = [1.0, 2.0]  # 9, label 5 (wrong).
  logits[3, 8] = 1.0  # 8 (right).
  labels = np.asarray([6, 7, 5, 8])
  assert float(na.task_accuracy(logits, labels, 5)) == 0.75
  # Classes 0-4 of the same rows: argmax 0, 0, 0, 0 (all-zero ties: first).
  assert float(na.task_accuracy(logits, np.zeros(4), 0)) == 1.0


def test_drift_is_the_l2_distance_and_the_changed_fraction():
  params0 = {"w": np.ones((2, 2), np.float32), "b": np.zeros(4, np.float32)}
  params = {"w": params0["w"] + [[3, 0], [0, 0]], "b": np.asarray([0, 4, 0, 0])}
  out = na.drift(params, params0)
  assert float(out["drift"]) == 5.0  # sqrt(3^2 + 4^2)
  assert float(out["frac_changed"]) == 2 / 8


def test_lr_ratio_is_the_geometric_mean_with_the_seed_range():
  out = na.lr_ratio([0.1, 0.3], [0.01, 0.1])  # Ratios 10 and 3.
  assert out["point"] == pytest.approx(np.sqrt(30))
  assert (out["lo"], out["hi"]) == pytest.approx((3, 10))
  assert out["by_seed"] == pytest.approx([10, 3])


def test_spearman_matches_scipy_and_the_rank_extremes():
  rng = np.random.default_rng(0)
  a, b = rng.normal(size=200), rng.normal(size=200)
  b = b + 0.5 * a
  assert na.spearman(a, b) == pytest.approx(stats.spearmanr(a, b)[0], 1e-12)
  assert na.spearman(a, np.exp(a)) == pytest.approx(1.0)
  assert na.spearman(a, -(a**3)) == pytest.approx(-1.0)


def test_spearman_gives_ties_their_average_rank():
  # Half the gradients exactly 0 (untouched weights): with ties ranked by
  # position the value would depend on the order of the entries.
  rng = np.random.default_rng(2)
  w = rng.normal(size=100)
  g = np.where(np.arange(100) % 2 == 0, 0.0, rng.normal(size=100))
  want = stats.spearmanr(w, g)[0]
  assert na.spearman(w, g) == pytest.approx(want, abs=1e-12)
  order = rng.permutation(100)
  assert na.spearman(w[order], g[order]) == pytest.approx(want, abs=1e-12)
  # Hand-computed: ranks of (1, 1, 2) are (1.5, 1.5, 3) against (1, 2, 3):
  # centred (-0.5, -0.5, 1) and (-1, 0, 1): Pearson 1.5 / sqrt(1.5 * 2).
  assert na.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(
    1.5 / np.sqrt(1.5 * 2), abs=1e-12
  )


def test_weight_gradient_spearman_reads_weight_matrices_only():
  rng = np.random.default_rng(1)
  params = {"w": rng.normal(size=(6, 5)), "b": rng.normal(size=5)}
  # |g| decreasing in |w| on the matrix (the paper's "star"); the bias
  # gradients would break the perfect ranking if they were counted.
  grads = {"w": np.exp(-np.abs(params["w"])), "b": 10 + np.abs(params["b"])}
  assert na.weight_gradient_spearman(params, grads) == pytest.approx(-1.0)


def _loss(p, x):
  return jnp.sum(jnp.tanh(x @ p["w"]) ** 2)


def _sweep(tx_of, lrs, xs, shared):
  """NanoAdam runs, one per learning rate, vmapped: (jitted run, jaxpr)."""
  p0 = {"w": jax.random.normal(jax.random.key(0), (8, 16))}

  def step(carry, inputs):
    p, s = carry
    x, t = inputs

    def one(lr, p, s):
      s = na.with_step(s, t) if shared else s
      u, s = tx_of(lr).update(jax.grad(_loss)(p, x), s, p)
      return optax.apply_updates(p, u), s

    return jax.vmap(one)(lrs, p, s), None

  def run(xs):
    s = jax.vmap(lambda lr: tx_of(lr).init(p0))(lrs)
    p = jax.tree.map(lambda v: jnp.broadcast_to(v, (len(lrs),) + v.shape), p0)
    steps = jnp.arange(len(xs), dtype=jnp.int32)
    return jax.lax.scan(step, (p, s), (xs, steps))[0]

  return jax.jit(run), str(jax.make_jaxpr(run)(xs))


def test_with_step_keeps_the_mask_refresh_a_branch_under_vmap():
  lrs = jnp.asarray([1e-3, 1e-2, 1e-1])
  xs = jax.random.normal(jax.random.key(1), (7, 4, 8))

  def tx_of(lr):
    return na.nanoadam(lr, density=0.1, mask_interval=3)

  run, jaxpr = _sweep(tx_of, lrs, xs, shared=True)
  _, batched = _sweep(tx_of, lrs, xs, shared=False)
  # Shared step: the refresh is a `cond`; batched, vmap turns it into a
  # select that runs the top-k of every member at every step.
  assert "cond[" in jaxpr and "cond[" not in batched
  p, s = run(xs)
  np.testing.assert_array_equal(s.step, [len(xs)] * len(lrs))

  @jax.jit
  def single(lr):  # One run of the plain optimizer, unvmapped.
    def step(carry, x):
      q, state = carry
      u, state = tx_of(lr).update(jax.grad(_loss)(q, x), state, q)
      return (optax.apply_updates(q, u), state), None

    q = {"w": jax.random.normal(jax.random.key(0), (8, 16))}
    return jax.lax.scan(step, (q, tx_of(lr).init(q)), xs)[0]

  for r, lr in enumerate(lrs):  # Each member is the single-run optimizer.
    q, state = single(lr)
    np.testing.assert_allclose(p["w"][r], q["w"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(
      s.leaves["w"].indices[r], state.leaves["w"].indices
    )


def test_a_density_change_refreshes_the_mask():
  """With mask_interval past the run, only a change of k re-selects: the
  active prefix is then the bottom-k of |w| at that step."""
  tx = na.nanoadam(
    1e-1,
    density=0.5,
    final_density=0.1,
    total_steps=8,
    density_interval=4,
    mask_interval=100,
  )
  xs = jax.random.normal(jax.random.key(3), (5, 4, 8))

  @jax.jit
  def run(p):
    def step(carry, x):
      p, s = carry
      u, s = tx.update(jax.grad(_loss)(p, x), s, p)
      return (optax.apply_updates(p, u), s), p

    return jax.lax.scan(step, (p, tx.init(p)), xs)

  (_, s), seen = run({"w": jax.random.normal(jax.random.key(2), (8, 16))})
  before = np.abs(np.asarray(seen["w"][4]).ravel())  # At step 4.
  k = int(s.leaves["w"].k)  # Step 4: the density fell from 0.5 to 0.3.
  assert k == int(np.ceil(0.3 * 128 - 1e-6)) < 64
  active = np.sort(np.asarray(s.leaves["w"].indices[:k]))
  np.testing.assert_array_equal(active, np.sort(np.argsort(before)[:k]))
