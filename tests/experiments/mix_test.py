"""mix: smoke run (synthetic only) with results, figure and config errors."""

import os

import pytest

from configs import mix as config_lib
from experiments import mix as ex
from lib.core import errors
from tests import helpers


def test_smoke_results_and_figure(tmp_path, fast_compile):
  r = ex.run(config_lib.get_config("quick,smoke"), str(tmp_path))
  s = r["synthetic"]
  assert s["best_view"] in s["selection_deletion"]
  for metric in ("deletion", "insertion", "robustness", "localisation"):
    assert 0.0 <= s[metric]["mix"]["mean"] <= 1.0
  assert os.path.exists(tmp_path / "metrics.png")
  # Localisation is scored on the scored half's class-1 series alone: the
  # burst is planted in those.
  config = config_lib.get_config("quick,smoke")
  _, (xs, ys), _, _ = ex.load(config, "synthetic")
  scored = ys[: config.num_explain][config.num_explain // 2 :]
  assert s["localisation"]["series"] == int((scored == 1).sum()) > 0
  assert s["deletion"]["series"] == scored.size
  ucr_only = "smoke runs the synthetic dataset only"
  helpers.check_claim_keys(
    "mix",
    tmp_path,
    absent={
      f"mix_{kind}_{name}": ucr_only
      for kind in (
        "deletion_beats_time_ig",
        "kigv_refines_other_views",
        "greedy_beats_best_view",
        "cross_view_greedy_beats_time_greedy",
      )
      for name in ("gunpoint", "italy_power")
    },
  )


def test_bundled_ucr_files_load_when_sktime_is_installed():
  from lib.explain import data

  if data.ucr_dir() is None:
    pytest.skip("sktime not installed")
  (xt, yt), (xs, ys), c = data.load_ucr("GunPoint", 8)
  assert xt.shape == (50, 152) and xs.shape == (150, 152) and c == 2


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("datasets", ("Nope",), "config.datasets"),
    ("num_explain", 2, "config.num_explain"),
    # Each of these was a traceback (num_train, num_test 0) or a one-line
    # error without its key (deletion_points, length) after training.
    ("deletion_points", 0, "config.deletion_points=0"),
    ("synthetic.num_train", 0, "config.synthetic.num_train=0"),
    ("synthetic.num_test", 0, "config.synthetic.num_test=0"),
    ("synthetic.length", 12, r"config.synthetic.start \+ width = 16"),
    ("synthetic.length", 33, "config.synthetic.length=33 must be a multiple"),
    ("synthetic.noise", float("nan"), "config.synthetic.noise=nan"),
    ("budget_rule", "max", "config.budget_rule"),
    ("osigv_mode", "sig", "config.osigv_mode='sig' is not one of"),
  ],
)
def test_config_errors_name_the_key(tmp_path, key, value, match):
  config = config_lib.get_config("quick,smoke")
  section, _, name = key.rpartition(".")
  with config.unlocked():
    (config[section] if section else config)[name] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)
  with pytest.raises(errors.ConfigError, match=match):  # before any work
    ex.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)


def test_a_dataset_that_cannot_load_is_refused_before_the_workdir(
  tmp_path, monkeypatch
):
  # Before, a UCR set without sktime was refused after config.json was
  # written and the synthetic set had trained: the corrected rerun (the set
  # dropped) then met a config conflict in the same workdir.
  from lib.explain import data

  monkeypatch.setattr(data, "ucr_dir", lambda: None)
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.datasets = ("synthetic", "GunPoint")
  with pytest.raises(errors.ConfigError, match="pip install sktime"):
    ex.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)


def test_the_planted_dataset_follows_its_seed():
  config = config_lib.get_config("quick,smoke")
  (x0, _), _, _, _ = ex.load(config, "synthetic")
  (x0b, _), _, _, _ = ex.load(config, "synthetic")
  config.synthetic.seed = 1
  (x1, _), _, _, _ = ex.load(config, "synthetic")
  assert (x0 == x0b).all() and not (x0 == x1).all()
