"""quartet_llm smoke: both methods train, results and figure are written."""

import json
import os

import numpy as np

from configs import quartet_llm as config_lib
from experiments import _quartet
from experiments import quartet_llm


def test_smoke_run_writes_results(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = quartet_llm.run(config, str(tmp_path))
  assert set(r["val_loss"]) == {"bf16", "quartet"}
  for v in r["val_loss"].values():
    # A few steps from a uniform 256-way guess (5.55 nats) must go down.
    assert np.isfinite(v) and v < np.log(256)
  assert abs(r["gap"]["quartet"]) < 0.5
  assert os.path.exists(os.path.join(tmp_path, "loss_curves.png"))
  with open(os.path.join(tmp_path, "results.json")) as f:
    assert json.load(f)["val_loss"]["bf16"] == r["val_loss"]["bf16"]
  for method in ("bf16", "quartet"):
    assert os.path.exists(os.path.join(tmp_path, method, "metrics.jsonl"))


def test_every_method_maps_to_a_model_config():
  config = config_lib.get_config("quick")
  for method in _quartet.METHODS:
    c = _quartet.model_config(config, method)
    assert c.d_model % 32 == 0 and c.mlp_hidden % 32 == 0
  paper = config_lib.get_config()
  c = _quartet.model_config(paper, "quartet")
  assert (c.n_layers, c.d_model, c.n_heads) == (6, 640, 5)
