"""sfn: smoke run with every tool, config errors (the teacher-forced level-IV
identity: tests/lib/interp/scoring_test.py)."""

import json
import os

import pytest

from configs import sfn as config_lib
from experiments import sfn as ex
from experiments.claims import sfn as claims
from lib.core import errors
from tests import helpers


def test_smoke_results_figures_and_claim_keys(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = ex.run(config, str(tmp_path))
  assert r["finite"]
  m = r["models"]
  for name in ["A", "B"] + [
    f"merge_{x}" for x in ex.SINGLE + tuple(ex.MERGE_GROUPS)
  ]:
    assert 0.0 <= m[name]["reasoning_accuracy"]["mean"] <= 1.0
    assert sum(m[name]["levels"].values()) == pytest.approx(1.0)
  assert len(r["destruction"]) == len(ex.SINGLE) * config.model.n_layers
  for name in (
    "delta_norms.png",
    "relative_change_hist.png",
    "merge_freeze.png",
    "destruction.png",
    "results.json",
  ):
    assert os.path.exists(tmp_path / name), name
  with open(tmp_path / "results.json") as f:
    saved = json.load(f)
  for c in claims.CLAIMS:
    node = saved
    for part in c.metric.split("."):
      node = node[part]
  helpers.check_claim_keys("sfn", tmp_path)
  # Resume after a kill: tests/reliability/kill_all_test.py.


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("freeze_sets", {"o": ("oproj",)}, "config.freeze_sets.o"),
    ("digits", 0, "config.digits"),
    ("batch_size", 1, "config.batch_size"),
    # Was "bimodality needs > 3 values, got 0" after model A trained.
    ("pretrain.weight_decay", float("nan"), "config.pretrain.weight_decay"),
    ("finetune.weight_decay", -1.0, "config.finetune.weight_decay"),
  ],
)
def test_config_errors_name_the_key(key, value, match):
  config = config_lib.get_config("quick,smoke")
  section, _, name = key.rpartition(".")
  with config.unlocked():
    (config[section] if section else config)[name] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)


def test_generate_more_than_test_problems_is_an_error():
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.data.generate_problems = config.data.test_problems + 1
  with pytest.raises(errors.ConfigError, match="generate_problems"):
    ex.check_config(config)
