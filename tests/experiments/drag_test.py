"""drag: smoke run, results and claim keys, resume, config errors."""

import os

import pytest

from configs import drag as config_lib
from experiments import drag as ex
from experiments.claims import drag as claims
from lib.core import errors
from tests import helpers


def test_smoke_results_and_figures(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = ex.run(config, str(tmp_path))
  assert r["finite"]
  assert set(r["methods"]) == {"rig", "skewfit", "drag_tau1"}
  for m in r["methods"].values():
    assert 0.0 < m["visited_coverage"]["mean"] <= 1.0
    assert 0.0 < m["weights_ess"]["mean"] <= 1.0 + 1e-6
  # The weight diagnostics: RIG's uniform weights have ESS 1; Skew-Fit's
  # weights are the KL-DRO optimum at tau = 1, so their KL from it is 0.
  rig, skew = r["methods"]["rig"], r["methods"]["skewfit"]
  assert rig["weights_ess"]["mean"] == pytest.approx(1.0, rel=1e-5)
  assert skew["weights_kl_from_dro"]["mean"] == pytest.approx(0.0, abs=1e-6)
  assert skew["weights_ess"]["mean"] == pytest.approx(skew["dro_ess"]["mean"])
  assert r["methods"]["drag_tau1"]["weights_kl_from_dro"]["mean"] > 0.0
  # ... and its curve is read at the coverage curve's evaluations.
  steps = list(rig["coverage_curve"]["visited_coverage"])
  assert list(r["methods"]["drag_tau1"]["weights_kl_curve"]) == steps
  for name in ("coverage.png", "visited_imagined.png", "results.json"):
    assert os.path.exists(tmp_path / name)
  assert "drag_tau1_minus_best_baseline_coverage" in r
  smoke_runs_tau1_only = "smoke runs tau = 1 only (quick: test below)"
  helpers.check_claim_keys(
    "drag",
    tmp_path,
    absent={
      "drag_tau0.5_coverage_at_least_baselines": smoke_runs_tau1_only,
      "drag_tau2_coverage_at_least_baselines": smoke_runs_tau1_only,
    },
  )
  # Resume after a kill: tests/reliability/kill_all_test.py.


def test_claim_keys_exist_for_the_quick_taus():
  config = config_lib.get_config("quick")
  keys = {f"{m.name}_vs_baselines_coverage" for m in ex.methods(config)[2:]}
  for c in claims.CLAIMS:
    assert c.metric.rsplit(".", 1)[0] in keys


def test_each_method_carries_its_own_tau_and_lib_weighting():
  # The temperature is the config's float, not one read back from a run
  # name (which keeps 6 significant digits).
  config = config_lib.get_config("quick")
  config.taus = (0.123456789, 2.0)
  assert ex.methods(config) == [
    ex.Method("rig", "rig", 1.0),
    ex.Method("skewfit", "skewfit", 1.0),
    ex.Method("drag_tau0.123457", "drag", 0.123456789),
    ex.Method("drag_tau2", "drag", 2.0),
  ]


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("taus", (1.0, 0.0), r"config.taus\[1\]"),
    ("taus", (0.5, 0.5000001), "name the same run twice"),
    ("start", (0.45, 0.1), "inside a wall"),
    ("horizon", 0, "config.horizon"),
    ("weighter_lr", float("nan"), "config.weighter_lr"),  # ran to the end
    ("goal_decoding", "softmax", "config.goal_decoding"),
    ("weighter_steps", 0, "config.weighter_steps"),
  ],
)
def test_config_errors(key, value, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config[key] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)
