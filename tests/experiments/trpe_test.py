"""trpe: smoke run, results and claim keys, config errors."""

import json
import os

import pytest

from configs import trpe as config_lib
from experiments import trpe as ex
from experiments.claims import trpe as claims
from lib import rl
from lib.core import errors
from tests import helpers


def rl_official_units(tcfg):
  return rl.trpe.official_kl_threshold(tcfg)


def test_smoke_results_figures_and_claim_keys(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  assert config.task == "rooms"
  r = ex.run(config, str(tmp_path))
  assert r["finite"] and r["setting"]["task"] == "rooms"
  assert set(r["sources"]) == {"uniform", "joint", "disjoint", "mixture"}
  for s in r["sources"].values():
    assert 0.0 < s["coverage"]["mean"] <= 1.0
    assert 0.0 <= s["zero_shot_score"]["mean"] <= 1.0
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
    ("starts", ((0, 5), (1, 1)), "inside a wall"),
    ("task", "secret_room", "config.task"),
    ("size", 8, "size >= 10"),
    ("finetune.kl_threshold", 0.0, "kl_threshold"),
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
  # per-state mean (multi_agent's room.sh: 6 over 10 x 51 states / 4; the
  # earlier runs: 15 over 20 x 151); "joint" (ours) keeps its 0.1.
  config = config_lib.get_config("quick")
  tcfg = ex.trpe_config(config, "mixture")
  assert tcfg.trust_region == "official"
  assert abs(tcfg.kl_threshold - 6 * 4 / (10 * 51)) < 1e-12
  assert (tcfg.trajectories, tcfg.horizon) == (10, 50)
  assert rl_official_units(tcfg) == pytest.approx(6.0)
  old = ex.trpe_config(config_lib.get_config("quick,team_far_room"), "mixture")
  assert abs(old.kl_threshold - 15 * 4 / (20 * 151)) < 1e-12
  with config.unlocked():
    config.trust_region = "joint"
  tcfg = ex.trpe_config(config, "mixture")
  assert (tcfg.trust_region, tcfg.kl_threshold) == ("joint", 0.1)


def test_team_far_room_restores_the_earlier_setup():
  # The runs until 2026-12-06 (bit for bit: every results.json leaf of the
  # quick run, measured when the official Rooms became the default).
  c = config_lib.get_config("quick,team_far_room")
  assert (c.task, c.size, c.starts, c.horizon, c.trajectories) == (
    "team_far_room",
    12,
    ((1, 1), (2, 1)),
    60,
    16,
  )
  f = c.finetune
  assert (f.epochs, f.trajectories, f.horizon, f.lr) == (40, 16, 60, 1.0)
  g = ex.make_grid(c)
  assert isinstance(g, rl.grid.Grid) and g.num_states == 144
  assert isinstance(
    ex.make_grid(config_lib.get_config("quick")), rl.grid.SwitchRooms
  )


def test_team_far_room_smoke_runs(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke,team_far_room")
  r = ex.run(config, str(tmp_path))
  assert r["finite"] and r["setting"]["task"] == "team_far_room"
  for s in r["sources"].values():
    assert 0.0 <= s["zero_shot_success"]["mean"] <= 1.0
    assert len(s["finetune_curve"]) == config.finetune.epochs
