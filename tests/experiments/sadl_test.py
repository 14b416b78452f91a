"""experiments/sadl.py: smoke run, bad input, and the 2-process command line."""

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from configs import sadl as sadl_config
from experiments import sadl as sadl_exp
from lib.core.errors import ConfigError

REPO_ROOT = os.path.dirname(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
# The multi-process comparison runs only SADL on the MLP (one compile each).
_MP_OVERRIDES = (
  "--config.quadratic.enabled=false",
  "--config.mlp.methods=('sadl',)",
)


def _mp_config():
  config = sadl_config.get_config("quick,smoke")
  config.quadratic.enabled = False
  config.mlp.methods = ("sadl",)
  return config


def test_smoke_run_reports_every_method(tmp_path, fast_compile):
  config = sadl_config.get_config("quick,smoke")
  results = sadl_exp.run(config, str(tmp_path))
  on_disk = json.loads((tmp_path / "results.json").read_text())
  assert on_disk["devices"] == 8 and on_disk["processes"] == 1
  assert os.path.exists(tmp_path / "sadl.png")
  lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
  assert len(lines) == 1 * 2 + 3 * 2  # (methods x chunks) quadratic + mlp

  quad = results["quadratic"]["d1024"]
  assert quad["sadl"]["bytes_per_round"] == 2 * 4 * 64  # b floats each way
  assert quad["sadl"]["compression"] == 1024 / 64
  assert 0 < quad["sadl"]["loss_ratio"] < 0.95  # 20 rounds do reduce it
  assert results["quadratic"]["sadl_dim_growth"] == 1.0  # one d in smoke

  mlp = results["mlp"]
  d = mlp["dim"]
  assert d == 64 * 16 + 16 + 16 * 10 + 10
  assert mlp["adam"]["bytes_per_round"] == 2 * 4 * d
  assert mlp["sadl_10x"]["bytes_per_round"] == 2 * 4 * (d // 10)
  for tag in ("sadl_10x", "fetchsgd_10x", "adam"):
    assert np.isfinite(mlp[tag]["train_loss"]), tag
  # Six rounds of Adam on digits already beat chance (0.1) by far.
  assert mlp["adam"]["test_acc"] > 0.2


def test_bad_input_is_a_clear_error(tmp_path):
  def config_with(**quadratic):
    config = sadl_config.get_config("quick,smoke")
    config.mlp.enabled = False
    config.quadratic.update(quadratic)
    return config

  config = config_with()
  config.num_clients = 12  # 8 devices in tests
  with pytest.raises(ConfigError, match="num_clients=12 is not a positive"):
    sadl_exp.run(config, str(tmp_path / "a"))
  with pytest.raises(ConfigError, match="smaller than the model dimension"):
    sadl_exp.run(config_with(sketch_size=1024), str(tmp_path / "b"))
  with pytest.raises(ConfigError, match="unknown method 'sgd'"):
    sadl_exp.run(config_with(methods=("sgd",)), str(tmp_path / "c"))
  with pytest.raises(ConfigError, match="multiple of log_every"):
    sadl_exp.run(config_with(rounds=15), str(tmp_path / "d"))
  with pytest.raises(ValueError, match="unknown variant"):
    sadl_config.get_config("huge")


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_two_process_command_line_matches_one_process(tmp_path):
  """The documented localhost command: 2 processes x 4 CPU devices."""
  port = _free_port()
  workdir = tmp_path / "mp"
  procs = []
  for pid in range(2):
    env = dict(
      os.environ,
      JAX_PLATFORMS="cpu",
      JAX_NUM_CPU_DEVICES="4",
      JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
      JAX_NUM_PROCESSES="2",
      JAX_PROCESS_ID=str(pid),
    )
    cmd = [
      sys.executable,
      "-m",
      "experiments.sadl",
      "--distributed",
      "--config=configs/sadl.py:quick,smoke",
      f"--workdir={workdir}",
      *_MP_OVERRIDES,
    ]
    procs.append(
      subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
      )
    )
  logs = []
  try:
    logs = [p.communicate(timeout=300)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]
  multi = json.loads((workdir / "results.json").read_text())
  assert multi["processes"] == 2 and multi["devices"] == 8
  single = sadl_exp.run(_mp_config(), str(tmp_path / "single"))
  assert single["devices"] == 8 and single["processes"] == 1
  for key in ("train_loss", "test_acc", "params_l2"):
    np.testing.assert_allclose(
      multi["mlp"]["sadl_10x"][key],
      single["mlp"]["sadl_10x"][key],
      rtol=1e-5,
    )
