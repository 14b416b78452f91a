"""Early config checks shared by the experiment binaries.

Each binary's `check_config(config)` runs first in `run()`, before
`train_lib.prepare_run` writes config.json and before any data is prepared or
model trained, so a bad value or method name stops the run at once with one
`ConfigError` line naming the key (not after earlier methods trained for a
minute, and not leaving a config.json that a corrected rerun would refuse).
"""

import math
from collections.abc import Iterable

from lib.core import errors


def _fail(message: str):
  raise errors.ConfigError(message)


def integer(value, key: str, minimum: int = 1) -> None:
  """An int (not a bool) >= minimum."""
  if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
    _fail(f"{key}={value!r} must be an integer >= {minimum}")


def number(
  value,
  key: str,
  *,
  above: float | None = None,
  at_least: float | None = None,
  below: float | None = None,
) -> None:
  """A finite real number within the bounds given (> above, >= at_least, < below)."""
  ok = (
    isinstance(value, int | float)
    and not isinstance(value, bool)
    and math.isfinite(value)
    and (above is None or value > above)
    and (at_least is None or value >= at_least)
    and (below is None or value < below)
  )
  if not ok:
    bounds = [f"> {above:g}" if above is not None else ""]
    bounds.append(f">= {at_least:g}" if at_least is not None else "")
    bounds.append(f"< {below:g}" if below is not None else "")
    bound = " and ".join(b for b in bounds if b)
    _fail(
      f"{key}={value!r} must be a finite number{' ' + bound if bound else ''}"
    )


def fraction(value, key: str, *, closed: bool = False) -> None:
  """A number in (0, 1), or in [0, 1] when `closed`."""
  ok = isinstance(value, int | float) and not isinstance(value, bool)
  ok = ok and (0 <= value <= 1 if closed else 0 < value < 1)
  if not ok:
    _fail(f"{key}={value!r} must lie in {'[0, 1]' if closed else '(0, 1)'}")


def one_of(value, known: Iterable, key: str) -> None:
  known = tuple(known)
  if value not in known:
    _fail(f"{key}={value!r} is not one of {list(known)}")


def names(values, known: Iterable, key: str, *, match=None) -> None:
  """A non-empty tuple of distinct names, each in `known` (or `match(name)`)."""
  known = tuple(known)
  if isinstance(values, str) or not isinstance(values, tuple | list):
    _fail(f"{key}={values!r} must be a tuple of names from {list(known)}")
  if not values:
    _fail(f"{key} is empty; choose from {list(known)}")
  for v in values:
    if v not in known and not (match and isinstance(v, str) and match(v)):
      _fail(f"{key} holds {v!r}, which is not one of {list(known)}")
  if len(set(values)) != len(values):
    _fail(f"{key}={tuple(values)!r} names a method twice")


def integers(values, key: str, *, minimum: int = 1, length=None) -> None:
  """A non-empty tuple of ints >= minimum (of `length` items when given)."""
  if not isinstance(values, tuple | list) or not values:
    _fail(f"{key}={values!r} must be a non-empty tuple of integers")
  if length is not None and len(values) != length:
    _fail(f"{key}={tuple(values)!r} must have {length} entries")
  for v in values:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
      _fail(f"{key} holds {v!r}, which must be an integer >= {minimum}")


def phased(train, steps_keys: str) -> None:
  """A phased experiment's `config.train.num_steps` must stay 0.

  Each phase's steps come from `steps_keys` (lib.train.phase_config sets
  them, with one checkpoint per phase), so another value would be read
  nowhere: it is refused, not ignored.
  """
  if train.num_steps != 0:
    _fail(
      f"config.train.num_steps={train.num_steps!r} is not read by this "
      f"experiment: its steps come from {steps_keys}; leave "
      "config.train.num_steps at 0"
    )


def multiple_of(value: int, factor: int, what: str) -> None:
  if isinstance(factor, bool) or not isinstance(factor, int) or factor <= 0:
    _fail(f"{what}={value} must be a multiple of {factor!r}, which is not > 0")
  if value % factor:
    _fail(f"{what}={value} must be a multiple of {factor}")


# `lr_selection` (sadl's `mlp`, nanoadam_finetune's `finetune`) -> the final
# evaluation each method's lr is chosen by (lower wins, a mean over seeds):
# "validation", the error on a part held out of the training images; or
# "train_loss", the final training loss (the protocol until 2026-12-06).
LR_SELECTION = {"validation": "val_error", "train_loss": "train_loss"}


def lr_selection(part, key: str) -> str:
  """Checks `part.lr_selection` (and `val_fraction` for "validation");
  returns the metric it selects on (`LR_SELECTION`)."""
  one_of(part.lr_selection, LR_SELECTION, f"{key}.lr_selection")
  if part.lr_selection == "validation":
    fraction(part.val_fraction, f"{key}.val_fraction")
  return LR_SELECTION[part.lr_selection]
