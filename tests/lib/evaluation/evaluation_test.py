"""lib.evaluation: the spec's oracles (analytic log-loss, weights, NB, AUC)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import evaluation as ev
from lib.core import errors


def _binary_entropy(p):
  return -(p * np.log(p) + (1 - p) * np.log1p(-p))


def test_group_log_loss_matches_gauss_hermite():
  # Covariate shift: A = U, X | A ~ N(mu_a, 1), Bayes score sigma(0.5 x);
  # the expected log-loss of group a is E[H_b(sigma(0.5 X))], X ~ N(mu_a, 1).
  st = ev.setting("covariate_shift")
  d = {
    k: np.asarray(v)
    for k, v in ev.simulate(jax.random.key(0), st, 200_000).items()
  }
  nodes, weights = np.polynomial.hermite_e.hermegauss(64)
  weights = weights / weights.sum()
  ce = -(d["y"] * np.log(d["p_y"]) + (1 - d["y"]) * np.log1p(-d["p_y"]))
  for a, mu in enumerate(st.mu_x):
    analytic = float(
      np.sum(weights * _binary_entropy(1 / (1 + np.exp(-0.5 * (mu + nodes)))))
    )
    in_a = d["a"] == a
    mc = ev.group_metrics(
      jnp.asarray(d["p_y"]), jnp.asarray(d["y"]), jnp.asarray(in_a, jnp.float32)
    )
    se = ce[in_a].std() / np.sqrt(in_a.sum())
    assert abs(float(mc["log_loss"]) - analytic) < 3 * se
    # The whole population weighted by the true P(A = a | x) is group a.
    p1 = np.asarray(ev.true_group_probability(st, jnp.asarray(d["x"])))
    w = p1 if a == 1 else 1 - p1
    weighted = ev.group_metrics(
      jnp.asarray(d["p_y"]), jnp.asarray(d["y"]), jnp.asarray(w, jnp.float32)
    )
    se_w = ce.std() * np.sqrt(np.sum(w**2)) / np.sum(w)
    assert abs(float(weighted["log_loss"]) - analytic) < 3 * se_w


def test_stable_weights_without_shift_are_constant():
  for pi in (0.5, 0.3):
    p = jnp.full((5,), pi)
    np.testing.assert_allclose(
      ev.stable_weights(p, pi), 1 / (2 * pi), rtol=1e-6
    )
  assert float(ev.stable_weights(jnp.asarray(0.5), 0.5)) == 1.0


def test_net_benefit_and_rates_from_a_confusion_matrix():
  # 10 rows: TP 3, FN 1, FP 2, TN 4 at threshold 0.5.
  y = jnp.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0])
  p = jnp.array([0.9, 0.8, 0.6, 0.2, 0.7, 0.55, 0.1, 0.3, 0.4, 0.2])
  m = ev.group_metrics(p, y)
  prev, tpr, fpr = 0.4, 3 / 4, 2 / 6
  np.testing.assert_allclose(
    m["net_benefit"], tpr * prev - fpr * (1 - prev), rtol=1e-6
  )
  np.testing.assert_allclose(
    m["net_benefit"], (3 - 2) / 10, rtol=1e-6
  )  # (TP - FP) / n at t = .5
  np.testing.assert_allclose(
    [m["recall"], m["specificity"], m["precision"], m["label_rate"]],
    [0.75, 4 / 6, 3 / 5, 0.4],
    rtol=1e-6,
  )


def test_all_ones_weights_equal_unweighted_and_auc_matches_pairs():
  key = jax.random.key(1)
  p = jax.random.uniform(key, (300,))
  p = jnp.round(p * 20) / 20  # ties on purpose
  p = jnp.clip(p, 0.01, 0.99)
  y = jax.random.bernoulli(jax.random.key(2), p).astype(jnp.int32)
  plain, ones = ev.group_metrics(p, y), ev.group_metrics(p, y, jnp.ones_like(p))
  for k in ev.METRICS:
    assert float(plain[k]) == float(ones[k]), k
  w = np.asarray(jax.random.uniform(jax.random.key(3), (300,)))
  pn, yn = np.asarray(p), np.asarray(y)
  pos, neg = yn == 1, yn == 0
  gt = (pn[pos][:, None] > pn[neg][None, :]) + 0.5 * (
    pn[pos][:, None] == pn[neg][None, :]
  )
  pair_w = w[pos][:, None] * w[neg][None, :]
  brute = np.sum(pair_w * gt) / np.sum(pair_w)
  np.testing.assert_allclose(
    ev.weighted_auc(p, y, jnp.asarray(w)), brute, rtol=1e-5
  )


def test_presorted_auc_with_precomputed_ties_matches_the_sorting_path():
  p = jnp.clip(
    jnp.round(jax.random.uniform(jax.random.key(6), (400,)) * 10) / 10,
    0.05,
    0.95,
  )
  y = jax.random.bernoulli(jax.random.key(7), p).astype(jnp.int32)
  w = jax.random.uniform(jax.random.key(8), (400,))
  order = jnp.argsort(p)
  ps = p[order]
  got = ev.weighted_auc(ps, y[order], w[order], True, ev.tie_bounds(ps))
  np.testing.assert_allclose(got, ev.weighted_auc(p, y, w), rtol=1e-6)


def _auc_of_rows(idx, args):
  p, y = args
  return {"auc": ev.weighted_auc(p[idx], y[idx], jnp.ones(idx.shape[0]))}


def _auc_of_counts(counts, args):
  p, y, order = args  # counts are per original row; sort them with the scores
  ps = p[order]
  return {
    "auc": ev.weighted_auc(ps, y[order], counts[order], True, ev.tie_bounds(ps))
  }


def test_bootstrap_by_counts_is_the_same_resampling_as_by_indices():
  # The same key draws the same index multisets; a statistic of the rows
  # (AUC, sorting each resample) and the same statistic of the multiplicities
  # over presorted rows must give the same percentile interval.
  p = jnp.clip(
    jnp.round(jax.random.uniform(jax.random.key(9), (500,)) * 20) / 20,
    0.02,
    0.98,
  )
  y = jax.random.bernoulli(jax.random.key(10), p).astype(jnp.int32)
  order = jnp.argsort(p)
  key = jax.random.key(11)
  rows = ev.bootstrap(_auc_of_rows, 500, key, 40, args=(p, y))
  counts = ev.bootstrap(
    _auc_of_counts, 500, key, 40, args=(p, y, order), by="counts"
  )
  for k in ("mean", "lo", "hi"):
    np.testing.assert_allclose(counts["auc"][k], rows["auc"][k], rtol=1e-5)
  assert rows["auc"]["lo"] < rows["auc"]["mean"] < rows["auc"]["hi"]
  with pytest.raises(errors.ConfigError, match="by='rows'"):
    ev.bootstrap(_auc_of_rows, 500, key, 40, args=(p, y), by="rows")
  # A level given in percent reached np.nanpercentile as q = -4700 and
  # failed there ("Percentiles must be in the range [0, 100]").
  with pytest.raises(errors.ConfigError, match="level=95"):
    ev.bootstrap(_auc_of_rows, 500, key, 40, args=(p, y), level=95)


def _undefined_and_mean(rows, args):
  (v,) = args
  return {"undefined": jnp.nan * jnp.sum(v[rows]), "mean": jnp.mean(v[rows])}


def test_bootstrap_of_an_undefined_metric_is_nan_without_a_warning():
  # Precision with no predicted positive is 0 / 0 in every resample: its
  # interval is NaN, and numpy's "All-NaN slice" warning is not raised.
  v = jnp.arange(10.0)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    out = ev.bootstrap(_undefined_and_mean, 10, jax.random.key(0), 20, (v,))
  assert all(np.isnan(out["undefined"][k]) for k in ("mean", "lo", "hi"))
  assert out["mean"]["lo"] <= 4.5 <= out["mean"]["hi"]


def test_fit_logistic_recovers_a_known_model():
  x = jax.random.normal(jax.random.key(4), (20_000,))
  y = jax.random.bernoulli(jax.random.key(5), jax.nn.sigmoid(1.5 * x - 0.5))
  f = jnp.stack([jnp.ones_like(x), x], -1)
  np.testing.assert_allclose(ev.fit_logistic(f, y), [-0.5, 1.5], atol=0.08)


@pytest.mark.parametrize(
  "case, error, match",
  [
    ("single_class", errors.ConfigError, "group 1 has a single class"),
    ("nan_weight", errors.NonFiniteError, "weights are NaN or infinite"),
    ("negative_weight", errors.ConfigError, "weights are negative"),
    # Labels coded 1/2 and logits for scores passed the checks and gave
    # silently wrong metrics (log-loss of y = 2, recall over y == 1 only).
    ("labels_1_2", errors.ConfigError, r"3 labels are not 0 or 1 \(first: 2\)"),
    ("nan_label", errors.ConfigError, "1 labels are not 0 or 1"),
    ("logits", errors.ConfigError, "scores are not probabilities"),
  ],
)
def test_bad_inputs_fail_in_one_line(case, error, match):
  p = np.array([0.2, 0.8, 0.3, 0.7, 0.6, 0.4])
  y = np.array([0, 1, 0, 1, 1, 0])
  a = np.array([0, 0, 0, 1, 1, 1])
  w = None
  if case == "single_class":
    y = np.array([0, 1, 0, 1, 1, 1])
  elif case == "labels_1_2":
    y = np.array([1, 2, 1, 2, 2, 1])
  elif case == "nan_label":
    y = np.array([0, 1, 0, 1, np.nan, 0])
  elif case == "logits":
    p = np.log(p / (1 - p))
  elif case == "nan_weight":
    w = np.array([1.0, np.nan, 1, 1, 1, 1])
  else:
    w = np.array([1.0, -1, 1, 1, 1, 1])
  with pytest.raises(error, match=match):
    ev.check_inputs(p, y, a, w)


def test_csv_loader(tmp_path):
  path = tmp_path / "scores.csv"
  path.write_text("s,lab,grp\n0.2,0,0\n0.9,1,1\n0.6,1,0\n0.3,0,1\n")
  d = ev.load_csv(
    str(path), {"score": "s", "label": "lab", "group": "grp", "x": ""}
  )
  np.testing.assert_array_equal(d["y"], [0, 1, 1, 0])
  np.testing.assert_array_equal(d["a"], [0, 1, 0, 1])
  np.testing.assert_allclose(d["p"], [0.2, 0.9, 0.6, 0.3])
  with pytest.raises(errors.ConfigError, match=r"no column\(s\) \['label'\]"):
    ev.load_csv(str(path), {"score": "s", "label": "label", "group": "grp"})
  with pytest.raises(errors.WorkdirError, match="does not exist"):
    ev.load_csv(str(tmp_path / "missing.csv"), {"score": "s"})
  # A misspelt role raised KeyError('labels') after reading the file.
  with pytest.raises(
    errors.ConfigError, match=r"unknown role\(s\) \['labels'\]"
  ):
    ev.load_csv(str(path), {"score": "s", "labels": "lab", "group": "grp"})
  # A spreadsheet's "CSV UTF-8" export (a BOM first) said "no column(s)
  # ['s']; the file has ['\ufeffs', ...]".
  bom = tmp_path / "bom.csv"
  bom.write_text(path.read_text(), encoding="utf-8-sig")
  columns = {"score": "s", "label": "lab", "group": "grp"}
  for key, value in ev.load_csv(str(bom), columns).items():
    np.testing.assert_array_equal(value, d[key])
  # An x near 1e20 overflowed float32 in its polynomial features' variance:
  # NaN metrics and no error.
  huge = tmp_path / "huge.csv"
  huge.write_text("s,lab,grp,x\n0.2,0,0,1\n0.9,1,1,1e20\n")
  with pytest.raises(
    errors.ConfigError, match=r"row 2 .*column 'x': 1e\+20 is too large"
  ):
    ev.load_csv(str(huge), {**columns, "x": "x"})


def test_unknown_group_model_kind_is_refused():
  # Any kind but "binary" silently fitted the polynomial model.
  v, a = jnp.arange(8.0), jnp.arange(8) % 2
  with pytest.raises(errors.ConfigError, match="group model kind 'quadratic'"):
    ev.group_probability(v, a, "quadratic")


@pytest.mark.parametrize(
  "kind, v_dtype",
  [("binary", np.int32), ("binary", np.int64), ("poly", np.float32)],
)
def test_group_probability_under_x64_is_the_group_frequency(kind, v_dtype):
  # With a binary V, [1, v] (and the degree-1 polynomial of v) saturate the
  # logistic model, so its MLE is the empirical P(A = 1 | V = v) of each
  # group (the ridge is 1e-6). Under jax_enable_x64 integer V (as `simulate`
  # returns it) and float32 V must both work.
  rng = np.random.default_rng(0)
  v = (rng.uniform(size=400) < 0.4).astype(v_dtype)
  a = (rng.uniform(size=400) < np.where(v == 1, 0.7, 0.2)).astype(np.int32)
  want = np.where(v == 1, a[v == 1].mean(), a[v == 0].mean())
  with jax.enable_x64(True):
    got = ev.group_probability(jnp.asarray(v), jnp.asarray(a), kind, degree=1)
    got = np.asarray(got)
  np.testing.assert_allclose(got, want, atol=1e-5)


def test_group_probability_fitted_elsewhere_or_cross_fitted():
  # The saturated binary model's MLE is the empirical P(A = 1 | V = v) of
  # the rows it is fitted on: of the `fit` rows, or of the other folds.
  rng = np.random.default_rng(1)
  n = 600
  v = (rng.uniform(size=n) < 0.5).astype(np.int32)
  a = (rng.uniform(size=n) < np.where(v == 1, 0.7, 0.2)).astype(np.int32)
  v2 = (rng.uniform(size=300) < 0.5).astype(np.int32)
  a2 = (rng.uniform(size=300) < np.where(v2 == 1, 0.6, 0.3)).astype(np.int32)
  with jax.enable_x64(True):
    got = np.asarray(ev.group_probability(v, a, "binary", fit=(v2, a2)))
    want = np.where(v == 1, a2[v2 == 1].mean(), a2[v2 == 0].mean())
    np.testing.assert_allclose(got, want, atol=1e-5)
    got = np.asarray(ev.group_probability(v, a, "binary", folds=3))
  block = np.arange(n) * 3 // n
  for k in range(3):
    out = block != k
    freq = [a[out & (v == j)].mean() for j in (0, 1)]
    np.testing.assert_allclose(
      got[block == k], np.where(v[block == k] == 1, freq[1], freq[0]), atol=1e-5
    )
  with pytest.raises(errors.ConfigError, match="not both"):
    ev.group_probability(v, a, "binary", fit=(v2, a2), folds=3)


def test_t_statistic_oracles():
  # T_a(V) = metric(group a) - metric(population weighted by P(A = a | V)).
  r = np.random.default_rng(3)
  n = 40
  p = r.uniform(0.05, 0.95, n)
  y = (r.uniform(size=n) < p).astype(np.int32)
  a = np.arange(n) % 2
  y[:4] = (0, 1, 0, 1)  # both classes in both groups
  pj, yj, aj = jnp.asarray(p), jnp.asarray(y), jnp.asarray(a)
  # V that reveals the group: the weighted population is group a, T = 0.
  t = ev.t_statistic(pj, yj, aj, 1, jnp.asarray(a, jnp.float32))
  for k in ev.METRICS:
    assert abs(float(t[k])) < 1e-6, k
  # V independent of A (constant P(A = a | V)): group minus the population,
  # checked on the log-loss in float64 numpy.
  t = ev.t_statistic(pj, yj, aj, 0, jnp.full(n, 0.5))
  ce = -(y * np.log(p) + (1 - y) * np.log1p(-p))
  np.testing.assert_allclose(
    float(t["log_loss"]), ce[a == 0].mean() - ce.mean(), rtol=1e-5
  )
  # Integer counts are the same as repeating the rows.
  counts = r.integers(0, 3, n)
  counts[:4] = 1
  pv = r.uniform(0.1, 0.9, n)
  t = ev.t_statistic(
    pj,
    yj,
    aj,
    1,
    jnp.asarray(pv),
    counts=jnp.asarray(counts, pj.dtype),
  )
  rep = lambda v: jnp.asarray(np.repeat(v, counts))
  ref = ev.t_statistic(rep(p), rep(y), rep(a), 1, rep(pv))
  for k in ev.METRICS:
    np.testing.assert_allclose(float(t[k]), float(ref[k]), atol=1e-6)
  # `own` given: group a's metrics on its rows alone (unweighted subset,
  # equal to the indicator weighting), and T_a moves one for one with it.
  g1 = a == 1
  own = ev.group_metrics(jnp.asarray(p[g1]), jnp.asarray(y[g1]))
  pv = jnp.asarray(pv)
  ref = ev.t_statistic(pj, yj, aj, 1, pv)
  t = ev.t_statistic(pj, yj, aj, 1, pv, own=own)
  shifted = ev.t_statistic(
    pj, yj, aj, 1, pv, own={k: v + 1.0 for k, v in own.items()}
  )
  for k in ev.METRICS:
    np.testing.assert_allclose(float(t[k]), float(ref[k]), atol=1e-6)
    np.testing.assert_allclose(float(shifted[k]), float(t[k]) + 1, atol=1e-6)


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(family="causl"), "unknown family 'causl'"),
    (dict(family="causal", selection="xy"), "unknown selection 'xy'"),
  ],
)
def test_a_misspelt_setting_is_refused(kwargs, match):
  # family 'causl' ran the anticausal DGP and selection 'xy' no selection.
  with pytest.raises(errors.ConfigError, match=match):
    ev.Setting(**kwargs)


def test_a_user_setting_selects_as_documented():
  # selection 'y' keeps y = 0 with P = 0.4 and y = 1 with P = 0.8.
  st = ev.Setting("causal", selection="y")
  d = ev.simulate(jax.random.key(0), st, 20_000)
  y, s = np.asarray(d["y"]), np.asarray(d["s"])
  np.testing.assert_allclose(s[y == 0].mean(), 0.4, atol=0.02)
  np.testing.assert_allclose(s[y == 1].mean(), 0.8, atol=0.02)


def test_bfloat16_features_are_fitted_in_float32():
  # The Newton solve has no bfloat16 kernel: NotImplementedError('Unsupported
  # dtype bfloat16') from LAPACK. The binary model's MLE is the empirical
  # P(A = 1 | V = v) of each group (as above).
  rng = np.random.default_rng(1)
  v = (rng.uniform(size=400) < 0.4).astype(np.float32)
  a = (rng.uniform(size=400) < np.where(v == 1, 0.7, 0.2)).astype(np.int32)
  want = np.where(v == 1, a[v == 1].mean(), a[v == 0].mean())
  got = ev.group_probability(jnp.asarray(v, jnp.bfloat16), a, "binary")
  assert got.dtype == jnp.float32
  np.testing.assert_allclose(got, want, atol=1e-4)


def test_log_loss_of_hard_scores_is_not_nan():
  # float32 rounds 1 - 1e-12 to 1, so a score of exactly 1 met
  # (1 - y) * log1p(-1) = 0 * -inf = NaN even where y = 1 (a perfect
  # prediction); the CSV loader accepts scores in [0, 1].
  p = jnp.array([1.0, 0.0, 1.0, 0.0])
  y = jnp.array([1, 0, 1, 1])
  m = ev.group_metrics(p, y)
  # Rows: 0, ~1e-12, 0 and -log(1e-12) for the missed positive.
  np.testing.assert_allclose(m["log_loss"], -np.log(1e-12) / 4, rtol=1e-6)
  # A confident mistake is an infinite loss, not NaN.
  assert (
    float(
      ev.group_metrics(jnp.array([1.0, 0.5]), jnp.array([0, 1]))["log_loss"]
    )
    == np.inf
  )


def test_integer_predictions_give_the_metrics_of_the_same_floats():
  # clip(int p, 1e-12, 1 - 1e-12) left 0/1 as they were: a log-loss of inf.
  y = jnp.array([1, 0, 1, 1, 0, 0])
  hard = jnp.array([1, 0, 0, 1, 0, 0])  # one miss: a positive scored 0
  w = jnp.array([1.0, 2.0, 1.0, 0.5, 1.0, 3.0])
  got = ev.group_metrics(hard, y, w)
  want = ev.group_metrics(hard.astype(jnp.float32), y, w)
  for k in ev.METRICS:
    np.testing.assert_allclose(got[k], want[k], rtol=1e-6, err_msg=k)
  # The miss (weight 1) costs -log(1e-12), the hits ~0; total weight 8.5.
  # (A negative scored 1 costs inf in float32 too: 1 - 1e-12 rounds to 1.)
  np.testing.assert_allclose(got["log_loss"], -np.log(1e-12) / 8.5, 1e-5)
  np.testing.assert_allclose(
    ev.weighted_auc(hard, y, w), ev.weighted_auc(hard * 1.0, y, w), rtol=1e-6
  )


@pytest.mark.parametrize(
  "case, error, match",
  [
    ("nan_score", errors.NonFiniteError, "1 scores are not finite"),
    ("logits", errors.ConfigError, "scores are not probabilities"),
    ("labels_1_2", errors.ConfigError, r"labels are not 0 or 1 \(first: 2\)"),
    ("negative_weight", errors.ConfigError, "1 weights are negative"),
  ],
)
def test_group_metrics_refuse_bad_concrete_input(case, error, match):
  # A NaN score sorted last and gave a finite, wrong AUC; logits a log-loss
  # of clipped numbers.
  p = np.array([0.2, 0.8, 0.3, 0.7, 0.6, 0.4], np.float32)
  y = np.array([0, 1, 0, 1, 1, 0])
  w = np.ones(6, np.float32)
  if case == "nan_score":
    p[2] = np.nan
  elif case == "logits":
    p = np.log(p / (1 - p))
  elif case == "labels_1_2":
    y = y + 1
  else:
    w[4] = -1.0
  with pytest.raises(error, match=match):
    ev.group_metrics(jnp.asarray(p), jnp.asarray(y), jnp.asarray(w))
  if case != "logits":
    with pytest.raises(error, match=match):
      ev.weighted_auc(jnp.asarray(p), jnp.asarray(y), jnp.asarray(w))


def test_auc_ranks_logits_as_their_probabilities():
  p = jax.random.uniform(jax.random.key(30), (50,), minval=0.05, maxval=0.95)
  y = jax.random.bernoulli(jax.random.key(31), p).astype(jnp.int32)
  w = jnp.ones(50)
  logit = jnp.log(p / (1 - p))
  np.testing.assert_allclose(
    ev.weighted_auc(logit, y, w), ev.weighted_auc(p, y, w), rtol=1e-6
  )
  # Traced input is not checked: the jitted metrics still run.
  jitted = jax.jit(ev.group_metrics)(p, y, w)
  np.testing.assert_allclose(
    jitted["auc"], ev.group_metrics(p, y, w)["auc"], rtol=1e-6
  )
