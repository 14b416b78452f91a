"""lib.alignment.scaling and the data models: oracles from the math (float64)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats as scipy_stats

from lib import alignment
from lib.core import rng


def test_q_star_interpolates_on_log_q():
  q = [1, 2, 4, 8]
  assert alignment.q_star(q, [0.5, 0.6, 0.8, 0.9], 0.5) == 1.0
  # Halfway in accuracy between Q = 2 (0.6) and Q = 4 (0.8): sqrt(2 * 4).
  np.testing.assert_allclose(
    alignment.q_star(q, [0.5, 0.6, 0.8, 0.9], 0.7), math.sqrt(8)
  )
  assert math.isnan(alignment.q_star(q, [0.5, 0.6, 0.7, 0.72], 0.75))
  # Accuracy on a known line in log2 Q: 0.5 + 0.1 log2 Q reaches 0.75 at
  # log2 Q = 2.5 exactly.
  grid = [1, 2, 4, 8, 16]
  line = [0.5 + 0.1 * math.log2(x) for x in grid]
  np.testing.assert_allclose(
    alignment.q_star(grid, line, 0.75), 2**2.5, rtol=1e-12
  )


def test_fit_law_recovers_exact_laws():
  ks = np.array([1, 2, 4, 8, 16])
  log_law = alignment.fit_law(ks, 3.0 + 2.0 * np.log(ks))
  np.testing.assert_allclose([log_law["a"], log_law["b"]], [3.0, 2.0])
  assert log_law["points"] == 5 and log_law["sse_log"] < 1e-20
  assert log_law["sse_lin"] - log_law["sse_log"] > 0
  lin_law = alignment.fit_law(ks, 1.0 + 0.5 * ks)
  np.testing.assert_allclose([lin_law["a_lin"], lin_law["b_lin"]], [1.0, 0.5])
  assert lin_law["sse_lin"] - lin_law["sse_log"] < 0
  two = alignment.fit_law(ks, [1.0, np.nan, np.nan, np.nan, 2.0])
  assert two["points"] == 2 and math.isnan(two["b"])


def test_scaling_law_recovers_each_seeds_log_k_law():
  # Accuracy linear in log Q through the target at Q* = a_s + b_s log K, so
  # Q* is read back exactly and each seed's fit returns (a_s, b_s).
  ks, qs, target = [1, 2, 4, 8], [1, 2, 4, 8, 16, 32, 64], 0.9
  a, b = np.array([2.0, 3.0, 2.5]), np.array([1.0, 2.0, 1.5])
  star = a[:, None] + b[:, None] * np.log(ks)  # [S, K]
  acc = target + 0.05 * (np.log(qs) - np.log(star)[..., None])  # [S, K, Q]
  out = alignment.scaling_law(ks, qs, acc, target, fixed_q=4)
  np.testing.assert_allclose(out["fit_b"]["seeds"], b, rtol=1e-10)
  np.testing.assert_allclose(out["fit_a"]["seeds"], a, rtol=1e-10)
  np.testing.assert_allclose(out["fit_b"]["mean"], b.mean(), rtol=1e-10)
  assert out["q_star_reached_all"]
  for i, k in enumerate(ks):
    np.testing.assert_allclose(out["q_star"][f"K{k}"]["seeds"], star[:, i])
  assert min(out["sse_lin_minus_log"]["seeds"]) > 0
  change = b * np.log(8) / star.mean(1)
  np.testing.assert_allclose(out["fit_change_rel"]["seeds"], change)
  at4 = acc[:, :, 2]  # Q = 4: accuracy falls as Q* grows with K
  np.testing.assert_allclose(
    out["first_minus_last_k"]["seeds"], at4[:, 0] - at4[:, -1]
  )
  assert out["max_rise_in_k"] < 0


@jax.jit
def _value_problem(key):
  """3 values in d = 6, 4 pairs of each sign a value, noise 0.7; W random."""
  train, test = alignment.value_model(key, 3, 6, 4, offset=0.3, noise=0.7)
  w = jax.random.normal(rng.stream(key, "w"), (6, 6), jnp.float64)
  return train, test, w, jnp.zeros((6, 6), jnp.float64)


def test_value_model_tests_on_the_cluster_means():
  with jax.enable_x64(True):
    key = jax.random.key(0)
    train, test, _, _ = _value_problem(key)
    values = rng.stream(key, "values")  # the geometry's named stream
    c, b = jax.jit(alignment.value_directions, static_argnums=(1, 2))(
      values, 3, 6, 0.3
    )
    sign = np.asarray(test["sign"])[:, None]
    means = sign * np.asarray(c)[np.asarray(test["cluster"])] + np.asarray(b)
    np.testing.assert_allclose(test["g"], means, atol=1e-12)
    assert train["g"].shape == (3 * 2 * 4, 6)


def test_value_accuracy_exact_and_sampled():
  with jax.enable_x64(True):
    _, test, w, w_ref = _value_problem(jax.random.key(1))
    noise = 0.7
    accuracy = jax.jit(
      alignment.value_accuracy, static_argnums=3, static_argnames="noise"
    )
    exact = accuracy(w, w_ref, test, 3, beta=0.1, noise=noise)
    # Phi(delta^T mean / (noise |delta|)) per cluster, averaged per value.
    dw = np.asarray(w - w_ref)
    y_w, y_l = np.asarray(test["y_w"]), np.asarray(test["y_l"])
    delta = dw[y_w] - dw[y_l]
    z = np.sum(delta * np.asarray(test["g"]), 1) / (
      noise * np.linalg.norm(delta, axis=1)
    )
    p = scipy_stats.norm.cdf(z)
    cluster = np.asarray(test["cluster"])
    want = [p[cluster == k].mean() for k in range(3)]
    np.testing.assert_allclose(exact, want, rtol=1e-10)
    # Counting r > 0 on the means: the sign of delta^T mean per pair.
    counted = accuracy(w, w_ref, test, 3, beta=0.1, noise=None)
    want = [(z[cluster == k] > 0).mean() for k in range(3)]
    np.testing.assert_allclose(counted, want)


def test_value_block_loss_matches_the_gathered_loss():
  with jax.enable_x64(True):
    train, _, w, w_ref = _value_problem(jax.random.key(2))
    mask = alignment.first_q_mask(3, 8, 4).astype(jnp.float64)
    both = lambda kind: (
      alignment.value_block_loss(
        w, w_ref, train["g"], train["sign"], 0.5, kind, mask
      ),
      alignment.loss(
        w, w_ref, train["g"], train["y_w"], train["y_l"], 0.5, kind, mask
      ),
    )
    for kind in alignment.LOSSES:
      block, gathered = jax.jit(both, static_argnums=0)(kind)
      np.testing.assert_allclose(block, gathered, rtol=1e-12)


def test_concept_pairs_layout():
  embed = lambda tokens: tokens[:, :2].astype(jnp.float32)

  @jax.jit
  def draw(key):
    world = alignment.concept_world(rng.stream(key, "world"), 3, 20, 4)
    return world, alignment.concept_pairs(key, embed, world, 3, 5, 8, 20, 1.0)

  world, pairs = jax.device_get(draw(jax.random.key(1)))
  np.testing.assert_array_equal(pairs["cluster"], np.repeat(np.arange(3), 5))
  np.testing.assert_array_equal(pairs["g"][:, 0], pairs["cluster"])
  assert set(np.asarray(pairs["y_w"]).tolist()) <= {0, 1}
  np.testing.assert_array_equal(pairs["y_l"], 1 - pairs["y_w"])
  # Purity 1: the first filler is from the stance's subset (y_w 0 = +1).
  for i in range(15):
    side = int(pairs["y_w"][i])
    subset = np.asarray(world[int(pairs["cluster"][i]), side]).tolist()
    assert int(pairs["g"][i, 1]) in subset
