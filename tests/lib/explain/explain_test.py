"""lib.explain: the spec's oracles (Haar views, IG completeness, OSIGV)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import explain
from lib.core import errors
from lib.explain import data as explain_data


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_haar_is_orthonormal_and_invertible(level):
  with jax.enable_x64(True):
    x = jnp.asarray(np.random.default_rng(level).standard_normal(24))
    c = explain.dwt(x, level)
    np.testing.assert_allclose(explain.idwt(c, level), x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
      jnp.linalg.norm(c), jnp.linalg.norm(x), rtol=1e-12
    )
    h = explain.haar_matrix(24, level)
    np.testing.assert_allclose(h @ h.T, np.eye(24), atol=1e-12)
  # Level 1 by hand: pairwise sums then differences over sqrt(2).
  c1 = explain.dwt(jnp.array([1.0, 3.0, 2.0, 6.0]), 1)
  np.testing.assert_allclose(
    c1, np.array([4, 8, -2, -4]) / np.sqrt(2), rtol=1e-6
  )


def _small_model():
  w1 = jnp.asarray(np.random.default_rng(0).standard_normal((16, 8)))
  w2 = jnp.asarray(np.random.default_rng(1).standard_normal(8))
  return lambda x: jax.nn.sigmoid(jnp.tanh(x @ w1) @ w2)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_ig_completeness_in_every_view(level):
  with jax.enable_x64(True):
    f = _small_model()
    x = jnp.asarray(np.random.default_rng(2).standard_normal(16))
    x0 = jnp.zeros(16)
    a = explain.view_ig(f, x, x0, level, steps=256)
    np.testing.assert_allclose(jnp.sum(a), f(x) - f(x0), atol=1e-3)
    keystone = jnp.arange(16) < 4
    k = explain.kigv(f, x, x0, level, keystone, steps=256)
    np.testing.assert_allclose(jnp.sum(k), f(x) - f(x0), atol=1e-3)


def test_view_ig_of_a_linear_model_is_closed_form():
  with jax.enable_x64(True):
    rng = np.random.default_rng(3)
    w, x = (
      jnp.asarray(rng.standard_normal(16)),
      jnp.asarray(rng.standard_normal(16)),
    )
    h = jnp.asarray(explain.haar_matrix(16, 2))
    a = explain.view_ig(lambda s: s @ w, x, jnp.zeros(16), 2, steps=4)
    np.testing.assert_allclose(a, (h @ w) * (h @ x), rtol=0, atol=1e-12)


def test_osigv_without_overlap_sums_igv_per_segment():
  a = jnp.arange(12.0)
  pts = explain.osigv(a, window=4, stride=4)
  np.testing.assert_allclose(pts, np.repeat([6.0, 22.0, 38.0], 4))
  # With overlap a point averages the sums of the windows covering it.
  pts = explain.osigv(jnp.ones(8), window=4, stride=2)
  np.testing.assert_allclose(pts, np.full(8, 4.0))


@pytest.mark.parametrize("level", [0, 1])
def test_segment_ig_is_complete_per_window_for_a_nonlinear_model(level):
  # f(x) = sigmoid(w . x): the group IG along the path that moves only
  # window w's coefficients equals f(x) - f(x with w at the baseline).
  with jax.enable_x64(True):
    rng = np.random.default_rng(4)
    n, window, stride = 16, 6, 4  # starts 0, 4, 8 and the tail's 10
    w = jnp.asarray(rng.standard_normal(n))
    x = jnp.asarray(rng.standard_normal(n))
    x0 = jnp.asarray(0.3 * rng.standard_normal(n))
    f = lambda s: jax.nn.sigmoid(s @ w)
    seg = jax.jit(
      lambda x, x0: explain.segment_ig(f, x, x0, level, window, stride, 256)
    )(x, x0)
    c, c0 = explain.dwt(x, level), explain.dwt(x0, level)
    starts = explain.window_starts(n, window, stride)
    assert seg.shape == (len(starts),)
    g = lambda c: f(explain.idwt(c, level))
    for s, got in zip(starts, seg):
      want = g(c) - g(c.at[s : s + window].set(c0[s : s + window]))
      np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    # Not the pointwise sum of IGV: f is not additive.
    summed = explain.view_ig(f, x, x0, level, 256)[starts[0] : window].sum()
    assert abs(float(summed - seg[0])) > 1e-3


@pytest.mark.parametrize("level", [0, 1])
def test_osigv_modes_agree_for_an_additive_model(level):
  # f = sum_i g_i(c_i) in the view's coefficients: every coefficient's IG
  # is the same along any path that moves it alone, so the group IG of a
  # window is the sum of its IGV attributions (oracle 4 in both modes).
  with jax.enable_x64(True):
    rng = np.random.default_rng(5)
    n, window, stride = 16, 4, 2
    a, b = (
      jnp.asarray(rng.standard_normal(n)),
      jnp.asarray(rng.uniform(1, 2, n)),
    )
    f = lambda s: jnp.sum(a * jnp.tanh(b * explain.dwt(s, level)) ** 2)
    x = jnp.asarray(rng.standard_normal(n))
    x0 = jnp.zeros(n)
    seg = explain.segment_ig(f, x, x0, level, window, stride, 32)
    igv = explain.view_ig(f, x, x0, level, 32)
    starts = explain.window_starts(n, window, stride)
    sums = np.asarray([igv[s : s + window].sum() for s in starts])
    np.testing.assert_allclose(seg, sums, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
      explain.osigv_segment_ig(f, x, x0, level, window, stride, 32),
      explain.osigv(igv, window, stride),
      rtol=0,
      atol=1e-10,
    )
    # Without overlap each point gets its segment's score.
    pts = explain.points_from_segments(jnp.arange(4.0), n, 4, 4)
    np.testing.assert_allclose(pts, np.repeat(np.arange(4.0), 4))


def test_segment_ig_refuses_bad_steps_and_segment_counts():
  f, x = jnp.sum, jnp.ones(8)
  with pytest.raises(errors.ConfigError, match="steps >= 1"):
    explain.segment_ig(f, x, 0 * x, 0, 4, 2, steps=0)
  with pytest.raises(errors.ConfigError, match="stride 4 > window 2"):
    explain.segment_ig(f, x, 0 * x, 0, 2, 4)
  with pytest.raises(errors.ShapeError, match="2 segment scores for 3"):
    explain.points_from_segments(jnp.ones(2), 8, 4, 2)


def test_planted_burst_is_localised_by_time_ig_of_a_matched_filter():
  # A model that is exactly a matched filter on the window: IG's top-k must
  # sit inside the window far more often than a random ranking.
  x, y, window = explain.sine_burst(0, 64, length=64, start=20, width=16)
  w = jnp.where(jnp.asarray(window), 1.0, 0.0) * jnp.asarray(x[y == 1].mean(0))
  f = lambda s: jax.nn.sigmoid(s @ w)
  xs = jnp.asarray(x[y == 1][:8])
  prec = [
    float(
      explain.localisation_precision(
        jnp.abs(explain.integrated_gradients(f, s, jnp.zeros(64), 32)),
        jnp.asarray(window),
        16,
      )
    )
    for s in xs
  ]
  assert np.mean(prec) > 0.9  # random: 16 / 64 = 0.25


@pytest.mark.parametrize(
  "case, error, match",
  [
    ("length", errors.ShapeError, "divisible by 8, got 20"),
    ("nan", errors.NonFiniteError, "NaN or infinite"),
  ],
)
def test_bad_series_fail_in_one_line(case, error, match):
  x = np.zeros(20) if case == "length" else np.array([0.0, np.nan, 1.0, 2.0])
  with pytest.raises(error, match=match):
    explain.check_series(x, 3 if case == "length" else 1)


def test_window_longer_than_series_fails_in_one_line():
  with pytest.raises(
    errors.ShapeError, match="window 16 is longer than the series"
  ):
    explain.osigv(jnp.zeros(8), window=16, stride=4)


def test_stride_longer_than_window_fails_in_one_line():
  # Points 2, 3 and 6, 7 would be in no window (score 0 / 0 = NaN).
  with pytest.raises(errors.ConfigError, match="stride 4 > window 2"):
    explain.osigv(jnp.ones(8), window=2, stride=4)


@pytest.mark.parametrize(
  "metric, count, match",
  [
    ("deletion", 0, "points must be >= 2, got 0"),
    ("deletion", 1, "points must be >= 2, got 1"),
    ("insertion", 1, "points must be >= 2, got 1"),
    ("jaccard", 0, "k must be >= 1, got 0"),
    ("localisation", 0, "k must be >= 1, got 0"),
  ],
)
def test_empty_curves_and_top_sets_fail_in_one_line(metric, count, match):
  # Each was a mean over no point or 0 / 0: NaN.
  x, scores = jnp.arange(8.0), jnp.arange(8.0)
  call = {
    "deletion": lambda: explain.deletion_auc(
      jnp.sum, x, 0 * x, scores, 0, count
    ),
    "insertion": lambda: explain.insertion_auc(
      jnp.sum, x, 0 * x, scores, 0, count
    ),
    "jaccard": lambda: explain.jaccard_top_k(scores, scores, count),
    "localisation": lambda: explain.localisation_precision(
      scores, scores > 3, count
    ),
  }[metric]
  with pytest.raises(errors.ConfigError, match=match):
    call()


def test_two_point_deletion_auc_is_the_trapezoid_of_its_ends():
  # Fractions 0 and 1: the mean of f(x) (nothing deleted) and f(baseline).
  x = jnp.arange(1.0, 9.0)
  auc = explain.deletion_auc(jnp.sum, x, jnp.zeros(8), x, 0, 2)
  np.testing.assert_allclose(auc, 36.0 / 2, rtol=1e-6)
  np.testing.assert_allclose(explain.jaccard_top_k(x, x, 1), 1.0)


# ----------------------------------------------------------------------------
# Cross-view refinement (lib.explain.refine).
# ----------------------------------------------------------------------------


def test_keystone_supports_follow_the_haar_basis():
  n = 16
  scores = jnp.zeros(n).at[0].set(5.0)  # the first level-2 approximation
  t = explain.keystone_time_mask(scores, 2, 1)
  np.testing.assert_array_equal(np.asarray(t), np.arange(n) < 4)
  # Seen from the time domain the keystone is the same points; from level 1
  # the coefficients whose basis touches points 0..3 (2 approx + 2 details).
  np.testing.assert_array_equal(
    np.asarray(explain.keystone_in_view(t, 0)), np.asarray(t)
  )
  want = np.zeros(n, bool)
  want[[0, 1, 8, 9]] = True
  np.testing.assert_array_equal(
    np.asarray(explain.keystone_in_view(t, 1)), want
  )


def test_greedy_deletion_on_a_linear_model_matches_brute_force():
  n = 12
  w = jnp.asarray(np.random.default_rng(0).normal(size=n))
  x = jnp.ones(n)
  f = lambda s: jnp.dot(w, s)
  cands = jnp.asarray(np.eye(n, dtype=bool))  # single points
  order, probs, mask = explain.greedy_deletion(f, x, jnp.zeros(n), cands, 3, 5)
  # Deleting point i lowers f by w_i: greedy takes the 3 largest w, then stops.
  top3 = np.argsort(-np.asarray(w))[:3]
  np.testing.assert_array_equal(np.asarray(order[:3]), top3)
  np.testing.assert_array_equal(np.asarray(order[3:]), [-1, -1])
  assert int(mask.sum()) == 3
  np.testing.assert_allclose(
    probs[2], float(w.sum() - np.sort(np.asarray(w))[::-1][:3].sum()), rtol=1e-5
  )
  assert np.all(np.diff(np.asarray(probs)) <= 1e-6)
  with pytest.raises(errors.ShapeError, match="candidates"):
    explain.greedy_deletion(f, x, jnp.zeros(n), cands[:, :5], 3, 2)


@pytest.mark.parametrize("rule", ["signed", "abs"])
def test_refine_series_on_a_linear_model_is_closed_form(rule):
  # f(s) = w . s at x = 1 against a zero baseline: deleting point i lowers f
  # by w_i, time IG is w, and every level-1 support is a pair holding a -9,
  # so greedy takes the singletons 0, 3, 4 (the optimum) and then stops.
  # The signed rankings delete the same 3 points (the k largest w_i); the
  # earlier |w| rankings delete three -9s, which raises f.
  w = np.asarray([5.0, -9, -9, 4, 3, -9, -9, -9], np.float32)
  n, k = w.size, 3
  f = lambda s: jnp.dot(jnp.asarray(w), s)
  x, base = jnp.ones(n), jnp.zeros(n)
  h = explain.haar_matrix(n, 1)
  igv = {0: jnp.asarray(w), 1: jnp.asarray((h @ np.ones(n)) * (h @ w))}
  rnd = np.random.default_rng(0).uniform(size=n).astype(np.float32)
  out = explain.refine_series(
    f, x, base, igv[0], 0, igv, jnp.asarray(rnd), levels=(0, 1), budget=k,
    candidates=n, greedy_steps=5, ig_steps=8, deletion_points=5,
    budget_rule=rule,
  )  # fmt: skip
  top = np.argsort(-(w if rule == "signed" else np.abs(w)))[:k]
  want = {
    "budget/none": w.sum(),
    "budget/greedy": w.sum() - 12.0,
    "budget/greedy_time": w.sum() - 12.0,
    "budget/time_ig": w.sum() - w[top].sum(),
    "budget/best_view": w.sum() - w[top].sum(),
    "budget/random": w.sum() - w[np.argsort(-rnd)[:k]].sum(),
    "greedy_rounds": 3,
  }
  for key, value in want.items():
    np.testing.assert_allclose(float(out[key]), value, rtol=1e-5, err_msg=key)
  assert set(out) == set(want) | {"deletion/kigv1"}
  assert np.isfinite(float(out["deletion/kigv1"]))


def test_refine_series_scores_greedy_by_its_best_round():
  # One point lowers f by 5, every other raises it by 1: greedy deletes the
  # first, then must add two that raise f (budget 3, single-point
  # candidates). Its best union is the first round's, f = sum(w) - 5; the
  # last round's is sum(w) - 3 (the "abs" rule's reading).
  w = np.asarray([5.0, -1, -1, -1], np.float32)
  f = lambda s: jnp.dot(jnp.asarray(w), s)
  x, base, n = jnp.ones(4), jnp.zeros(4), 4
  igv = {0: jnp.asarray(w)}
  got = {
    rule: float(
      explain.refine_series(
        f,
        x,
        base,
        igv[0],
        0,
        igv,
        jnp.zeros(n),
        levels=(0,),
        budget=3,
        candidates=n,
        greedy_steps=3,
        ig_steps=4,
        deletion_points=3,
        budget_rule=rule,
      )["budget/greedy"]  # fmt: skip
    )
    for rule in ("signed", "abs")
  }
  np.testing.assert_allclose(got["signed"], w.sum() - 5, rtol=1e-6)
  np.testing.assert_allclose(got["abs"], w.sum() - 3, rtol=1e-6)
  with pytest.raises(errors.ConfigError, match="budget_rule"):
    explain.refine_series(
      f, x, base, igv[0], 0, igv, jnp.zeros(n), levels=(0,), budget=3,
      candidates=n, greedy_steps=3, budget_rule="max",
    )  # fmt: skip


@pytest.mark.parametrize(
  "body, error, match",
  [
    # Each was a bare ValueError from numpy or float(), or (NaN) no error.
    ("1,2,3:a\n1,2:b\n", errors.ShapeError, "line 3: 2 values"),
    ("1,2,x:a\n", errors.ConfigError, "line 2: 'x' is not a number"),
    ("1,2,3\n", errors.ConfigError, "line 2: no ':label'"),
    ("1,NaN,3:a\n", errors.NonFiniteError, "line 2: a NaN"),
    ("", errors.ConfigError, "holds no series"),
  ],
)
def test_read_ts_names_the_bad_line(tmp_path, body, error, match):
  path = tmp_path / "x.ts"
  path.write_text("@data\n" + body)
  with pytest.raises(error, match=match):
    explain_data.read_ts(str(path))


def test_read_ts_reads_a_good_file(tmp_path):
  path = tmp_path / "x.ts"
  path.write_text("@problemName x\n# c\n@data\n1,2.5,3:a\n4,5,6:b\n")
  x, labels = explain_data.read_ts(str(path))
  np.testing.assert_array_equal(x, [[1, 2.5, 3], [4, 5, 6]])
  assert labels.tolist() == ["a", "b"]


def test_integrated_gradients_needs_a_step():
  # steps=0 averaged no gradients: NaN attributions, silently, through
  # view_ig and kigv too. One midpoint step is exact for a quadratic:
  # d/dx sum x^2 at x/2 is x, times (x - 0).
  f = lambda s: jnp.sum(s**2)
  x = jnp.arange(1.0, 5.0)
  np.testing.assert_allclose(
    explain.integrated_gradients(f, x, 0 * x, steps=1), x**2
  )
  with pytest.raises(errors.ConfigError, match="steps >= 1"):
    explain.view_ig(f, x, 0 * x, 1, steps=0)


def test_load_ucr_multiple_must_be_positive():
  # multiple=0 raised ZeroDivisionError from the padding arithmetic.
  with pytest.raises(errors.ConfigError, match="multiple must be >= 1"):
    explain.load_ucr("GunPoint", multiple=0)


def test_haar_views_of_an_integer_series():
  # H was cast to the input's integer dtype: every 1/sqrt(2) became 0 and
  # dwt / idwt / to_time returned zeros, silently.
  x = jnp.arange(8)
  c = explain.dwt(x, 1)
  s2 = np.sqrt(2.0)
  want = [1 / s2, 5 / s2, 9 / s2, 13 / s2, -1 / s2, -1 / s2, -1 / s2, -1 / s2]
  np.testing.assert_allclose(c, want, rtol=1e-6)
  np.testing.assert_allclose(explain.idwt(c, 1), x, atol=1e-5)
  np.testing.assert_allclose(
    explain.idwt(jnp.eye(8, dtype=int)[0], 1)[:2], 1 / s2
  )
  assert float(jnp.sum(explain.to_time(jnp.ones(8, int), 1))) > 0
