"""Smoke run of the QBLR experiment: both parts finish and the numbers make sense."""

import json
import os

import numpy as np
import pytest

from configs import qblr as config_lib
from experiments import qblr


def test_config_variants_and_typos():
  for arg in (None, "quick", "quick,smoke"):
    config = config_lib.get_config(arg)
    assert config.vi.num_steps > 0
  with pytest.raises(ValueError):
    config_lib.get_config("quikc")
  with pytest.raises(AttributeError):
    config_lib.get_config("quick").vi.lr_typo = 1


def test_smoke_run(tmp_path):
  workdir = str(tmp_path)
  r = qblr.run(config_lib.get_config("quick,smoke"), workdir)
  mle = r["mle"]
  # ECME converges fast even on the smoke data; the MLE reference is a
  # stationary point with l* above every iterate's log-likelihood.
  assert 0 < mle["iterations"]["ecme"] <= 60
  assert mle["final_gap"]["ecme"] < 1e-8
  assert mle["qng_rejected_steps"] == 0
  for name, gap in mle["final_gap"].items():
    assert np.isfinite(gap), name
  # beta = 1 leaves the domain at step 1: it runs only thanks to the guard,
  # and it is the fastest QNG run.
  assert mle["final_gap"]["qng_beta1"] < mle["final_gap"]["qng_beta0.3"]
  vi = r["vi"]
  for name in ("qng", "blr_gauss"):
    assert 0.85 <= vi[name]["acc_mean"] <= 1.0, name
  assert vi["qng"]["rejected"] == 0
  with open(os.path.join(workdir, "results.json")) as f:
    assert json.load(f)["mle"]["l_star"] == pytest.approx(mle["l_star"])
  for fig in r["figures"]:
    assert os.path.getsize(os.path.join(workdir, fig)) > 1000
  assert os.path.exists(os.path.join(workdir, "metrics.jsonl"))
