"""quartet_scaling smoke: the sweep trains, the law is fitted, results and figure written."""

import json
import os

import numpy as np
import pytest

from configs import quartet_scaling as config_lib
from experiments import quartet_scaling
from lib.core.errors import ConfigError


def test_smoke_sweep_fits_and_writes(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = quartet_scaling.run(config, str(tmp_path))
  # 2 sizes x 2 methods x 3 readings, each a finite loss below uniform.
  assert len(r["points"]) == 12
  for p in r["points"]:
    assert np.isfinite(p["val_loss"]) and p["val_loss"] < np.log(256)
    assert p["tokens"] == p["steps"] * 8 * 32
  # Loss goes down with D for every (size, method).
  for method in ("bf16", "quartet"):
    for d in (32, 64):
      curve = [
        p["val_loss"]
        for p in r["points"]
        if p["method"] == method and p["d_model"] == d
      ]
      assert curve == sorted(curve, reverse=True)
  e = r["eff"]["quartet"]
  assert e["eff_n"] > 0 and e["eff_d"] > 0
  assert e["eff_n_p16"] <= e["eff_n_p84"] and e["eff_d_p16"] <= e["eff_d_p84"]
  assert r["base"]["rms_log_residual"] < 0.05
  assert os.path.exists(os.path.join(tmp_path, "scaling_fit.png"))
  with open(os.path.join(tmp_path, "results.json")) as f:
    assert json.load(f)["eff"]["quartet"]["eff_n"] == e["eff_n"]


def test_model_sizes_follow_the_sweep():
  sizes = quartet_scaling.sizes(config_lib.get_config("quick"))
  assert [s.d_model for s in sizes] == [32, 64, 128]
  assert [s.mlp_hidden for s in sizes] == [96, 192, 352]
  paper = quartet_scaling.sizes(config_lib.get_config())
  assert [(s.n_layers, s.d_model, s.n_heads) for s in paper] == [
    (6, 640, 5),
    (7, 768, 6),
    (8, 1024, 8),
    (10, 1280, 10),
  ]


@pytest.mark.parametrize(
  "override, match",
  [
    (dict(read_steps=(3,)), "multiples of config.train.eval_every"),
    (dict(read_steps=(2, 8)), "go past config.train.num_steps"),
    (dict(methods=("quartet", "bf16")), "must start with 'bf16'"),
  ],
)
def test_bad_sweep_configs_name_the_key(tmp_path, override, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.update(override)
  with pytest.raises(ConfigError, match=match):
    quartet_scaling.run(config, str(tmp_path))


def test_sweep_sizes_must_be_mxfp4_groups():
  config = config_lib.get_config("quick,smoke")
  config.sweep.d_model = (48, 64)
  with pytest.raises(ConfigError, match="d_model 48 is not a multiple of 32"):
    quartet_scaling.sizes(config)
  config.sweep.d_model = (32,)
  with pytest.raises(ConfigError, match="equally long"):
    quartet_scaling.sizes(config)
