"""Compact memory (Jung et al., NeurIPS 2025): smoke run, bad input, file data."""

import json
import os

import jax
import numpy as np
import pytest

from configs import compact_memory as config_lib
from experiments import compact_memory
from lib import continual
from lib import train as train_lib
from lib.core import errors
from tests import helpers
from tests.helpers import run_binary


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
  workdir = str(tmp_path_factory.mktemp("cm_smoke"))
  config = config_lib.get_config("quick,smoke")
  # Compile-bound: XLA without most optimisations (as the fast_compile fixture).
  with helpers.most_optimizations_disabled(True):
    return compact_memory.run(config, workdir), workdir


def test_smoke_results_and_figures(smoke):
  r, workdir = smoke
  for name, sizes in (("moons", (1, 2)), ("digits", (2, 5))):
    res = r[name]
    assert res["finite"]
    assert 0 < res["batch"]["mean"] <= 1
    for method in compact_memory.SEQUENTIAL:
      for k in sizes:
        band = res[method][f"m{k}"]
        assert 0 <= band["mean"] <= 1 and len(band["seeds"]) == 2
        assert np.isfinite(band["lo"]) and np.isfinite(band["hi"])
    for key in (
      "compact_minus_replay",
      "compact_minus_random",
      "compact_minus_random_anchored",
    ):
      assert np.isfinite(res["smallest"][key]["mean"])
    for k in sizes:  # the EM moves the memory towards its fixed point
      gap = res["em_fixed_point"][f"m{k}"]
      assert np.isfinite(gap["end_scale"]["mean"])
      assert 0 <= gap["end_max_angle_deg"]["max"] <= 90
  # The notebook's EM on moons: steps run per boundary, per seed (<= 5);
  # its joint model trains moons.batch_steps (41 in smoke) steps.
  steps = np.asarray(r["moons"]["em_steps"]["m1"])
  assert steps.shape == (2, 3) and 1 <= steps.min() and steps.max() <= 5
  assert "em_steps" not in r["digits"]
  rows = train_lib.read_jsonl(os.path.join(workdir, "moons", "batch"))
  assert max(row["step"] for row in rows) == 41
  # Memory % : K (T - 1) / N(tasks 1..T-1); digits tasks hold ~252 points.
  assert r["digits"]["memory_pct"]["m2"] == pytest.approx(100 * 8 / 1010)
  for fig in ("accuracy_vs_memory.png", "moons_boundaries.png"):
    assert os.path.getsize(os.path.join(workdir, fig)) > 1000
  with open(os.path.join(workdir, "results.json")) as f:
    assert json.load(f)["digits"]["compact"]["m5"]["mean"] > 0
  # One metrics row per run (2 seeds x (4 methods x 2 sizes) + 2 batch), in
  # the sequential and the batch sweep's folders.
  rows = train_lib.read_jsonl(os.path.join(workdir, "digits"))
  assert {row["run"].split("/", 1)[1] for row in rows if "run" in row} >= {
    "compact/m5/seed1",
    "batch/seed0",
  }
  helpers.check_claim_keys(
    "compact_memory",
    workdir,
    absent={"compact_memory_beats_replay_m10": "smoke's digits sizes: 2, 5"},
  )


def test_each_dataset_follows_its_official_script():
  # Four moons: the notebook (14 vectors per task, only the memory's beta
  # clamped); Split-digits: the Split-CIFAR script (p clamped for every row).
  config = config_lib.get_config("quick")
  assert 14 in config.moons.memory_sizes
  assert config.moons.beta_clamp == "memory"
  assert config.digits.beta_clamp == "probs"
  # EM: the notebook's scale floor and early stop; the script's unit vectors.
  assert config.moons.em_style == "notebook"
  assert config.digits.em_style == "script"
  # The notebook's joint model: 20,001 Adam steps at 0.05.
  assert config.moons.batch_steps == 20_001 and config.moons.batch_lr == 0.05
  assert {"random_kprior", "random_kprior_anchored"} <= set(config.methods)
  # The notebook's binary model: one sigmoid weight vector (theta [d, 1]);
  # the Split-CIFAR script's softmax over the task's classes.
  assert config.moons.model == "binary"
  with config.unlocked():
    config.moons.n = 200
  assert compact_memory.load_dataset(config, "moons")[1]["classes"] == 1
  assert compact_memory.load_dataset(config, "digits")[1]["classes"] == 10


def _write(path, features, labels, task_ids):
  np.savez(path, features=features, labels=labels, task_ids=task_ids)
  return str(path)


def test_labels_outside_class_range():
  x = np.ones((6, 3))
  with pytest.raises(errors.ConfigError, match=r"outside \[0, 2\)"):
    continual.from_arrays(x, [0, 1, 2, 0, 1, 0], [0] * 6, num_classes=2)
  with pytest.raises(errors.ConfigError, match="outside"):
    continual.from_arrays(x, [0, 1, -1, 0, 1, 0], [0] * 6)


def test_mismatched_lengths_and_non_finite(tmp_path):
  bad = _write(tmp_path / "bad.npz", np.ones((5, 3)), np.zeros(4), np.zeros(5))
  with pytest.raises(errors.ShapeError, match="different lengths"):
    continual.load_feature_file(bad)
  x = np.ones((5, 3))
  x[2, 1] = np.nan
  nan = _write(tmp_path / "nan.npz", x, np.zeros(5, int), np.zeros(5))
  with pytest.raises(errors.NonFiniteError, match="1 non-finite"):
    continual.load_feature_file(nan)
  with pytest.raises(errors.ConfigError, match="does not exist"):
    continual.load_feature_file(str(tmp_path / "none.npz"))


def test_cli_one_line_error_for_a_bad_file(tmp_path):
  bad = _write(tmp_path / "bad.npz", np.ones((5, 3)), np.zeros(4), np.zeros(5))
  proc = run_binary(
    "experiments.compact_memory",
    "--config=configs/compact_memory.py:quick,smoke",
    "--config.datasets=('file',)",
    f"--config.feature_file={bad}",
    f"--workdir={tmp_path / 'w'}",
  )
  assert proc.returncode != 0
  last = [line for line in proc.stderr.splitlines() if line.strip()][-1]
  assert last.startswith("error: ") and "different lengths" in last, last
  assert "Traceback" not in proc.stderr


def test_config_errors_name_the_key(tmp_path):
  # A feature file the datasets leave out was silently not read.
  config = config_lib.get_config("quick,smoke")
  config.feature_file = str(tmp_path / "feats.npz")
  with pytest.raises(errors.ConfigError, match="has no 'file', so it would"):
    compact_memory.run(config, str(tmp_path / "f"))
  assert not os.path.exists(tmp_path / "f")
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.datasets = ("file",)
  with pytest.raises(errors.ConfigError, match="feature_file"):
    compact_memory.run(config, str(tmp_path / "a"))
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.steps_per_task = 15
  with pytest.raises(errors.ConfigError, match="steps_per_task"):
    compact_memory.run(config, str(tmp_path / "b"))
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.moons.seeds = 0  # the four-moons demo's own seed count
  with pytest.raises(errors.ConfigError, match=r"config\.moons\.seeds=0"):
    compact_memory.run(config, str(tmp_path / "c"))
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.moons.model = "logistic"
  with pytest.raises(errors.ConfigError, match=r"config\.moons\.model"):
    compact_memory.run(config, str(tmp_path / "d"))
  assert not os.path.exists(tmp_path / "d" / "moons")  # before any training


def test_feature_file_trains(tmp_path):
  """A user's own features: 2 tasks x 2 classes of separable clusters."""
  r = np.random.default_rng(0)
  y = np.repeat([0, 1, 2, 3], 30)
  x = r.normal(size=(120, 4)) * 0.3 + 2.0 * np.eye(4)[y]
  path = _write(tmp_path / "f.npz", x, y, y // 2)
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.datasets = ("file",)
    config.feature_file = path
    config.file_memory_sizes = (2,)
    config.methods = ("batch", "compact")
  with jax.enable_x64(False):
    res = compact_memory.run(config, str(tmp_path / "w"))["file"]
  assert res["finite"] and res["batch"]["mean"] > 0.9
  assert 0 <= res["compact"]["m2"]["mean"] <= 1


def test_digits_compact_beats_replay_at_5_per_task(tmp_path, fast_compile):
  """Spec oracle 5 (soft), seeded: 5 points per task, 200 steps per task."""
  config = config_lib.get_config("quick")
  with config.unlocked():
    config.datasets = ("digits",)
    config.methods = ("replay", "compact")
    config.digits.memory_sizes = (5,)
    config.seeds = 1
    config.steps_per_task = 200
    config.train.log_every = 200
  res = compact_memory.run(config, str(tmp_path))["digits"]
  compact, replay = res["compact"]["m5"]["mean"], res["replay"]["m5"]["mean"]
  assert compact > replay + 0.05, (compact, replay)


def test_bad_feature_files_fail_before_the_workdir_is_written(tmp_path):
  r = np.random.default_rng(0)
  one_class = _write(
    tmp_path / "one.npz", r.normal(size=(40, 3)), np.zeros(40, int),
    np.repeat([0, 1], 20),
  )  # fmt: skip
  (tmp_path / "dir.npz").mkdir()
  cases = (
    (str(tmp_path / "none.npz"), "does not exist"),
    (str(tmp_path / "dir.npz"), "is a directory"),
    (one_class, "one class"),
  )
  workdir = tmp_path / "w"
  for path, match in cases:
    config = config_lib.get_config("quick,smoke")
    with config.unlocked():
      config.datasets = ("file",)
      config.feature_file = path
    with pytest.raises(errors.ConfigError, match=match):
      compact_memory.run(config, str(workdir))
    # Nothing written: the corrected rerun in this workdir is not refused
    # as "another config".
    assert not os.path.exists(workdir / "config.json"), path
