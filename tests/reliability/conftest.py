"""A finished smoke run of simplicity_bias, shared by the reliability tests."""

import pytest

from tests.reliability import _kill

SIMPLICITY_BIAS = "experiments.simplicity_bias"
# One optimizer, 120 steps, a checkpoint every 20: 6 saves to kill between.
SIMPLICITY_BIAS_ARGS = (
  "--config=configs/simplicity_bias.py:quick,smoke",
  "--config.spurious.enabled=false",
  "--config.optimizers=('adam',)",
  "--config.train.num_steps=120",
  "--config.train.log_every=20",
  "--config.train.checkpoint_every=20",
)


@pytest.fixture(scope="session")
def simplicity_bias_reference(tmp_path_factory):
  """The workdir of an uninterrupted run with SIMPLICITY_BIAS_ARGS."""
  workdir = str(tmp_path_factory.mktemp("sb") / "reference")
  _kill.run_to_end(SIMPLICITY_BIAS, SIMPLICITY_BIAS_ARGS, workdir)
  return workdir
