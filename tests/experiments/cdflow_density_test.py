"""cdflow_density: smoke run, the periodic-proxy oracle and bad-input errors."""

import math
import os

import jax
import jax.numpy as jnp
import ml_collections
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


def test_periodic_optimum_is_reached_by_one_circulant():
  """A CD layer with eigenvalues sqrt(lambda) is the exact whitening map."""
  p = ml_collections.ConfigDict(dict(n=8, lengthscale=0.5, noise=0.05))
  cov = cdflow_density.ring_covariance(p)
  optimum = cdflow_density.gaussian_optimum_nats_per_dim(cov)
  ref = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * cov)[1] / 8
  assert optimum == pytest.approx(ref, abs=1e-12)
  with jax.enable_x64(True):
    layer = flows.CDLinear(num_channels=8, m=2, init_kind="identity")
    params = jax.tree.map(jnp.asarray, layer.init(jax.random.key(0)))
    lam = np.real(np.fft.rfft(cov[:, 0]))
    params["log_abs_eig"] = jnp.asarray(0.5 * np.log(lam))[None]
    nll = cdflow_density.expected_nll_per_dim(layer, params, cov)
    assert float(nll) == pytest.approx(optimum, abs=1e-10)
    # Any other model is worse (here: the identity map).
    ident = layer.init(jax.random.key(0))
    assert (
      float(cdflow_density.expected_nll_per_dim(layer, ident, cov)) > optimum
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
