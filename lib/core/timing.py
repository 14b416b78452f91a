"""Wall-clock timing for the benchmarks: every call synchronised, warm-up first.

`median_seconds(fn, *args, repeats=)` times one function; `interleaved(calls,
repeats=)` times several in rounds, each round calling every function once in
turn, so that a change of machine load during the benchmark hits all of them
alike and their per-round ratios stay fair (`lib.core.stats.ratio_interval`
turns two of them into a speed-up and its band). Both wait for each call's
result (`jax.block_until_ready`; a result that is not a jax array, e.g. a
torch peer's, passes through: its function synchronises itself) and return
seconds (`interleaved`: every round's, so the caller picks the median, the
ratio, or the rounds).
"""

import time
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

import jax
import numpy as np


def _call(fn, args, clock) -> float:
  start = clock()
  jax.block_until_ready(fn(*args))
  return clock() - start


def median_seconds(
  fn: Callable, *args, repeats: int, warmup: int = 1, clock=time.perf_counter
) -> float:
  """Median seconds of `repeats` calls of fn(*args), after `warmup` calls.

  The first warm-up call compiles a jitted `fn`; it is not timed.
  `clock`: seconds as a float (tests pass a fake one).
  """
  rounds = interleaved(
    {"fn": (fn, args)}, repeats=repeats, warmup=warmup, clock=clock
  )
  return float(np.median(rounds["fn"]))


def interleaved(
  calls: Mapping[str, tuple[Callable, tuple[Any, ...]]],
  *,
  repeats: int,
  warmup: int = 1,
  min_seconds: float = 0.0,
  max_rounds: int | None = None,
  clock=time.perf_counter,
) -> dict[str, np.ndarray]:
  """Seconds per call of every `fn(*args)` in `calls`, timed in rounds.

  After `warmup` untimed calls of each (compilation), every round times each
  function once, in the order of `calls`. Rounds go on until there are
  `repeats` of them and, with `min_seconds`, until that much time has passed
  since the first round began, up to `max_rounds` (default 10 x repeats).

  Args:
    calls: {name: (fn, args)}.
    repeats: the fewest rounds (>= 1).
    warmup: untimed calls of each function before the first round.
    min_seconds: the least time the rounds take together.
    max_rounds: the most rounds `min_seconds` may ask for.
    clock: seconds as a float (tests pass a fake one).

  Returns:
    {name: [rounds] float64 seconds}; round r of every name is one round.
  """
  if repeats < 1 or warmup < 0 or not calls:
    raise ValueError(
      f"timing needs >= 1 repeat, >= 0 warm-up calls and >= 1 function, got "
      f"repeats={repeats}, warmup={warmup}, {len(calls)} functions"
    )
  max_rounds = 10 * repeats if max_rounds is None else max(max_rounds, repeats)
  for fn, args in calls.values():
    for _ in range(warmup):
      jax.block_until_ready(fn(*args))
  times = {name: [] for name in calls}
  start = clock()
  rounds = 0
  while rounds < repeats or (
    clock() - start < min_seconds and rounds < max_rounds
  ):
    for name, (fn, args) in calls.items():
      times[name].append(_call(fn, args, clock))
    rounds += 1
  return {name: np.asarray(v, np.float64) for name, v in times.items()}
