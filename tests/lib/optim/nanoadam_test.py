"""NanoAdam oracles (extended spec section 1)."""

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.core.errors import ConfigError
from lib.optim import nanoadam as na


def _params():
  return {
    "w": jax.random.normal(jax.random.key(0), (8, 16)),
    "b": jax.random.normal(jax.random.key(1), (16,)),
  }


def _loss(p, x):
  return jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2)


_XS = jax.random.normal(jax.random.key(2), (20, 4, 8))


def _train(tx, params, xs=_XS):
  def step(carry, x):
    p, s = carry
    g = jax.grad(_loss)(p, x)
    u, s = tx.update(g, s, p)
    new = optax.apply_updates(p, u)
    return (new, s), (p, new, s)

  return jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), xs))(params)


def test_density_one_is_bitwise_optax_adam():
  # At density 1 every leaf is delegated to optax.scale_by_adam: this checks
  # the dense path (and its bookkeeping) only. The masked path has its own
  # oracle below.
  params = _params()
  (pa, _), _ = _train(optax.adam(1e-2), params)
  (pn, sn), _ = _train(na.nanoadam(1e-2, density=1.0, mask_interval=1), params)
  jax.tree.map(np.testing.assert_array_equal, pa, pn)
  # And with a learning-rate schedule and weight decay off.
  sched = optax.linear_schedule(1e-2, 1e-3, 20)
  (pa, _), _ = _train(optax.adam(sched), params)
  (pn, _), _ = _train(na.nanoadam(sched, density=1.0), params)
  jax.tree.map(np.testing.assert_array_equal, pa, pn)


def _fixed_mask(params, density, criterion, state):
  """The mask an oracle expects: numpy bottom-/top-k, or the random draw."""
  masks = {}
  for name, p in params.items():
    flat = np.abs(np.ravel(np.asarray(p)))
    k = int(np.ceil(density * flat.size))
    if criterion == "smallest":
      idx = np.argsort(flat, kind="stable")[:k]
    elif criterion == "largest":
      idx = np.argsort(-flat, kind="stable")[:k]
    else:  # random: the draw is the optimizer's; the update is the oracle's.
      idx = np.asarray(state.leaves[name].indices)
      assert idx.size == k and np.unique(idx).size == k
    m = np.zeros(flat.size, bool)
    m[idx] = True
    masks[name] = m.reshape(p.shape)
  return masks


@pytest.mark.parametrize("criterion", ["smallest", "random"])
def test_fixed_mask_equals_optax_adam_on_masked_gradients(
  criterion, fast_compile
):
  """The masked path: with a fixed mask M (density 0.3, never refreshed after
  step 0), NanoAdam's trajectory equals optax.adam fed g * M, and the
  coordinates outside M never move (bit-identical)."""
  density, lr, steps = 0.3, 3e-2, _XS.shape[0]
  params = _params()
  tx = na.nanoadam(
    lr, density=density, mask_interval=10**6, criterion=criterion, seed=7
  )
  masks = _fixed_mask(params, density, criterion, tx.init(params))
  _, (_, nano, states) = _train(tx, params)

  ref_tx = optax.adam(lr)

  def ref_step(carry, x):
    p, s = carry
    g = jax.grad(_loss)(p, x)
    g = jax.tree.map(lambda gi, m: gi * m, g, masks)
    u, s = ref_tx.update(g, s, p)
    new = optax.apply_updates(p, u)
    return (new, s), new

  _, ref = jax.jit(lambda p: jax.lax.scan(ref_step, (p, ref_tx.init(p)), _XS))(
    params
  )
  for name, p0 in params.items():
    m = np.ravel(masks[name])
    got = np.asarray(nano[name]).reshape(steps, -1)
    want = np.asarray(ref[name]).reshape(steps, -1)
    np.testing.assert_allclose(got[:, m], want[:, m], rtol=1e-6, atol=1e-7)
    # The masked path was taken: exactly the coordinates outside the mask
    # (70% of them) are bit-identical to the start, every masked one moved.
    start = np.ravel(np.asarray(p0)).view(np.uint32)
    last = got[-1].view(np.uint32)
    np.testing.assert_array_equal(last[~m], start[~m])
    assert np.all(last[m] != start[m])
    unchanged = np.mean(last == start)
    assert unchanged == 1 - m.mean() and 0.65 < unchanged < 0.72, unchanged
    # The mask stayed fixed for all steps.
    idx = np.asarray(states.leaves[name].indices)
    for t in range(steps):
      assert set(idx[t]) == set(np.flatnonzero(m)), (name, t)


def test_frozen_coordinates_bit_identical():
  tx = na.nanoadam(1e-1, density=0.1, mask_interval=4)
  _, (before, after, states) = _train(tx, _params())
  for name in ("w", "b"):
    leaf = states.leaves[name]
    for t in range(_XS.shape[0]):
      sel = np.zeros(before[name][t].size, bool)
      sel[np.asarray(leaf.indices[t][: int(leaf.k[t])])] = True
      b, a = np.ravel(before[name][t]), np.ravel(after[name][t])
      np.testing.assert_array_equal(
        a[~sel].view(np.uint32), b[~sel].view(np.uint32)
      )
      assert np.all(a[sel] != b[sel])  # selected entries do move
    k = na.num_selected(0.1, before[name][0].size)
    assert int(leaf.k[0]) == k


def test_mask_is_exact_per_layer_bottom_k_with_ties():
  r = np.random.default_rng(0)
  # Rounded values create ties; the tie-break is the lower flat index.
  params = {
    "a": jnp.asarray(np.round(r.normal(size=(10, 12)), 1), jnp.float32),
    "b": jnp.asarray(np.round(r.normal(size=(37,)), 1), jnp.float32),
  }
  tx = na.nanoadam(1e-3, density=0.2)
  state = tx.init(params)
  masks = na.bottom_k_mask(params, density=0.2)
  for name, p in params.items():
    flat = np.abs(np.ravel(np.asarray(p)))
    k = int(np.ceil(0.2 * flat.size))
    expected = np.argsort(flat, kind="stable")[:k]
    np.testing.assert_array_equal(
      np.asarray(state.leaves[name].indices), expected
    )
    assert np.asarray(masks[name]).sum() == k
    np.testing.assert_array_equal(
      np.flatnonzero(np.ravel(masks[name])), np.sort(expected)
    )
  # Largest criterion: the top-k.
  idx = na.select_indices(params["b"], 5, criterion="largest")
  flat = np.abs(np.asarray(params["b"]))
  assert set(np.asarray(idx)) == set(np.argsort(-flat, kind="stable")[:5])


def test_mask_is_gradient_free():
  assert "grad" not in " ".join(inspect.signature(na.select_indices).parameters)
  assert "grad" not in " ".join(inspect.signature(na.bottom_k_mask).parameters)
  params = _params()
  tx = na.nanoadam(1e-2, density=0.3)
  s = tx.init(params)
  g1 = jax.tree.map(jnp.ones_like, params)
  g2 = jax.tree.map(
    lambda p: -3.0 * jnp.arange(p.size).reshape(p.shape), params
  )
  update = jax.jit(tx.update)
  _, s1 = update(g1, s, params)
  _, s2 = update(g2, s, params)
  for name in params:
    np.testing.assert_array_equal(
      s1.leaves[name].indices, s2.leaves[name].indices
    )


def test_state_size_reflects_density():
  params = _params()
  adam_floats = na.state_floats(optax.adam(1e-3).init(params))
  assert adam_floats == 2 * (8 * 16 + 16)
  for density in (0.05, 0.25, 0.5):
    state = na.nanoadam(1e-3, density=density).init(params)
    k = na.num_selected(density, 128) + na.num_selected(density, 16)
    assert na.state_floats(state) == 2 * k
  state = na.nanoadam(
    1e-3, density=0.25, exclude=lambda path, p: p.ndim == 1
  ).init(params)
  assert na.state_floats(state) == 2 * (32 + 16)


def test_density_schedule_and_moment_policies():
  params = _params()
  tx = na.nanoadam(
    1e-2,
    density=0.5,
    final_density=0.1,
    total_steps=20,
    density_interval=5,
    mask_interval=100,
  )
  _, (_, _, states) = _train(tx, params)
  ks = np.asarray(states.leaves["w"].k)
  for t, k in enumerate(ks):
    d = 0.1 + 0.4 * 0.5 * (1 + np.cos(np.pi * ((t // 5) * 5) / 20))
    assert k == int(np.ceil(d * 128 - 1e-6)), (t, k)
  assert ks[0] == 64 and ks[-1] < ks[0]
  assert states.leaves["w"].mu.shape == (20, 64)  # static shapes in scan
  # Inactive entries hold no moments.
  mu = np.asarray(states.leaves["w"].mu[-1])
  assert np.all(mu[ks[-1] :] == 0)
  # Moment policy: after a refresh at step 5, "carry" keeps the counts of
  # entries that stay selected; "reset" restarts every count.
  counts = {}
  for policy in ("carry", "reset"):
    tx = na.nanoadam(
      1e-1, density=0.3, mask_interval=5, moments_on_change=policy
    )
    _, (_, _, states) = _train(tx, params)
    counts[policy] = np.asarray(states.leaves["w"].count[5])
  assert np.all(counts["reset"] == 1)
  assert counts["carry"].max() == 6 and counts["carry"].min() == 1


def test_bad_input_errors():
  for d in (0.0, -0.1, 1.5, float("nan")):
    with pytest.raises(ConfigError, match="density"):
      na.nanoadam(1e-3, density=d)
  with pytest.raises(ConfigError, match="final_density"):
    na.nanoadam(1e-3, density=0.1, final_density=0.2, total_steps=10)
  with pytest.raises(ConfigError, match="total_steps"):
    na.nanoadam(1e-3, density=0.2, final_density=0.1)
  with pytest.raises(ConfigError, match="mask_interval"):
    na.nanoadam(1e-3, density=0.2, mask_interval=0)
  with pytest.raises(ConfigError, match="criterion"):
    na.nanoadam(1e-3, density=0.2, criterion="median")
  with pytest.raises(ConfigError, match="moments_on_change"):
    na.nanoadam(1e-3, density=0.2, moments_on_change="keep")
  with pytest.raises(ConfigError, match="params"):
    tx = na.nanoadam(1e-3, density=0.2)
    tx.update(_params(), tx.init(_params()))


def test_inject_hyperparams_with_density_static():
  # optax.inject_hyperparams turns every numeric argument (defaults too) into
  # an array, traced under jit: mask_interval and weight_decay must work so.
  params = _params()
  inject = optax.inject_hyperparams(na.nanoadam, static_args="density")
  # Oracle at density 1: optax.adam in the same wrapper (weight decay 0 adds
  # an exact 0 * p).
  adam = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)
  (pa, _), _ = _train(adam, params)
  (pi, _), _ = _train(inject(learning_rate=1e-2, density=1.0), params)
  jax.tree.map(np.testing.assert_array_equal, pa, pi)
  # Masked: the wrapped run is the plain one (up to the rounding of traced
  # instead of constant hyperparameters).
  kw = dict(density=0.25, mask_interval=3, weight_decay=0.1)
  (pn, _), _ = _train(na.nanoadam(1e-2, **kw), params)
  (pi, si), _ = _train(inject(learning_rate=1e-2, **kw), params)
  close = functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6)
  jax.tree.map(close, pn, pi)
  assert int(si.hyperparams["mask_interval"]) == 3
  # density sizes the state: without static_args a message says what to do.
  with pytest.raises(ConfigError, match="static_args"):
    tx = optax.inject_hyperparams(na.nanoadam)(learning_rate=1e-2, density=0.5)
    tx.init(params)


def test_bf16_grads_of_f32_weights_give_f32_updates():
  # Mixed precision: optax.adam (and NanoAdam's dense path) return f32
  # updates; the masked path rounded them to the grads' bf16. Oracle: on the
  # selected entries the first step is optax.adam's on the same grads.
  params = _params()
  grads = jax.tree.map(lambda p: jnp.cos(3 * p).astype(jnp.bfloat16), params)
  tx = na.nanoadam(1e-2, density=0.25)
  upd, state = jax.jit(tx.update)(grads, tx.init(params), params)
  adam = optax.adam(1e-2)
  want, _ = jax.jit(adam.update)(grads, adam.init(params), params)
  for name in params:
    assert upd[name].dtype == jnp.float32
    idx = np.asarray(state.leaves[name].indices)
    got = np.ravel(np.asarray(upd[name]))
    np.testing.assert_allclose(
      got[idx], np.ravel(np.asarray(want[name]))[idx], rtol=1e-6
    )
    assert np.count_nonzero(got) == idx.size
