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
  ],
)
def test_config_errors_name_the_key(key, value, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config[key] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)
