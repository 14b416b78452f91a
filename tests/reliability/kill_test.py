"""SIGKILL at a random checkpoint, or in the middle of a checkpoint write, then
rerun: the run ends bitwise where an uninterrupted run ends (tests/reliability/
_kill.py; the lead parametrises it over every training experiment)."""

import numpy as np

from tests.reliability import _kill
from tests.reliability.conftest import SIMPLICITY_BIAS
from tests.reliability.conftest import SIMPLICITY_BIAS_ARGS


def test_kill_at_random_checkpoint_resumes_bitwise(
  tmp_path, simplicity_bias_reference
):
  out = _kill.kill_and_resume(
    SIMPLICITY_BIAS,
    SIMPLICITY_BIAS_ARGS,
    tmp_path,
    rng=np.random.default_rng(),
    reference=simplicity_bias_reference,
  )
  assert out["saves_seen_at_kill"] >= 1


def test_kill_during_checkpoint_write_resumes_bitwise(
  tmp_path, simplicity_bias_reference
):
  _kill.kill_and_resume(
    SIMPLICITY_BIAS,
    SIMPLICITY_BIAS_ARGS,
    tmp_path,
    rng=np.random.default_rng(0),
    reference=simplicity_bias_reference,
    during_write=True,
  )
