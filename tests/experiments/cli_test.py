"""Bad input at the command line ends with a one-line error naming the problem."""

import os

import pytest

from tests.helpers import run_binary

_SMOKE = ("--config=configs/simplicity_bias.py:quick,smoke",)
_FAST = ("--config.spurious.enabled=false", "--config.optimizers=('gd',)")


def _last_line(proc):
  lines = [line for line in proc.stderr.splitlines() if line.strip()]
  return lines[-1] if lines else ""


@pytest.mark.parametrize(
  "extra,expected",
  [
    (("--config.train.lerning_rate=1",), "unknown config key 'lerning_rate'"),
    (  # a near miss: ml_collections' suggestion, not its escaped repr
      ("--config.train.num_step=4",),
      "unknown config key 'num_step' in --config.train.num_step (Did you "
      'mean "num_steps" instead of "num_step"?)',
    ),
    (("--config.train.num_steps=abc",), "--config.train.num_steps=abc"),
    (("--config.optim.gd_lr=1e39", *_FAST), "non-finite loss (nan) at step 2"),
  ],
  ids=["unknown_key", "near_miss_key", "wrong_type", "non_finite"],
)
def test_one_line_errors(tmp_path, extra, expected):
  proc = run_binary(
    "experiments.simplicity_bias", *_SMOKE, f"--workdir={tmp_path}", *extra
  )
  assert proc.returncode != 0
  last = _last_line(proc)
  assert last.startswith("error: ") and expected in last, proc.stderr[-2000:]
  assert "Traceback" not in proc.stderr


def test_unwritable_workdir_and_missing_config(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("x")
  proc = run_binary(
    "experiments.simplicity_bias", *_SMOKE, f"--workdir={blocker}/run"
  )
  assert proc.returncode != 0
  assert "is not writable" in _last_line(proc)
  proc = run_binary(
    "experiments.simplicity_bias",
    "--config=configs/no_such_config.py",
    f"--workdir={tmp_path}",
  )
  assert proc.returncode != 0
  assert "No such file" in _last_line(proc) and "Traceback" not in proc.stderr


def test_a_run_caches_its_compiled_programs_in_its_workdir(tmp_path):
  # Without a cache of the caller's, a binary turns on JAX's persistent
  # cache in <workdir>/jax_cache; with one (JAX_COMPILATION_CACHE_DIR, as
  # experiments.reproduce sets for its children) it leaves the workdir alone.
  every = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
  ours = tmp_path / "ours"
  for workdir, env in (
    (tmp_path / "own", {**every, "JAX_COMPILATION_CACHE_DIR": ""}),
    (tmp_path / "given", {**every, "JAX_COMPILATION_CACHE_DIR": str(ours)}),
  ):
    proc = run_binary(
      "experiments.simplicity_bias",
      *_SMOKE,
      *_FAST,
      f"--workdir={workdir}",
      env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
  assert os.listdir(tmp_path / "own" / "jax_cache")
  assert not (tmp_path / "given" / "jax_cache").exists()
  assert os.listdir(ours)
