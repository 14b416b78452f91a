"""trpe: smoke run, results and claim keys, config errors."""

import json
import os

import pytest

from configs import trpe as config_lib
from experiments import trpe as ex
from experiments.claims import trpe as claims
from lib.core import errors
from tests import helpers


def test_smoke_results_figures_and_claim_keys(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = ex.run(config, str(tmp_path))
  assert r["finite"]
  assert set(r["sources"]) == {"uniform", "joint", "disjoint", "mixture"}
  for s in r["sources"].values():
    assert 0.0 < s["coverage"]["mean"] <= 1.0
    assert len(s["finetune_curve"]) == config.finetune.epochs
  for name in ("visitation.png", "finetune.png", "results.json"):
    assert os.path.exists(tmp_path / name)
  with open(tmp_path / "results.json") as f:
    saved = json.load(f)
  for c in claims.CLAIMS:
    node = saved
    for part in c.metric.split("."):
      node = node[part]
  helpers.check_claim_keys("trpe", tmp_path)
  # Resume after a kill: tests/reliability/kill_all_test.py.


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("starts", ((0, 3), (1, 1)), "inside a wall"),
    ("horizon", 0, "horizon"),
    ("objectives", ("sum",), "config.objectives"),
    ("kl_threshold", 0.0, "kl_threshold"),
    ("trust_region", "both", "trust_region"),
    # Fine-tuning's trajectories were refused (without the key) only after
    # every objective trained; a negative lr ran gradient descent on the
    # entropy to the end.
    ("finetune.trajectories", 0, r"config\.finetune\.trajectories=0"),
    ("learning_rate", -1.0, r"config\.learning_rate=-1\.0"),
  ],
)
def test_config_errors(key, value, match):
  config = config_lib.get_config("quick,smoke")
  section, _, name = key.rpartition(".")
  with config.unlocked():
    (config[section] if section else config)[name] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)


def test_each_trust_region_gets_its_own_delta():
  # "official" (the default) reads kl_threshold, room.sh's delta as a
  # per-state mean; "joint" (ours) keeps its 0.1.
  config = config_lib.get_config("quick")
  tcfg = ex.trpe_config(config, "mixture")
  assert tcfg.trust_region == "official"
  assert abs(tcfg.kl_threshold - 15 * 4 / (20 * 151)) < 1e-12
  with config.unlocked():
    config.trust_region = "joint"
  tcfg = ex.trpe_config(config, "mixture")
  assert (tcfg.trust_region, tcfg.kl_threshold) == ("joint", 0.1)
