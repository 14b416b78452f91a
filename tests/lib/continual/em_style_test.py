"""The EM's two styles: the Split-CIFAR script's and the four-moons notebook's.

"notebook": scale = max(norm, 1) (a column of norm < 1 kept as it is with
weight 1) and the early stop once ||U U^T - W^T W|| rises from step 5 on;
"script": unit vectors, weight norm^2, every iteration (bitwise as before).
Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import continual


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def test_notebook_columns_floor_the_scale_at_one():
  new = jnp.asarray([[0.5, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
  prev = jnp.ones((3, 3))
  active = jnp.asarray([True, True, False])  # the last slot: padding
  u, w = continual.notebook_columns(new, prev, active)
  # norm 0.5: kept as it is, weight 1; norm 2: unit, weight 2^2 = 4.
  np.testing.assert_array_equal(u[0], [0.5, 0.0, 0.0])
  np.testing.assert_array_equal(u[1], [0.0, 1.0, 0.0])
  np.testing.assert_array_equal(u[2], [1.0, 1.0, 1.0])  # padding keeps u
  np.testing.assert_array_equal(w, [1.0, 4.0, 0.0])


def _replay(errors):
  """A step whose error at step j is errors[j]; the carry counts steps."""
  errors = jnp.asarray(errors, jnp.float64)
  return lambda j: (j + 1, errors[j])


@pytest.mark.parametrize(
  "errors, steps",
  [
    # rises at step 7 (4.5 > 4): stops there, after 8 steps
    ([10, 9, 8, 7, 6, 5, 4, 4.5, 3, 2], 8),
    # a rise before step 5 does not stop it; nor does an equal error
    ([10, 9, 8, 9, 6, 5, 5, 4, 3, 2], 10),
    # rises at step 5 itself
    ([10, 9, 8, 7, 6, 7, 4, 3, 2, 1], 6),
  ],
)
def test_until_rise_stops_at_the_first_rise_from_step_5(errors, steps):
  run = jax.jit(lambda: continual.until_rise(_replay(errors), 0, iters=10))
  carry, ran = run()
  assert int(ran) == steps and int(carry) == steps  # that step's carry kept


def test_until_rise_stops_each_vmapped_member_on_its_own():
  errs = jnp.asarray(
    [[10, 9, 8, 7, 6, 5, 7, 3, 2, 1], [10, 9, 8, 7, 6, 5, 4, 3, 2, 3.0]]
  )

  def one(e):
    return continual.until_rise(lambda j: (j + 1, e[j]), 0, iters=10)

  carry, ran = jax.jit(jax.vmap(one))(errs)
  np.testing.assert_array_equal(ran, [7, 10])
  np.testing.assert_array_equal(carry, [7, 10])


def _problem(seed=0, x_scale=1.0, theta_scale=1.0, d=5, c=2, n=40, k=3):
  r = np.random.default_rng(seed)
  theta = jnp.asarray(theta_scale * r.normal(size=(d, c)))
  x = jnp.asarray(x_scale * r.normal(size=(n, d)))
  old = continual.Memory(
    jnp.asarray(r.normal(size=(2, d))), jnp.asarray([0.3, 2.0])
  )
  return theta, x, old, x[:k]


def _hand_notebook(theta, x, old, init, iters, noise, eps, jitter):
  """The notebook's loop written out: tilde columns, EM, scale max(norm, 1),
  error ||U U^T - W^T W|| with U the new data's tilde rows, its running
  minimum and break."""
  clamp = "memory"
  obs = continual.observed_rows(theta, x, old, eps, clamp)
  new = np.asarray(jnp.sqrt(continual.data_beta(theta, x, eps, clamp)))
  uut = (x * new[:, None]).T @ (x * new[:, None])
  u = np.concatenate([old.u, init])
  scale = np.concatenate([np.sqrt(old.w), np.ones(len(init))])
  best, ran = -1.0, 0
  for j in range(iters):
    b = np.sqrt(np.asarray(continual.memory_beta(theta, u, eps, clamp)))
    tilde = u * (scale * b)[:, None]
    tilde = np.asarray(continual.ppca_em_step(tilde.T, obs.T, noise, jitter)).T
    col = tilde / b[:, None]
    scale = np.linalg.norm(col, axis=1)
    scale = np.where(scale > 1, scale, 1.0)
    u = col / scale[:, None]
    err = np.linalg.norm(uut - tilde.T @ tilde)
    ran = j + 1
    if j >= 5 and err > best:
      break
    best = err
  return u, scale**2, ran


@pytest.mark.parametrize(
  "problem, steps",
  [
    ((3, 1.0, 5.0), 14),  # the error rises at step 13
    ((9, 1.0, 5.0), 63),
    ((0, 1.0, 5.0), 6),  # at step 5, the first it may stop at
    ((1, 0.1, 1.0), 100),  # no rise; a column of norm < 1 (weight 1)
  ],
)
def test_notebook_update_matches_the_hand_loop(problem, steps):
  theta, x, old, init = _problem(*problem)
  em = dict(noise=1e-4, eps=1e-4, jitter=1e-6)
  mem, ran = jax.jit(
    lambda *a: continual.update_memory(
      *a,
      iters=100,
      clamp="memory",
      style="notebook",
      return_steps=True,
      **em,
    )
  )(theta, x, old, init)
  u, w, want = _hand_notebook(theta, x, old, init, 100, **em)
  assert int(ran) == want == steps
  np.testing.assert_allclose(mem.u, u, rtol=1e-7, atol=1e-9)
  np.testing.assert_allclose(mem.w, w, rtol=1e-7)
  assert bool(jnp.all(mem.w >= 1.0))
  if steps == 100:
    assert float(jnp.min(mem.w)) == 1.0
    assert float(jnp.min(jnp.linalg.norm(mem.u, axis=1))) < 1.0


def test_notebook_padding_slots_stay_empty_and_members_stop_apart():
  theta, x, old, init = _problem(3)
  pick_w = jnp.asarray([1.0, 1.0, 0.0])
  em = dict(iters=100, clamp="memory", style="notebook", return_steps=True)
  mem, _ = continual.update_memory(theta, x, old, init, pick_w, **em)
  assert float(mem.w[-1]) == 0.0 and bool(jnp.all(mem.w[:-1] >= 1.0))
  np.testing.assert_array_equal(mem.u[-1], init[-1])
  # vmapped over two models: each member's steps as when run alone
  thetas = jnp.stack([theta, -2.0 * theta])
  one = lambda t: continual.update_memory(t, x, old, init, **em)[1]
  alone = [int(one(t)) for t in thetas]
  np.testing.assert_array_equal(jax.jit(jax.vmap(one))(thetas), alone)


def _old_refine(theta, obs, memory, *, iters, noise, eps, jitter, clamp):
  """`refine` as it was before the styles (this repository's, verbatim)."""
  x = obs.T

  def body(_, carry):
    u, w = carry
    b = jnp.sqrt(continual.memory_beta(theta, u, eps, clamp))
    cols = (jnp.sqrt(w) * b)[:, None] * u
    new = continual.ppca_em_step(cols.T, x, noise, jitter).T / b[:, None]
    norm = jnp.linalg.norm(new, axis=-1)
    safe = jnp.where(norm > 0, norm, 1.0)
    u = jnp.where((norm > 0)[:, None], new / safe[:, None], u)
    return u, norm**2

  u, w = jax.lax.fori_loop(0, iters, body, (memory.u, memory.w))
  return continual.Memory(u, w)


@pytest.mark.parametrize("clamp", continual.BETA_CLAMPS)
def test_script_style_is_bitwise_the_old_refine(clamp):
  theta, x, old, init = _problem(4)
  pick_w = jnp.asarray([1.0, 1.0, 0.0])
  em = dict(iters=10, noise=1e-4, eps=1e-4, jitter=1e-6, clamp=clamp)
  new, ran = jax.jit(
    lambda *a: continual.update_memory(
      *a, style="script", return_steps=True, **em
    )
  )(theta, x, old, init, pick_w)

  def before(theta, x, old, init, pick_w):
    obs = continual.observed_rows(theta, x, old, 1e-4, clamp)
    learnable = continual.add_vectors(old, init, pick_w)
    return _old_refine(theta, obs, learnable, **em)

  want = jax.jit(before)(theta, x, old, init, pick_w)
  assert int(ran) == 10
  np.testing.assert_array_equal(new.u, want.u)
  np.testing.assert_array_equal(new.w, want.w)
  np.testing.assert_allclose(jnp.linalg.norm(new.u[:2], axis=1), 1.0)
