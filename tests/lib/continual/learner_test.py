"""The continual learners (lib.continual.learner) against dense float64 numpy.

Jung et al., "How to Train Your Compact Memory", NeurIPS 2025: replay, the
random-points K-priors and the compact memory's objective and task boundary.
"""

import itertools
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import continual
from lib.continual import learner as learner_lib
from lib.core import errors


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _softmax(z):
  e = np.exp(z - z.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def _ce(theta, x, y):
  """Per-row -log softmax(x theta)[y], numpy."""
  p = _softmax(x @ theta)
  return -np.log(p[np.arange(len(y)), y])


def _problem(seed=0, n=12, pad=3, d=4, c=3, slots=5):
  r = np.random.default_rng(seed)
  x = np.zeros((n + pad, d))
  x[:n] = r.normal(size=(n, d))
  y = np.zeros(n + pad, np.int32)
  y[:n] = r.integers(0, c, n)
  mask = np.r_[np.ones(n), np.zeros(pad)]
  theta, old = r.normal(size=(2, d, c))
  u = r.normal(size=(slots, d))
  w = np.r_[np.ones(slots - 2), 0.0, 0.0]  # two unused slots
  mem_y = r.integers(0, c, slots).astype(np.int32)
  return x, y, mask, theta, old, u, w, mem_y, n


@pytest.mark.parametrize(
  "first, batch_size, divisor",
  # The Split-CIFAR scripts divide the summed CE by their batch size, 1024,
  # also for a task of fewer points (here 12): CE_sum / 1024 + K / N. A batch
  # of 5 with 12 points is three batches, the last of 2, each divided by 5.
  [(True, 0, 12), (False, 0, 12), (False, 1024, 1024), (True, 5, 15)],
)
def test_objective_of_each_method_matches_dense(first, batch_size, divisor):
  x, y, mask, theta, old, u, w, mem_y, n = _problem()
  delta = 0.3
  ce = _ce(theta, x[:n], y[:n]).sum() / divisor
  l2 = lambda center: 0.5 * delta * np.sum((theta - center) ** 2)
  soft = -np.sum(_softmax(u @ old) * np.log(_softmax(u @ theta)), -1)
  expected = {
    "replay": ce
    + ((l2(0.0) if first else 0.0) + np.sum(w * _ce(theta, u, mem_y))) / n,
    "random_kprior": ce + (l2(0.0) + np.sum(w * soft)) / n,
    "random_kprior_anchored": ce + (l2(old) + np.sum(w * soft)) / n,
    # The weighted one differs at the task boundary only (its memory's w).
    "random_kprior_weighted": ce + (l2(old) + np.sum(w * soft)) / n,
    "compact": ce + (l2(old) + np.sum(w * soft)) / n,
  }
  f = jax.jit(continual.objective, static_argnames=("delta", "batch_size"))
  for i, method in enumerate(continual.METHODS):
    got = f(
      theta,
      i,
      old,
      continual.Memory(u, w),
      mem_y,
      x,
      y,
      mask,
      delta=delta,
      first=first,
      batch_size=batch_size,
    )
    np.testing.assert_allclose(got, expected[method], rtol=1e-12)


def test_batch_loss_and_masked_cross_entropy_match_dense():
  x, y, mask, theta, *_, n = _problem(1)
  np.testing.assert_allclose(
    continual.cross_entropy_sum(theta, x, y, mask),
    _ce(theta, x[:n], y[:n]).sum(),
    rtol=1e-12,
  )
  dense = (_ce(theta, x[:n], y[:n]).sum() + 0.05 * np.sum(theta**2)) / n
  np.testing.assert_allclose(
    continual.batch_loss(theta, x, y, mask, delta=0.1), dense, rtol=1e-12
  )


def _beta(theta, x):
  p = _softmax(x @ theta)
  return np.sum(p * (1 - p), -1)


def test_select_top_beta_skips_padding():
  x, _, mask, theta, *_, n = _problem(2)
  x[n:] = 0.0  # a zero row has the largest beta (uniform softmax)
  got = np.asarray(
    jax.jit(continual.select_top_beta, static_argnums=2)(theta, x, 4, mask)
  )
  want = np.argsort(-_beta(theta, x[:n]), kind="stable")[:4]
  np.testing.assert_array_equal(got, want)


def test_balanced_picks_are_per_seed_and_size_and_balanced():
  r = np.random.default_rng(3)
  labels = [r.integers(0, 2, 30), r.integers(2, 4, 30), r.integers(4, 6, 9)]
  picks = continual.balanced_picks(labels, (2, 5), seeds=3, seed=7)
  assert picks.shape == (2, 2, 3, 5)  # the last task needs no memory
  for t in range(2):
    for i, k in enumerate((2, 5)):
      for s in range(3):
        row = picks[t, i, s]
        assert np.all(row[k:] == 0) and len(set(row[:k])) == k
        counts = np.bincount(labels[t][row[:k]], minlength=6)
        assert counts.max() - counts[counts > 0].min() <= 1
        rng = np.random.default_rng([7, s, t, k])
        np.testing.assert_array_equal(
          row[:k], continual.select_balanced(rng, labels[t], k)
        )


def test_add_vectors_in_slots_and_appended():
  u = np.arange(12.0).reshape(4, 3)
  w = np.array([1.0, 2.0, 0.0, 0.0])
  new_u, new_w = np.ones((2, 3)), np.array([1.0, 0.0])
  mem = continual.add_vectors(continual.Memory(u, w), new_u, new_w, slot=2)
  np.testing.assert_array_equal(mem.u, np.r_[u[:2], new_u])
  np.testing.assert_array_equal(mem.w, [1.0, 2.0, 1.0, 0.0])
  mem = continual.add_vectors(continual.Memory(u[:2], w[:2]), new_u)
  np.testing.assert_array_equal(mem.w, [1.0, 2.0, 1.0, 1.0])


def test_fixed_size_memory_update_equals_appended():
  """Weight-0 slots observe nothing and stay empty: the padded layout the
  sweeps use gives the same memory as appending the fresh vectors."""
  x, _, mask, theta, *_, n = _problem(4, d=5)
  x = x * mask[:, None]
  r = np.random.default_rng(4)
  old = continual.Memory(r.normal(size=(2, 5)), np.array([0.7, 1.3]))
  # Two EM steps: later ones make the columns nearly collinear and amplify
  # rounding differences between the two layouts.
  kw = dict(iters=2, noise=1e-3, eps=1e-4, jitter=1e-6, clamp="probs")
  update = jax.jit(
    continual.update_memory, static_argnames=("iters", "clamp", "slot")
  )
  appended = update(theta, x, old, x[:2], **kw)
  padded = continual.Memory(
    np.r_[old.u, np.zeros((3, 5))], np.r_[old.w, np.zeros(3)]
  )
  slotted = update(
    theta, x, padded, x[:3], np.array([1.0, 1.0, 0.0]), slot=2, **kw
  )
  np.testing.assert_allclose(slotted.u[:4], appended.u, rtol=0, atol=1e-11)
  np.testing.assert_allclose(slotted.w[:4], appended.w, rtol=1e-10)
  assert slotted.w[4] == 0.0


def test_task_boundary_keeps_raw_points_or_fits_them():
  x, y, mask, theta, *_, n = _problem(5, d=4)
  slots = 6
  mem = continual.Memory(np.zeros((slots, 4)), np.zeros(slots))
  picks, pick_w = np.array([3, 7, 0]), np.array([1.0, 1.0, 0.0])
  kw = dict(iters=3, noise=1e-3, eps=1e-4, jitter=1e-6, clamp="memory")

  def fit(method):
    return continual.task_boundary(
      theta,
      method,
      mem,
      np.zeros(slots, np.int32),
      x,
      y,
      mask,
      picks,
      pick_w,
      slot=3,
      top_beta=False,
      **kw,
    )

  boundary = jax.jit(fit)
  static = jax.jit(fit, static_argnums=0)  # a Python int: EM for compact only
  for (i, method), f in itertools.product(
    enumerate(continual.METHODS), (boundary, static)
  ):
    new, mem_y, trace = f(i)
    np.testing.assert_array_equal(mem_y[3:5], y[picks[:2]])
    if method == "compact":
      fitted = continual.update_memory(
        theta, x * mask[:, None], mem, x[picks], pick_w, slot=3, **kw
      )
      np.testing.assert_allclose(new.u, fitted.u, rtol=1e-12)
      np.testing.assert_allclose(new.w, fitted.w, rtol=1e-12)
      # The scatter of the observed rows: sum_i beta(x_i) x_i x_i^T.
      b = _beta(theta, x[:n])
      np.testing.assert_allclose(
        trace.scatter, (x[:n].T * b) @ x[:n], rtol=1e-10
      )
    else:  # the raw points in slots 3..5, with unit weights, or N_t / K
      np.testing.assert_array_equal(new.u[3:6], x[picks])
      each = n / 2 if method == "random_kprior_weighted" else 1.0
      np.testing.assert_allclose(new.w, [0, 0, 0, each, each, 0], rtol=1e-12)
      if f is static:  # no EM: a zero trace
        assert not np.any(trace.scatter) and not np.any(trace.rows)


def test_end_task_and_step_follow_the_protocol():
  x, y, mask, theta, *_ = _problem(6)
  tx = optax.sgd(0.1)
  start = continual.init_learner(jnp.asarray(theta), tx, 4)
  step = jax.jit(continual.learner_step, static_argnums=(1, 6, 7))
  stepped, loss, grad = step(
    start, tx, x, y, mask, learner_lib.REPLAY, 0.3, True
  )
  np.testing.assert_allclose(stepped.theta, theta - 0.1 * grad, rtol=1e-12)
  em = dict(iters=1, noise=1e-3, eps=1e-4, jitter=1e-6, clamp="probs")
  end = jax.jit(
    lambda learner: continual.end_task(
      learner,
      tx,
      x,
      y,
      mask,
      np.array([0, 1]),
      np.ones(2),
      learner_lib.REPLAY,
      0,
      top_beta=False,
      **em,
    )
  )
  ended = end(stepped)
  np.testing.assert_array_equal(ended.theta_old, stepped.theta)
  np.testing.assert_array_equal(ended.memory.w, [1.0, 1.0, 0.0, 0.0])


def test_init_theta_takes_the_default_float_without_a_warning():
  # torch Linear's start U(-1/sqrt(d), 1/sqrt(d)), in jax's default float:
  # float32 for a user without x64 (float64 there warned and truncated).
  key, d = jax.random.key(0), 16
  with jax.enable_x64(False), warnings.catch_warnings():
    warnings.simplefilter("error")
    theta = continual.init_theta(key, d, 3)
  assert theta.dtype == jnp.float32 and theta.shape == (d, 3)
  assert np.all(np.abs(np.asarray(theta)) <= 1 / np.sqrt(d))
  # Under x64 (as compact_memory runs): the same draw as asking for float64.
  theta = continual.init_theta(key, d, 3)
  assert theta.dtype == jnp.float64
  np.testing.assert_array_equal(
    theta, continual.init_theta(key, d, 3, jnp.float64)
  )


def _objective(method, first=True):
  x, y, mask, theta, old, u, w, mem_y, _ = _problem()
  return continual.objective(
    theta,
    method,
    old,
    continual.Memory(u, w),
    mem_y,
    x,
    y,
    mask,
    delta=0.3,
    first=first,
  )


def test_a_method_name_runs_the_method_of_its_id():
  # A name once compared unequal to every id and ran a K-prior for replay.
  for i, name in enumerate(continual.METHODS):
    assert _objective(name) == _objective(i)
    assert continual.method_id(name) == i
  assert _objective("replay") != _objective(learner_lib.RANDOM_KPRIOR)
  x, y, mask, theta, *_ = _problem(6)
  tx = optax.sgd(0.1)
  start = continual.init_learner(jnp.asarray(theta), tx, 4)
  by_name = continual.learner_step(start, tx, x, y, mask, "replay", 0.3, True)
  by_id = continual.learner_step(
    start, tx, x, y, mask, learner_lib.REPLAY, 0.3, True
  )
  np.testing.assert_array_equal(by_name[0].theta, by_id[0].theta)
  assert by_name[1] == by_id[1]


def test_task_boundary_takes_a_method_name():
  x, y, mask, theta, *_ = _problem(5, d=4)
  mem = continual.Memory(np.zeros((6, 4)), np.zeros(6))
  kw = dict(iters=2, noise=1e-3, eps=1e-4, jitter=1e-6, clamp="memory")
  kw.update(slot=3, top_beta=False)
  args = (mem, np.zeros(6, np.int32), x, y, mask, np.array([3, 7, 0]))
  args += (np.array([1.0, 1.0, 0.0]),)
  for name in ("compact", "random_kprior_weighted"):
    got = continual.task_boundary(theta, name, *args, **kw)
    want = continual.task_boundary(
      theta, continual.METHODS.index(name), *args, **kw
    )
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
      np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
  "method, fragment",
  [
    ("nonsense", "method='nonsense'"),
    ("Replay", "method='Replay'"),
    (5, "method=5"),
    (-1, "method=-1"),
    (np.int32(7), "method=7"),
    (jnp.array([0, 9]), "method=[9]"),
    (1.0, "method=1.0"),
  ],
)
def test_an_unknown_method_raises(method, fragment):
  x, y, mask, theta, *_ = _problem(6)
  tx = optax.sgd(0.1)
  start = continual.init_learner(jnp.asarray(theta), tx, 4)
  with pytest.raises(errors.ConfigError, match=re.escape(fragment)) as e:
    _objective(method)
  assert "'compact'" in str(e.value)  # names what is allowed
  with pytest.raises(errors.ConfigError, match=re.escape(fragment)):
    continual.learner_step(start, tx, x, y, mask, method, 0.3, True)
  mem = continual.Memory(np.zeros((6, 4)), np.zeros(6))
  with pytest.raises(errors.ConfigError, match=re.escape(fragment)):
    continual.task_boundary(
      theta,
      method,
      mem,
      np.zeros(6, np.int32),
      x,
      y,
      mask,
      np.array([0, 1]),
      np.ones(2),
      slot=0,
      top_beta=False,
      iters=1,
      noise=1e-3,
      eps=1e-4,
      jitter=1e-6,
      clamp="probs",
    )


@pytest.mark.parametrize("classes, bad", [(3, 3), (3, -1), (1, 2)])
def test_cross_entropy_of_a_label_out_of_range_raises(classes, bad):
  # A label >= C (2 for the binary model) gave a silent NaN loss.
  x, y, mask, *_ = _problem(7)
  theta = np.ones((x.shape[1], classes))
  y = np.minimum(y, 1)
  y[2] = bad
  with pytest.raises(errors.ShapeError, match=f"labels\\[2\\] = {bad}"):
    continual.cross_entropy_sum(theta, x, y, mask)
