"""cdflow_density: smoke run, the periodic-proxy oracle and bad-input errors."""

import math
import os

import numpy as np
import pytest

from configs import cdflow_density as config_lib
from experiments import cdflow_density
from lib import flows
from lib.core.errors import ConfigError
from lib.core.errors import DTypeError
from lib.core.errors import NonFiniteError
from lib.core.errors import ShapeError
from tests import helpers


def test_smoke_run(tmp_path):
  """The smoke run with dense and LU flows at two seeds: the CD-vs-dense band
  pairs seed by seed.

  Vmapped, dense and LU flows hung on jaxlib 0.10 on a 2-core machine
  (batched LU and QR kernels deadlocking XLA's thread pool); the seeds now
  run one after the other.
  """
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.vector.linears = ("dense", "cd", "lu", "permutation")
    config.vector.seeds = (0, 1)
  r = cdflow_density.run(config, str(tmp_path))
  assert r["uniform_bpd"] == pytest.approx(math.log2(17), abs=1e-9)
  bpd = r["vector"]["cd"]["test_bpd"]
  assert math.isfinite(bpd) and 0.0 < bpd < 8.0
  assert math.isfinite(r["image"]["cd"]["test_bpd"])
  # Expected NLL of any model >= the entropy (KL >= 0): the gap is >= 0.
  assert r["periodic_cd_gap"] >= -1e-5
  for name in ("results.json", "samples.png", "curves.png"):
    assert os.path.exists(tmp_path / name)
  by_seed = {
    k: np.asarray(v["test_bpd_by_seed"]) for k, v in r["vector"].items()
  }
  assert all(v.shape == (2,) and np.isfinite(v).all() for v in by_seed.values())
  for other in ("cd", "permutation"):
    band = r[f"vector_{other}_minus_dense_bpd"]
    diffs = by_seed[other] - by_seed["dense"]
    np.testing.assert_allclose(band["seeds"], diffs, rtol=0, atol=1e-12)
    assert band["lo"] <= band["mean"] <= band["hi"]
    assert band["mean"] == pytest.approx(diffs.mean(), abs=1e-12)
  # Each seed its own init and batches: the pairing is by seed, not a
  # broadcast of one run.
  assert by_seed["dense"][0] != by_seed["dense"][1]
  helpers.check_claim_keys("cdflow_density", tmp_path)


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
  # A user image that cannot be squeezed num_levels times: refused on load
  # (the image flow would refuse it only after the vector flows trained).
  config = _data_config(tmp_path, np.zeros((10, 6, 6), np.int32))
  with pytest.raises(ShapeError, match="image.num_levels=2 .* by 4"):
    cdflow_density.load_images(config)
  with config.unlocked():
    config.image.enabled = False
  train, _ = cdflow_density.load_images(config)
  with pytest.raises(ShapeError, match="divisible"):
    flows.ImageFlow(image_shape=train.shape[1:], num_levels=2)


def _levels(n=40, h=8, w=8):
  return np.random.default_rng(0).integers(0, 17, (n, h, w))


def _write(path, content):
  if isinstance(content, bytes):
    path.write_bytes(content)
  else:
    np.save(path, content, allow_pickle=True)


# A user's images_npy: what a user may hand over, and the one line it gives.
BAD_IMAGES = [
  ("empty_file", b"", ConfigError, r"not a readable \.npy array"),
  ("text_file", b"1,2,3\n", ConfigError, r"not a readable \.npy array"),
  ("strings", np.array(["a", "b"]), DTypeError, r"holds <U1 values"),
  ("objects", np.array([1, "a"], object), ConfigError, "Python objects"),
  ("no_images", np.zeros((0, 8, 8)), ShapeError, "holds no images"),
  ("too_few_for_split", _levels(2), ShapeError, r"2 images: too few"),
  ("scaled_to_0_1", _levels() / 16.0, ConfigError, "non-integer level"),
  ("odd_size_for_image_flow", _levels(w=7), ShapeError, "divisible by 4"),
]


@pytest.mark.parametrize(
  "content,error,match",
  [c[1:] for c in BAD_IMAGES],
  ids=[c[0] for c in BAD_IMAGES],
)
def test_bad_images_fail_in_one_line_before_any_work(
  tmp_path, content, error, match
):
  path = tmp_path / "images.npy"
  _write(path, content)
  config = config_lib.get_config("smoke")  # the image flow on
  with config.unlocked():
    config.data.images_npy = str(path)
  workdir = tmp_path / "run"
  with pytest.raises(error, match=match) as e:
    cdflow_density.run(config, str(workdir))
  assert "\n" not in str(e.value) and "images.npy" in str(e.value)
  assert not workdir.exists() or not os.listdir(workdir)


def test_an_npz_archive_is_refused(tmp_path):
  path = str(tmp_path / "images.npz")
  np.savez(path, x=_levels())
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.data.images_npy = path
  with pytest.raises(ConfigError, match=r"\.npz archive; save one"):
    cdflow_density.load_images(config)


def test_digits_need_their_17_levels(tmp_path):
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.data.num_levels = 5
  with pytest.raises(ConfigError, match=r"num_levels=5: the digits .* >= 17"):
    cdflow_density.run(config, str(tmp_path / "run"))
  assert not (tmp_path / "run").exists()


def test_whole_float_levels_load_as_integer_levels(tmp_path):
  levels = _levels()
  config = _data_config(tmp_path, levels.astype(np.float64))
  train, test = cdflow_density.load_images(config)
  expected = cdflow_density.load_images(_data_config(tmp_path, levels))
  np.testing.assert_array_equal(train, expected[0])
  np.testing.assert_array_equal(test, expected[1])
  assert train.dtype == np.float32 and len(train) + len(test) == 40


def test_a_diverged_flow_is_reported_not_a_traceback(tmp_path):
  # A member whose loss turned NaN: its "nan" metric rows are summarised
  # (NaN bits/dim and the step it diverged at), not a TypeError.
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.optim.learning_rate = 1e12
    config.periodic.enabled = False
  r = cdflow_density.run(config, str(tmp_path))["vector"]["cd"]
  assert math.isnan(r["train_bpd"]) and r["diverged_at"][0] >= 0
