"""Smoke run of the NanoAdam fine-tuning experiment."""

import os

import numpy as np
import pytest

from configs import nanoadam_finetune as config_lib
from experiments import nanoadam_finetune


def test_config_variants_and_typos():
  for arg in (None, "quick", "quick,smoke"):
    assert 0 < config_lib.get_config(arg).nanoadam.density <= 1
  with pytest.raises(ValueError):
    config_lib.get_config("quick,dense=1")


def test_smoke_run(tmp_path):
  workdir = str(tmp_path)
  config = config_lib.get_config("quick,smoke")
  r = nanoadam_finetune.run(config, workdir)
  assert r["old_acc_pretrained"] > 0.3  # 20 pretraining steps beat chance
  nano, adam = r["nanoadam"], r["adam"]
  # The masked optimizer touches only about density of the masked weights and
  # keeps moments only for them.
  assert nano["frac_changed_at_best"] < 0.2 < adam["frac_changed_at_best"]
  assert r["nano_state_fraction_of_adam"] < 0.1
  for m in (nano, adam):
    assert len(m["new_acc_by_lr"]) == len(config.finetune.lrs)
    assert np.all(np.isfinite(m["forgetting_by_lr"]))
  assert -1 <= r["spearman_finetune_start"] <= 1
  assert os.path.getsize(os.path.join(workdir, "finetune.png")) > 1000
  assert os.path.exists(os.path.join(workdir, "pretrain", "metrics.jsonl"))


def test_bad_density_is_a_clear_error(tmp_path):
  from lib.core.errors import ConfigError

  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.nanoadam.density = 1.5
    config.pretrain.train.num_steps = 10
  with pytest.raises(ConfigError, match="density"):
    nanoadam_finetune.run(config, str(tmp_path))
