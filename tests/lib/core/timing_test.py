"""lib.core.timing on a fake clock: each call costs a known time."""

import jax.numpy as jnp
import numpy as np
import pytest

from lib.core import timing


class _Clock:
  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


def _fn(clock, cost, name, log):
  def fn(*args):
    log.append((name, args))
    clock.now += cost
    return jnp.zeros(())

  return fn


def test_interleaved_rounds_alternate_after_warmup():
  clock, log = _Clock(), []
  calls = {
    "a": (_fn(clock, 1.0, "a", log), (1,)),
    "b": (_fn(clock, 3.0, "b", log), (2, 3)),
  }
  t = timing.interleaved(calls, repeats=3, clock=clock)
  # One untimed warm-up call each, then a-then-b rounds with their args.
  assert log == [("a", (1,)), ("b", (2, 3))] + [("a", (1,)), ("b", (2, 3))] * 3
  np.testing.assert_array_equal(t["a"], [1.0] * 3)
  np.testing.assert_array_equal(t["b"], [3.0] * 3)


def test_min_seconds_adds_rounds_up_to_max_rounds():
  clock = _Clock()
  calls = {
    "a": (_fn(clock, 1.0, "a", []), ()),
    "b": (_fn(clock, 2.0, "b", []), ()),
  }
  # A round takes 3 s: 10 s need 4 rounds (12 s), more than repeats = 2.
  t = timing.interleaved(calls, repeats=2, min_seconds=10.0, clock=clock)
  assert len(t["a"]) == len(t["b"]) == 4
  t = timing.interleaved(
    calls, repeats=2, min_seconds=10.0, max_rounds=3, clock=clock
  )
  assert len(t["a"]) == 3
  # By default a long min_seconds stops at 10 x repeats.
  t = timing.interleaved(calls, repeats=2, min_seconds=1e9, clock=clock)
  assert len(t["a"]) == 20
  # Without min_seconds, exactly `repeats` rounds.
  assert len(timing.interleaved(calls, repeats=5, clock=clock)["a"]) == 5


def test_median_seconds_skips_the_warmup_calls():
  clock, log = _Clock(), []
  costs = iter([100.0, 100.0, 1.0, 5.0, 2.0])  # two slow warm-ups (compiles)

  def fn(x):
    log.append(x)
    clock.now += next(costs)
    return x

  assert timing.median_seconds(fn, 7, repeats=3, warmup=2, clock=clock) == 2.0
  assert log == [7] * 5


def test_bad_counts_are_refused():
  with pytest.raises(ValueError, match="repeats=0"):
    timing.median_seconds(lambda: None, repeats=0)
  with pytest.raises(ValueError, match="0 functions"):
    timing.interleaved({}, repeats=1)
