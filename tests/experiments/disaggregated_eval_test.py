"""disaggregated_eval: smoke run, T_a(X) covers / excludes 0, a user's CSV."""

import os

import numpy as np
import pytest

from configs import disaggregated_eval as config_lib
from experiments import disaggregated_eval as ex
from experiments.claims import disaggregated_eval as claims
from lib.core import errors
from tests import helpers


def _config(**overrides):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    for k, v in overrides.items():
      config[k] = v
  return config


def test_smoke_results_figure_and_claim_keys(tmp_path, fast_compile):
  r = ex.run(_config(), str(tmp_path))
  assert os.path.exists(tmp_path / "forest.png")
  for c in claims.CLAIMS:
    if c.metric.split(".")[0] not in r:
      continue  # a setting the smoke variant skips
    node = r
    for part in c.metric.split("."):
      node = node[part]
    assert np.isfinite(node)
  helpers.check_claim_keys(
    "disaggregated_eval",
    tmp_path,
    absent={
      "disagg_outcome_shift_not_explained_by_x": "smoke skips outcome_shift",
      "disagg_outcome_shift_not_explained_by_x_under_x_shift": (
        "smoke skips complex_causal_shift"
      ),
    },
  )


def test_t_of_x_covers_zero_under_covariate_shift_only():
  import jax

  config = _config(n_eval=20_000, n_train=5_000, resamples=50)
  key = jax.random.key(7)
  cov = ex.run_setting(config, "covariate_shift", key)["xa"]["T1(X)"][
    "log_loss"
  ]
  out = ex.run_setting(config, "outcome_shift", key)["xa"]["T1(X)"]["log_loss"]
  assert cov["lo"] <= 0 <= cov["hi"], cov
  assert out["hi"] < 0, out


def test_t_of_r_weights_each_model_on_its_own_score():
  # f(X)'s score carries the group, f(X, A)'s does not, and Y is independent
  # of both. Weighting the population by P(A = 1 | R) with R f(X)'s own
  # score reproduces group 1's score distribution (Bayes), so f(X)'s T1(R)
  # is ~0; weighting on f(X, A)'s score (P(A | R) ~ constant) left f(X)'s
  # group-vs-population log-loss difference (disparity ~0.2 here).
  r = np.random.default_rng(0)
  n = 20_000
  a = r.integers(0, 2, n)
  y = r.integers(0, 2, n)
  scores = {
    "x": np.clip(0.2 + 0.25 * a + 0.05 * r.normal(size=n), 0.02, 0.98),
    "xa": r.uniform(0.3, 0.7, n),
  }
  res = ex.evaluate(_config(resamples=50), scores, y, a)
  t = res["x"]["T1(R)"]["log_loss"]
  gap = res["x"]["disparity"]["log_loss"]
  assert t["lo"] <= 0 <= t["hi"], t
  assert abs(gap["mean"]) > 0.1 and abs(t["mean"]) < 0.1 * abs(gap["mean"])


def test_selection_on_y_population_view_is_the_shifted_bayes_model():
  # Selection on Y alone, P(S | y) = (0.4, 0.8), doubles the odds of Y = 1:
  # the Bayes model of the selected data is sigmoid(logit P(Y | X, A) +
  # log 2). f(X, A) fitted on selected rows must be close to it on the
  # (unselected) population rows, so over-predict there; fitted with 1/P(S|y)
  # weights it must be close to P(Y | X, A) itself.
  import jax

  config = _config(n_train=20_000, n_eval=20_000)
  name = "selection_on_y"
  st, train, evald = ex.draw(config, name, jax.random.key(3))
  assert 0.4 < np.mean(evald["s"]) < 0.8  # the population, not selected rows
  assert np.all(train["s"] == 1)
  p_y = np.asarray(evald["p_y"], np.float64)
  shifted = 1 / (1 + (1 - p_y) / (2 * p_y))
  fit = np.asarray(ex.models(config, st, train, evald)["xa"])
  weighted = ex.models(config, st, train, evald, 1.0 / train["p_s"])["xa"]
  assert np.mean(np.abs(fit - shifted)) < 0.02
  assert np.mean(np.abs(np.asarray(weighted) - p_y)) < 0.02
  assert np.mean(shifted - p_y) > 0.05  # the over-prediction is real
  with config.unlocked():
    config.selection_eval = "selected"
  _, _, selected = ex.draw(config, name, jax.random.key(3))
  assert np.all(selected["s"] == 1)


def test_user_csv_is_evaluated(tmp_path):
  rng = np.random.default_rng(0)
  n = 400
  a = rng.integers(0, 2, n)
  p = rng.uniform(0.05, 0.95, n)
  y = (rng.uniform(size=n) < p).astype(int)
  path = tmp_path / "scores.csv"
  rows = "\n".join(f"{pi},{yi},{ai}" for pi, yi, ai in zip(p, y, a))
  path.write_text("score,label,group\n" + rows + "\n")
  config = _config(settings=("covariate_shift",), csv_path=str(path))
  r = ex.run(config, str(tmp_path / "run"))
  assert "csv" in r and "T1(Y)" in r["csv"]["xa"]
  # The CSV alone (settings=()): before, "config.settings is empty". Its
  # disparity is the two groups' mean log loss apart (group 1 - group 0).
  alone = ex.run(_config(settings=(), csv_path=str(path)), str(tmp_path / "a"))
  assert set(alone) == {"csv", "margin"}
  loss = -(y * np.log(p) + (1 - y) * np.log(1 - p))
  d = alone["csv"]["xa"]["disparity"]["log_loss"]
  want = loss[a == 1].mean() - loss[a == 0].mean()
  assert d["mean"] == pytest.approx(want, abs=1e-4)
  assert d["lo"] <= d["mean"] <= d["hi"]
  with pytest.raises(errors.ConfigError, match="config.settings is empty"):
    ex.check_config(_config(settings=()))  # and no CSV: nothing to evaluate


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("settings", ("no_such",), "config.settings"),
    ("margin", 0.0, "config.margin"),
    ("resamples", 1, "config.resamples"),
  ],
)
def test_config_errors_name_the_key(key, value, match):
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(_config(**{key: value}))


# Bitwise as the main job compiles it (XLA's optimisations on).
@pytest.mark.xla_optimized
def test_simulate_with_traced_numbers_equals_the_static_setting():
  # ev.simulate traces the DGP's numbers (one program per family, selection
  # and size); the draws must be those of the setting given as a constant.
  import jax

  from lib import evaluation as ev

  static = jax.jit(ev.simulate.__wrapped__, static_argnums=(1, 2))
  key = jax.random.key(11)
  for name in ("outcome_shift", "complex_anticausal_shift", "selection_on_ay"):
    st = ev.setting(name)
    want, got = static(key, st, 300), ev.simulate(key, st, 300)
    for k in want:
      np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))


@pytest.mark.parametrize(
  "rows, match",
  [
    (None, "does not exist"),
    ("", "no column"),
    ("score,label,group\n", "header but no data rows"),
    ("score,label,group\n0.2,0,0\n0.7,1,0\n", "no row of group 1"),
  ],
  ids=["missing", "empty", "header_only", "one_group"],
)
def test_bad_csv_fails_before_the_workdir_is_written(tmp_path, rows, match):
  # A bad csv_path leaves no config.json, which would refuse the rerun
  # with the corrected path in the same workdir.
  path = tmp_path / "scores.csv"
  if rows is not None:
    path.write_text(rows)
  workdir = tmp_path / "run"
  config = _config(settings=("covariate_shift",), csv_path=str(path))
  with pytest.raises(errors.UserError, match=match) as e:
    ex.run(config, str(workdir))
  assert "\n" not in str(e.value) and "scores.csv" in str(e.value)
  assert not workdir.exists() or not os.listdir(workdir)


def test_a_directory_is_not_a_csv(tmp_path):
  config = _config(settings=("covariate_shift",), csv_path=str(tmp_path))
  with pytest.raises(errors.WorkdirError, match="is a directory"):
    ex.run(config, str(tmp_path / "run"))
