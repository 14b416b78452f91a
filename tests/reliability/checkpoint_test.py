"""Damaged checkpoints: fall back to the previous kept step, or stop in one line.

A small `lib.train.fit` run writes real orbax checkpoints at steps 10, 20, 30;
each test damages a copy the way disks and killed jobs do and resumes. Every
damaged newest step must give one warning naming it and a resume from step 20
that ends bitwise where the undamaged run ended; an incompatible model or
all-damaged steps must raise CheckpointError in one line; nothing may hang.
"""

import logging
import os
import shutil
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import common
from lib import train as train_lib
from lib.core import errors
from lib.train import checkpoint as checkpoint_lib

_BOUND_S = 60  # wall-clock bound of any resume here (seconds on a busy CI box)


def _task(d=4):
  rs = np.random.default_rng(0)
  x = rs.normal(size=(32, d)).astype(np.float32)
  y = (x @ rs.normal(size=(d,))).astype(np.float32)

  def init_fn(key):
    return {"w": 0.1 * jax.random.normal(key, (d,))}

  def loss_fn(params, batch, key):
    jitter = 1e-3 * jax.random.normal(key, ())  # key-dependent: resume test
    return jnp.mean((batch["x"] @ params["w"] - batch["y"]) ** 2) + jitter, {}

  def batch_fn(data, key, step):
    del step
    idx = jax.random.randint(key, (8,), 0, 32)
    return {"x": data["x"][idx], "y": data["y"][idx]}

  return train_lib.Task(init_fn, loss_fn, batch_fn, {"x": x, "y": y})


def _fit(workdir, d=4):
  config = common.lock(
    common.train_config(
      num_steps=30, log_every=10, checkpoint_every=10, keep_checkpoints=3
    )
  )
  return train_lib.fit(
    _task(d), optax.adam(1e-2), workdir=workdir, config=config
  )


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
  """A finished run: checkpoints 10, 20, 30; its final state and metrics."""
  workdir = str(tmp_path_factory.mktemp("clean") / "run")
  state, _ = _fit(workdir)
  assert sorted(os.listdir(os.path.join(workdir, "ckpt"))) == ["10", "20", "30"]
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    rows = [_strip(line) for line in f]
  return workdir, jax.device_get(state), rows


def _strip(line):
  return line.split(', "steps_per_sec"')[0]


def _copy(clean, tmp_path):
  dst = str(tmp_path / "run")
  shutil.copytree(clean[0], dst)
  return dst


def _files(step_dir, where):
  out = []
  for root, _, files in os.walk(step_dir):
    for f in files:
      path = os.path.join(root, f)
      if where(path):
        out.append(path)
  assert out, f"nothing to damage in {step_dir}"
  return out


def _is_data(path):
  return os.sep + "d" + os.sep in path


def _truncate(step_dir):
  for f in _files(step_dir, _is_data):
    with open(f, "r+b") as h:
      h.truncate(os.path.getsize(f) // 2)


def _empty(step_dir):
  for f in _files(step_dir, _is_data):
    open(f, "wb").close()


def _zero_fill(step_dir):
  for f in _files(step_dir, _is_data):
    size = os.path.getsize(f)
    with open(f, "wb") as h:
      h.write(b"\0" * size)


def _garbage(name):
  def damage(step_dir):
    for f in _files(step_dir, lambda p: os.path.basename(p) == name):
      with open(f, "wb") as h:
        h.write(b"\x93garbage{" * 8)

  return damage


def _delete_item(step_dir):
  shutil.rmtree(os.path.join(step_dir, "default"))


DAMAGES = {
  "truncated_data": _truncate,
  "emptied_data": _empty,
  "zero_filled_data": _zero_fill,
  "garbage_manifest": _garbage("manifest.ocdbt"),
  "garbage_item_metadata": _garbage("_METADATA"),
  "garbage_checkpoint_metadata": _garbage("_CHECKPOINT_METADATA"),
  "garbage_array_metadata": _garbage("process_0"),
  "garbage_sharding": _garbage("_sharding"),
  "deleted_item_folder": _delete_item,
}


@pytest.mark.parametrize("kind", sorted(DAMAGES))
def test_damaged_newest_step_falls_back_bitwise(clean, tmp_path, kind, caplog):
  workdir = _copy(clean, tmp_path)
  DAMAGES[kind](os.path.join(workdir, "ckpt", "30"))
  start = time.time()
  with caplog.at_level(logging.WARNING):
    state, _ = _fit(workdir)
  assert time.time() - start < _BOUND_S
  warned = [
    r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()
  ]
  assert len(warned) == 1 and "step 30" in warned[0], warned
  assert "\n" not in warned[0]
  assert os.path.isdir(os.path.join(workdir, checkpoint_lib.DAMAGED_DIR, "30"))
  # Resumed from 20, retrained 20 -> 30: the clean run's end, bit for bit.
  for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(clean[1])):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  with open(os.path.join(workdir, "metrics.jsonl")) as f:
    assert [_strip(line) for line in f] == clean[2]
  assert sorted(os.listdir(os.path.join(workdir, "ckpt"))) == ["10", "20", "30"]


def test_every_step_damaged_is_one_line(clean, tmp_path):
  workdir = _copy(clean, tmp_path)
  for step in ("10", "20", "30"):
    _empty(os.path.join(workdir, "ckpt", step))
  start = time.time()
  with pytest.raises(errors.CheckpointError) as e:
    _fit(workdir)
  assert time.time() - start < _BOUND_S
  message = str(e.value)
  assert "\n" not in message
  assert os.path.join(workdir, "ckpt") in message
  assert "10, 20, 30" in message and "--workdir" in message


def test_checkpoint_of_another_model_is_one_line(clean, tmp_path):
  workdir = _copy(clean, tmp_path)
  with pytest.raises(errors.CheckpointError) as e:
    _fit(workdir, d=6)  # a wider model in the same workdir
  message = str(e.value)
  assert "\n" not in message
  assert "another model" in message and "new --workdir" in message
  assert "params.w" in message and "(4,)" in message and "(6,)" in message
  # Nothing was moved aside: the checkpoints are intact, just not this model's.
  assert sorted(os.listdir(os.path.join(workdir, "ckpt"))) == ["10", "20", "30"]


def test_dtype_mismatch_is_one_line(tmp_path):
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=2)
  ckpt.save(1, {"w": jnp.zeros((3,), jnp.float32)})
  ckpt.close()
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=2)
  with pytest.raises(errors.CheckpointError, match="dtype float32 there"):
    ckpt.restore_latest({"w": jnp.zeros((3,), jnp.bfloat16)})
  ckpt.close()


def test_no_checkpoint_gives_none(tmp_path):
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=2)
  assert ckpt.restore_latest({"w": jnp.zeros(3)}) == (None, None)
  assert ckpt.latest_step() is None
  ckpt.close()


def _small_checkpoints(tmp_path, steps=(1, 2, 3)):
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=len(steps))
  for s in steps:
    ckpt.save(s, {"w": jnp.full((4,), float(s))})
  ckpt.close()
  return {"w": jnp.zeros((4,))}


@pytest.fixture
def hanging_reads(monkeypatch):
  """Makes reads of the given steps block (as a stuck tensorstore read would)."""
  release = threading.Event()
  hang = set()
  read = checkpoint_lib.Checkpointer._read

  def slow_read(self, step, target):
    if step in hang:
      release.wait(120)
    return read(self, step, target)

  monkeypatch.setattr(checkpoint_lib.Checkpointer, "_read", slow_read)
  yield hang
  release.set()


def test_restore_that_hangs_times_out_and_falls_back(
  tmp_path, hanging_reads, caplog
):
  target = _small_checkpoints(tmp_path)
  hanging_reads.add(3)
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=3, restore_timeout_s=1)
  start = time.time()
  with caplog.at_level(logging.WARNING):
    step, state = ckpt.restore_latest(target)
  assert time.time() - start < 20
  assert step == 2
  np.testing.assert_array_equal(np.asarray(state["w"]), np.full((4,), 2.0))
  assert any(
    "step 3" in r.getMessage() and "no answer within 1 s" in r.getMessage()
    for r in caplog.records
  )
  ckpt.close()


def test_every_restore_hangs_is_one_line(tmp_path, hanging_reads):
  target = _small_checkpoints(tmp_path)
  hanging_reads.update({1, 2, 3})
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=3, restore_timeout_s=1)
  start = time.time()
  with pytest.raises(errors.CheckpointError, match="no readable checkpoint"):
    ckpt.restore_latest(target)
  assert time.time() - start < 20
  ckpt.close()


def test_leftover_of_an_interrupted_write_is_ignored(tmp_path):
  target = _small_checkpoints(tmp_path, steps=(1, 2))
  ckpt_dir = tmp_path / "ckpt"
  partial = ckpt_dir / "3.orbax-checkpoint-tmp-1234567"
  shutil.copytree(ckpt_dir / "2", partial)
  shutil.rmtree(partial / "default")
  ckpt = checkpoint_lib.Checkpointer(str(tmp_path), keep=2)
  step, state = ckpt.restore_latest(target)
  assert step == 2
  np.testing.assert_array_equal(np.asarray(state["w"]), np.full((4,), 2.0))
  assert not partial.exists()  # cleaned up at start
  ckpt.save(3, {"w": jnp.full((4,), 3.0)})  # and the step can be written
  ckpt.close()
  assert sorted(os.listdir(ckpt_dir)) == ["2", "3"]


def test_bucket_paths_are_not_made_local():
  assert str(checkpoint_lib._directory("gs://bucket/runs/x")) == (
    "gs://bucket/runs/x/ckpt"
  )
  assert str(checkpoint_lib._directory("rel/dir")) == os.path.join(
    os.path.abspath("rel/dir"), "ckpt"
  )
