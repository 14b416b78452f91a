"""Error types for bad input. The experiment CLI prints a `UserError` as one line."""

import zipfile

import jax


class UserError(Exception):
  """Base class of errors caused by the user's input, not by a bug."""


class ConfigError(UserError, ValueError):
  """A config value is missing, unknown, of the wrong type or out of range."""


class ShapeError(UserError, ValueError):
  """An array has a shape the operation cannot take."""


class DTypeError(UserError, TypeError):
  """An array has a dtype the operation cannot take."""


class NonFiniteError(UserError, FloatingPointError):
  """A loss, gradient or input is NaN or infinite."""


class WorkdirError(UserError, OSError):
  """The working directory cannot be created or written."""


class CheckpointError(UserError, RuntimeError):
  """No checkpoint can be restored: all damaged, or from another model."""


class DistributedError(UserError, RuntimeError):
  """Multi-process start-up failed: a bad setting, or a peer never came."""


# What np.load raises on a file that is not a readable .npy/.npz array.
NPY_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile)


def npy_read_reason(e: BaseException) -> str:
  """np.load's error as a user reads it: its first line, and for a pickle
  refusal what the file is (not numpy's format, or Python objects)."""
  first = (str(e).splitlines() or [type(e).__name__])[0]
  if "pickle" in first:
    first = "not numpy's array format, or an array of Python objects"
  return first


def check_one_of(value, known, key: str) -> None:
  """ConfigError naming `key` unless `value` is one of `known` (early validation)."""
  check(
    value in known,
    ConfigError,
    f"{key}={value!r} is not one of {sorted(known)}",
  )


def check(condition: bool, error_type: type[UserError], message: str) -> None:
  """Raises `error_type(message)` unless `condition` holds (host-side check)."""
  if not condition:
    raise error_type(message)


def is_concrete(x) -> bool:
  """True when `x` holds values: not a tracer (an argument of a jitted,
  vmapped or differentiated function), whose values a host-side check cannot
  read. Value checks run on concrete input only; shape checks always run."""
  return not isinstance(x, jax.core.Tracer)


def is_static_zero(x) -> bool:
  """True for a Python number equal to 0: a term it scales (a weight decay)
  can be left out of the program. An array (optax.inject_hyperparams traces
  its hyperparameters) is never static, whatever it holds."""
  return isinstance(x, int | float) and x == 0
