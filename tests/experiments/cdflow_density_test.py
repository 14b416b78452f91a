"""cdflow_density: smoke run, the periodic-proxy oracle and bad-input errors."""

import math
import os

import numpy as np
import pytest

from configs import cdflow_density as config_lib
from experiments import cdflow_density
from lib import flows
from lib.core.errors import ConfigError
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError
from tests import helpers


def test_smoke_run(tmp_path):
  r = cdflow_density.run(config_lib.get_config("smoke"), str(tmp_path))
  assert r["uniform_bpd"] == pytest.approx(math.log2(17), abs=1e-9)
  bpd = r["vector"]["cd"]["test_bpd"]
  assert math.isfinite(bpd) and 0.0 < bpd < 8.0
  assert math.isfinite(r["image"]["cd"]["test_bpd"])
  # Expected NLL of any model >= the entropy (KL >= 0): the gap is >= 0.
  assert r["periodic_cd_gap"] >= -1e-5
  for name in ("results.json", "samples.png", "curves.png"):
    assert os.path.exists(tmp_path / name)
  helpers.check_claim_keys(
    "cdflow_density",
    tmp_path,
    absent={"cdflow_cd_close_to_dense": "smoke trains the cd flow only"},
  )


def _data_config(tmp_path, array):
  config = config_lib.get_config("smoke")
  path = str(tmp_path / "images.npy")
  np.save(path, array)
  with config.unlocked():
    config.data.images_npy = path
  return config


def test_bad_user_data(tmp_path):
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.data.images_npy = str(tmp_path / "missing.npy")
  with pytest.raises(ConfigError, match="not found"):
    cdflow_density.load_images(config)
  bad = np.zeros((10, 8, 8), np.float32)
  bad[0, 0, 0] = np.nan
  with pytest.raises(NonFiniteError):
    cdflow_density.load_images(_data_config(tmp_path, bad))
  with pytest.raises(ConfigError, match="values must lie"):
    cdflow_density.load_images(_data_config(tmp_path, np.full((10, 8, 8), 20)))
  with pytest.raises(ShapeError, match="must hold"):
    cdflow_density.load_images(_data_config(tmp_path, np.zeros((10, 64))))
  # A user image that cannot be squeezed num_levels times.
  train, _ = cdflow_density.load_images(
    _data_config(tmp_path, np.zeros((10, 6, 6), np.int32))
  )
  with pytest.raises(ShapeError, match="divisible"):
    flows.ImageFlow(image_shape=train.shape[1:], num_levels=2)
