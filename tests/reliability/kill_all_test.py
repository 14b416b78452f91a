"""Every training experiment resumes bitwise after SIGKILL (issue 12's acceptance).

Each binary runs at smoke scale to the end (the reference), again in a fresh
workdir killed with SIGKILL after a random checkpoint save, then once more to
the end; its final checkpoints and metrics rows must equal the reference's
(tests/reliability/_kill.py). simplicity_bias is covered in kill_test.py.

XLA's optimisations are off for these runs (`JAX_DISABLE_MOST_OPTIMIZATIONS`):
compiling is most of a smoke run's time, and the reference and the resumed run
see the same setting, so the bitwise comparison is unaffected.
"""

import numpy as np
import pytest

from tests.reliability import _kill

EXPERIMENTS = {
  "compact_memory": ("--config=configs/compact_memory.py:quick,smoke",),
  "dpo_diversity": ("--config=configs/dpo_diversity.py:quick,smoke",),
  "mix": ("--config=configs/mix.py:quick,smoke",),
  "sfn": ("--config=configs/sfn.py:quick,smoke",),
  "trpe": ("--config=configs/trpe.py:quick,smoke",),
  "drag": ("--config=configs/drag.py:quick,smoke",),
  "quartet_llm": ("--config=configs/quartet_llm.py:quick,smoke",),
  # bf16 alone: the sweep's run-by-run resume is the same for both methods
  # (quartet's own training state resumes in quartet_llm's case), at 2/5 of
  # the time (a compile per (size, method); 96 s -> ~38 s on 2 cores).
  "quartet_scaling": (
    "--config=configs/quartet_scaling.py:quick,smoke",
    "--config.methods=('bf16',)",
  ),
  "cdflow_density": (
    "--config=configs/cdflow_density.py:quick,smoke",
    "--config.train.checkpoint_every=2",
  ),
  "hns_toy": (
    "--config=configs/hns_toy.py:quick,smoke",
    "--config.functionals=('linear',)",
  ),
  "hns_advection": ("--config=configs/hns_advection.py:quick,smoke",),
  "hns_kdv": (
    "--config=configs/hns_kdv.py:quick,smoke",
    "--config.baselines=('next_step_cnn',)",
  ),
  "sadl": ("--config=configs/sadl.py:quick,smoke",),
  "qblr": ("--config=configs/qblr.py:quick,smoke",),
  "nanoadam_finetune": ("--config=configs/nanoadam_finetune.py:quick,smoke",),
}


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_sigkill_at_a_random_checkpoint_resumes_bitwise(
  name, tmp_path, monkeypatch
):
  monkeypatch.setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
  seed = sorted(EXPERIMENTS).index(name)
  out = _kill.kill_and_resume(
    f"experiments.{name}",
    EXPERIMENTS[name],
    tmp_path,
    rng=np.random.default_rng(seed),
  )
  assert out["saves_seen_at_kill"] >= 1, out
