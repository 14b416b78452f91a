"""quartet_scaling: the sweep trains, the constrained law is fitted with bands
that hold their points, results and figure written; bad configs fail early."""

import json
import os

import numpy as np
import pytest

from configs import quartet_scaling as config_lib
from experiments import _quartet
from experiments import quartet_scaling
from experiments.claims import quartet as quartet_claims
from experiments.claims import report
from lib import models
from lib.core.errors import ConfigError
from tests import helpers


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
  for k in ("eff_n", "eff_d"):
    # The band holds its own point (issue 12).
    assert 0 < e[f"{k}_lo"] <= e[k] <= e[f"{k}_hi"]
  assert e["paired"] and e["band_level"] == 0.95
  b = r["base"]
  assert b["rms_log_residual"] < 0.05
  # Physical region: positive exponents, E >= 0, the paper's fixed gamma.
  assert b["alpha"] > 0 and b["beta"] > 0 and b["E"] >= 0
  assert b["gamma_fixed"] and b["gamma"] == pytest.approx(0.2764)
  ident = b["identifiability"]
  assert len(ident["singular_values"]) == 5
  assert set(ident["se"]) == {
    "log_A",
    "log_alpha",
    "log_B",
    "log_beta",
    "log_E",
  }
  assert set(b["bootstrap"]) == {"alpha", "beta", "E"}
  assert r["diverged_points"] == []
  assert os.path.exists(os.path.join(tmp_path, "scaling_fit.png"))
  with open(os.path.join(tmp_path, "results.json")) as f:
    saved = json.load(f)
  assert saved["eff"]["quartet"]["eff_n"] == e["eff_n"]
  # Every claim on this experiment finds its numbers in results.json.
  claims = [
    c for c in quartet_claims.CLAIMS if c.experiment == "quartet_scaling"
  ]
  assert len(claims) == 4
  for c in claims:
    row = report.evaluate(c, saved)
    assert row["verdict"] != "missing", (c.name, row["reasons"])
  helpers.check_claim_keys("quartet_scaling", tmp_path)


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


def test_paper_sizes_have_the_official_widths_and_warmup():
  # The official --multiple-of 256: the paper's N (plots.ipynb) exactly.
  config = config_lib.get_config()
  paper = quartet_scaling.sizes(config)
  assert [s.mlp_hidden for s in paper] == [1792, 2048, 2816, 3584]
  n = [
    models.non_embedding_params(_quartet.model_config(config, "bf16", s))
    for s in paper
  ]
  assert n == [30_482_560, 49_556_736, 102_777_856, 203_188_480]
  # main_setup.sh: WARMUP_STEPS = ITERATIONS / 10.
  assert config.optim.warmup_fraction == 0.1
  assert config.optim.schedule == "one_cycle"
  assert config.optim.weight_decay_mask == "linear"
  assert config.residual_init == "scaled"
  # The official trainer's torch bf16 autocast (src/optim/base.py).
  assert config.compute_dtype == "bfloat16"
  assert config_lib.get_config("gpu").compute_dtype == "bfloat16"


@pytest.mark.parametrize(
  "override, match",
  [
    (dict(read_steps=(3,)), "multiples of config.train.eval_every"),
    (dict(read_steps=(2, 8)), "go past config.train.num_steps"),
    (dict(methods=("quartet", "bf16")), "must start with 'bf16'"),
    (dict(methods=("bf16", "fp8")), r"config.methods='fp8' is not one of"),
    (dict(compute_dtype="fp16"), "config.compute_dtype='fp16' is not one of"),
  ],
)
def test_bad_sweep_configs_name_the_key(tmp_path, override, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.update(override)
  with pytest.raises(ConfigError, match=match):
    quartet_scaling.run(config, str(tmp_path))


@pytest.mark.parametrize(
  "fit, match",
  [
    (dict(gamma_range=(0.5, 0.1)), "config.fit.gamma_range"),
    (dict(bootstrap_samples=1), "config.fit.bootstrap_samples=1"),
    (dict(band_level=1.0), "config.fit.band_level=1.0"),
  ],
)
def test_bad_fit_configs_fail_before_training(tmp_path, fit, match):
  config = config_lib.get_config("quick,smoke")
  config.fit.update(fit)
  with pytest.raises(ConfigError, match=match):
    quartet_scaling.run(config, str(tmp_path))
  assert sorted(os.listdir(tmp_path)) == []  # not even config.json


def test_sweep_sizes_must_be_mxfp4_groups():
  config = config_lib.get_config("quick,smoke")
  config.sweep.d_model = (48, 64)
  with pytest.raises(ConfigError, match="d_model 48 is not a multiple of 32"):
    quartet_scaling.sizes(config)
  config.sweep.d_model = (32,)
  with pytest.raises(ConfigError, match="equally long"):
    quartet_scaling.sizes(config)
