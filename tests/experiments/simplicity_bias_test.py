"""The minimal CPU experiment of spec E.A: GD learns sign(x1), Adam bends towards Bayes."""

import os

import numpy as np
import pytest

from configs import simplicity_bias as config_lib
from experiments import simplicity_bias
from lib.core import errors
from lib.core import mesh as mesh_lib
from tests import helpers


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
  config = config_lib.get_config("quick")
  with config.unlocked():
    config.spurious.enabled = False
    config.optimizers = ("gd", "adam")
    config.gap_seeds = 2
    # One device, as a laptop run: over the suite's 8 fake devices each of
    # the sweep's 10k steps would pay the cross-device sums (223 s, not 40).
    config.train.mesh_data = 1
  workdir = str(tmp_path_factory.mktemp("sb_quick"))
  return simplicity_bias.run(config, workdir), workdir


def test_gd_learns_the_linear_rule(quick_results):
  r, workdir = quick_results
  gd = r["gd"]
  assert gd["agree_sign_x1"] >= 0.995
  assert abs(gd["boundary_x1_pos"]) <= 0.02
  assert gd["neuron_mass"] <= 0.05
  assert gd["test_acc"] == pytest.approx(0.9938, abs=0.002)
  helpers.check_claim_keys(
    "simplicity_bias",
    workdir,
    absent={"sb_spurious_worst_group": "this run disables config.spurious"},
  )


def test_adam_is_richer_and_more_accurate(quick_results):
  r, workdir = quick_results
  adam = r["adam"]
  assert -0.14 <= adam["boundary_x1_pos"] <= -0.06
  assert adam["neuron_mass"] >= 0.4
  assert adam["agree_sign_x1"] <= 0.997
  assert adam["test_acc"] >= 0.998
  assert r["acc_gap"] >= 0.004
  assert os.path.exists(os.path.join(workdir, "boundaries.png"))


def test_the_gap_sweeps_seed_zero_is_the_main_run(quick_results):
  # The seed sweep's member 0 (one vmapped program over seeds) is the run
  # `fit` does alone on the config's seed and data: the same accuracies.
  r, _ = quick_results
  by_seed = r["test_acc_by_seed"]
  for name in ("gd", "adam"):
    assert by_seed[name][0] == pytest.approx(r[name]["test_acc"], abs=1e-6)
  assert r["acc_gap_by_seed"][0] == pytest.approx(r["acc_gap_seed0"], abs=1e-6)
  # Seed 1 draws other data: not a copy of seed 0.
  assert by_seed["gd"][1] != by_seed["gd"][0]
  gaps = np.asarray(r["acc_gap_by_seed"])
  assert r["acc_gap"] == pytest.approx(gaps.mean())
  assert r["acc_gap_lo"] <= r["acc_gap"] <= r["acc_gap_hi"]


def test_one_device_matches_eight(tmp_path):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.spurious.enabled = False
    config.optimizers = ("adam",)
  data = simplicity_bias.cluster_data(config)
  import optax

  from lib import train as train_lib

  losses = {}
  for n in (1, 8):
    _, history = train_lib.fit(
      simplicity_bias.cluster_task(config, data),
      optax.adam(1e-3),
      workdir=str(tmp_path / f"d{n}"),
      config=config.train,
      mesh=mesh_lib.make_data_mesh(n),
    )
    losses[n] = [h["loss"] for h in history]
  np.testing.assert_allclose(losses[1], losses[8], rtol=1e-5)


@pytest.mark.parametrize(
  "key,value,match",
  [
    # NaN patches trained both optimizers on NaN images to a "nan" loss and
    # 0.0 accuracies in results.json, with no error.
    ("spurious.patch_value", float("nan"), "config.spurious.patch_value=nan"),
    ("optim.adam_b2", 1.0, "config.optim.adam_b2=1.0"),
  ],
)
def test_bad_options_fail_in_one_line_before_any_work(
  tmp_path, key, value, match
):
  config = config_lib.get_config("quick,smoke")
  section, name = key.split(".")
  config[section][name] = value
  with pytest.raises(errors.ConfigError, match=match):
    simplicity_bias.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)
