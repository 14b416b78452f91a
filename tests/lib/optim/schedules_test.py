"""one_cycle_schedule: torch's OneCycleLR (cosine) values, computed by hand in float64."""

import math

import jax
import numpy as np
import pytest

from lib import optim


def _one_cycle(step, peak, total, warmup, div=100.0, final_div=0.1):
  # torch.optim.lr_scheduler.OneCycleLR, two phases, anneal_strategy="cos":
  # phase ends at pct_start * total - 1 = warmup - 1 and at total - 1.
  initial, end_step = peak / div, warmup - 1
  final = initial / final_div

  def cos(a, b, pct):
    return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)

  if step <= end_step:
    return cos(initial, peak, step / end_step)
  return cos(peak, final, (step - end_step) / (total - 1 - end_step))


def test_one_cycle_matches_the_torch_formulas():
  peak, total, warmup = 1.2e-3, 200, 20
  schedule = jax.jit(optim.one_cycle_schedule(peak, total, warmup))
  steps = [0, 1, 10, 19, 20, 100, 199]
  got = np.array([float(schedule(s)) for s in steps])
  want = np.array([_one_cycle(s, peak, total, warmup) for s in steps])
  np.testing.assert_allclose(got, want, rtol=1e-6)
  # The anchors: lr/100 at step 0, the peak at warmup end, lr/10 at the end.
  np.testing.assert_allclose(got[[0, 3, 6]], [1.2e-5, 1.2e-3, 1.2e-4], 1e-6)
  assert float(schedule(500)) == pytest.approx(1.2e-4, rel=1e-6)


def test_one_cycle_without_decay_holds_the_peak():
  schedule = optim.one_cycle_schedule(2e-3, 400, 40, decay=False)
  assert float(schedule(0)) == pytest.approx(2e-5, rel=1e-6)
  assert float(schedule(20)) == pytest.approx(
    _one_cycle(20, 2e-3, 400, 40), rel=1e-6
  )
  for s in (39, 40, 399):
    assert float(schedule(s)) == pytest.approx(2e-3, rel=1e-6)


def test_one_cycle_rejects_a_warmup_past_the_end():
  with pytest.raises(ValueError, match="warmup_steps"):
    optim.one_cycle_schedule(1e-3, 10, 10)


def test_one_cycle_with_traced_lengths_is_the_static_schedule():
  # Run lengths as arguments: one compiled program serves every length.
  @jax.jit
  def lr(step, total, warmup):
    return optim.one_cycle_schedule(1.2e-3, total, warmup)(step)

  for total, warmup in ((100, 10), (150, 15), (400, 40), (5, 2)):
    static = jax.jit(optim.one_cycle_schedule(1.2e-3, total, warmup))
    for s in sorted({0, 1, warmup - 1, warmup, total // 2, total - 1}):
      assert float(lr(s, total, warmup)) == float(static(s))
      assert float(lr(s, total, warmup)) == pytest.approx(
        _one_cycle(s, 1.2e-3, total, warmup), rel=1e-6
      )
  assert lr._cache_size() == 1
