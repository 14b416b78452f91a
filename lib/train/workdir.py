"""The run's working directory: creation, config.json, results.json, config changes.

Paths go through `etils.epath`, so a workdir may be local or on a bucket (`gs://...`).
Only process 0 writes files; every process validates.

A workdir belongs to one config. `prepare_run` refuses to resume (or overwrite the
results of) a workdir whose `config.json` differs from the new config, naming the keys
that differ, unless the config says `allow_config_change=True`; then the change is
recorded in `<workdir>/config_changes.jsonl` and the run goes on.
"""

import contextlib
import errno
import json
import math
import os
import socket
import sys
import time

import jax
import numpy as np
from absl import logging
from etils import epath

from lib.core import errors

CONFIG_FILE = "config.json"
CHANGES_FILE = "config_changes.jsonl"
# Keys that say how to run, not what is computed: they never count as a change.
_NEUTRAL_KEYS = ("allow_config_change",)

_policy = {"allow_config_change": False}


def is_main_process() -> bool:
  """True on process 0: the one that writes figures, results and progress."""
  return jax.process_index() == 0


def path(workdir, *parts) -> epath.Path:
  """`workdir/parts...` as an epath (local or gs://)."""
  return epath.Path(workdir).joinpath(*parts)


def prepare_workdir(workdir) -> str:
  """Creates `workdir` and checks that it is writable; raises WorkdirError if not."""
  try:
    root = epath.Path(workdir)
    root.mkdir(parents=True, exist_ok=True)
    probe = root / f".write_probe_{jax.process_index()}"
    probe.write_text("ok")
    probe.unlink()
  except OSError as e:
    raise errors.WorkdirError(
      f"workdir {str(workdir)!r} is not writable: {e.strerror or e}"
    ) from None
  return str(workdir)


LOCK_FILE = ".lock"


@contextlib.contextmanager
def lock(workdir):
  """Holds `<workdir>/.lock` for the duration: one run per workdir.

  The lock file holds the holder's pid and host. The lock itself is an
  advisory `flock` on it, which the kernel drops when the holder dies (even
  by SIGKILL): a lock file left by a dead run is taken over with a warning;
  a live holder (another run on this workdir) is a one-line WorkdirError
  naming it. Process 0 takes it (multi-host runs share one workdir); other
  processes and non-local workdirs (gs://) go unlocked.

  Raises:
    WorkdirError: another live run holds the workdir, or it is not writable.
  """
  if not is_main_process() or "://" in str(workdir):
    yield
    return
  import fcntl

  prepare_workdir(workdir)
  file = os.path.join(str(workdir), LOCK_FILE)
  while True:
    try:
      fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
      raise errors.WorkdirError(
        f"cannot create the lock file {file}: {e.strerror or e}"
      ) from None
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
      os.close(fd)
      if e.errno not in (errno.EAGAIN, errno.EACCES):
        raise errors.WorkdirError(
          f"cannot lock {file}: {e.strerror or e}"
        ) from None
      raise errors.WorkdirError(
        f"workdir {str(workdir)!r} is in use by {_holder(file)}: wait for "
        "that run to end (or stop it), or use another --workdir"
      ) from None
    try:  # The holder may have removed the file before we locked it.
      same = os.fstat(fd).st_ino == os.stat(file).st_ino
    except FileNotFoundError:
      same = False
    if same:
      break
    os.close(fd)
  previous = os.read(fd, 4096).decode(errors="replace").strip()
  if previous:
    logging.warning(
      "taking over the stale lock %s of %s (no longer running)",
      file,
      _holder(file, previous),
    )
  me = {"pid": os.getpid(), "host": socket.gethostname()}
  os.ftruncate(fd, 0)
  os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
  try:
    yield
  finally:
    with contextlib.suppress(OSError):
      os.unlink(file)
    os.close(fd)  # Closing drops the flock.


def _holder(file, text=None) -> str:
  """'pid N on host H' from a lock file (or what is known of it)."""
  try:
    if text is None:
      with open(file) as f:
        text = f.read()
    info = json.loads(text)
    return f"pid {info['pid']} on host {info['host']}"
  except (OSError, ValueError, KeyError, TypeError):
    return f"another run (lock file {file})"


def to_python(value):
  """numpy/jax scalars and arrays -> JSON-able Python values (NaN as a string)."""
  if isinstance(value, dict):
    return {str(k): to_python(v) for k, v in value.items()}
  if isinstance(value, list | tuple):
    return [to_python(v) for v in value]
  if isinstance(value, np.generic | jax.Array | np.ndarray):
    arr = np.asarray(value)
    return to_python(arr.item() if arr.ndim == 0 else arr.tolist())
  if isinstance(value, float) and not math.isfinite(value):
    return str(value)
  return value


def write_json(file, obj) -> None:
  """Writes `obj` as pretty JSON atomically (process 0 only)."""
  if not is_main_process():
    return
  file = epath.Path(file)
  tmp = file.parent / f"{file.name}.tmp"
  text = json.dumps(to_python(obj), indent=2, sort_keys=True) + "\n"
  try:
    tmp.write_text(text)
    tmp.replace(file)
  except OSError as e:  # A full disk, a read-only or vanished directory.
    raise errors.WorkdirError(
      f"cannot write {file}: {e.strerror or e}"
    ) from None


def _config_value(value):
  """A JSON stand-in for a config value JSON has no type for, stable across
  runs (config.json is compared on resume): a dtype by its name, a function
  or class by its qualified name, a set as a sorted list."""
  if isinstance(value, set | frozenset):
    return sorted(value, key=repr)
  try:
    return np.dtype(value).name  # jnp.float32, np.int8, jnp.bfloat16, ...
  except (TypeError, ValueError):
    pass
  if callable(value):
    module = getattr(value, "__module__", None)
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    return f"{module}.{name}" if module else name
  return str(value)


def _config_dict(config) -> dict:
  data = config.to_dict() if hasattr(config, "to_dict") else dict(config)
  # tuples -> lists, as on disk
  return json.loads(json.dumps(to_python(data), default=_config_value))


def _flatten(tree, prefix="") -> dict:
  if not isinstance(tree, dict):
    return {prefix: tree}
  out = {}
  for k, v in tree.items():
    out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
  return out


def config_diff(old: dict, new: dict) -> list[str]:
  """'key: old -> new' for every leaf that differs (neutral keys ignored)."""
  a, b = _flatten(old), _flatten(new)
  lines = []
  for key in sorted(set(a) | set(b)):
    if key.split(".")[-1] in _NEUTRAL_KEYS:
      continue
    if a.get(key, "<absent>") != b.get(key, "<absent>"):
      lines.append(
        f"{key}: {a.get(key, '<absent>')!r} -> {b.get(key, '<absent>')!r}"
      )
  return lines


def check_config(
  workdir,
  config,
  *,
  allow_change: bool | None = None,
  file_name: str = CONFIG_FILE,
) -> None:
  """Raises ConfigError if `workdir` already holds a run of another config.

  Args:
    workdir: the run's directory.
    config: the new config.
    allow_change: resume anyway (recording the change); None takes the policy of
      the last `prepare_run` in this process (`config.allow_config_change`).
    file_name: the record to compare with (`run_sweep` keeps its members in
      sweep.json beside config.json).
  """
  file = path(workdir, file_name)
  if not file.exists():
    return
  try:
    old = json.loads(file.read_text())
  except (OSError, ValueError) as e:
    raise errors.WorkdirError(
      f"{file} is not readable JSON ({e}); use a new --workdir"
    ) from None
  diff = config_diff(old, _config_dict(config))
  if not diff:
    return
  if allow_change is None:
    allow_change = _policy["allow_config_change"]
  shown = "; ".join(diff[:6]) + (
    f"; ... {len(diff) - 6} more" if len(diff) > 6 else ""
  )
  if not allow_change:
    raise errors.ConfigError(
      f"workdir {str(workdir)!r} holds a run with another config ({shown}): "
      "use a new --workdir, or resume with the new config: "
      "--config.allow_config_change=True on the command line, or the "
      "keyword allow_config_change=True to lib.train.fit / train / run_sweep "
      "from Python"
    )
  logging.warning("config changed in %s (allowed): %s", workdir, shown)
  if is_main_process():
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": diff}
    with path(workdir, CHANGES_FILE).open("a") as f:
      f.write(json.dumps(record) + "\n")


def write_config(workdir, config, *, file_name: str = CONFIG_FILE) -> None:
  """Saves the run's config as `<workdir>/config.json` (or `file_name`)."""
  write_json(path(workdir, file_name), _config_dict(config))


def phase_config(train_config, num_steps: int, **overrides):
  """A copy of a training config for one phase of an experiment.

  num_steps is set, checkpoint_every defaults to num_steps (one checkpoint at
  the end of the phase), and `overrides` (e.g. checkpoint_every, eval_every)
  replace any other key.

  Raises:
    ConfigError: an override names a key that is neither in `train_config`
      nor one that `lib.train.train` reads (a misspelt key).
  """
  unknown = sorted(
    k for k in overrides if k not in train_config and k not in _READ_KEYS
  )
  errors.check(
    not unknown,
    errors.ConfigError,
    f"phase_config: unknown training key(s) {unknown}; the training config "
    f"has {sorted(train_config)}",
  )
  cfg = train_config.copy_and_resolve_references()
  cfg.unlock()
  cfg.num_steps = num_steps
  cfg.checkpoint_every = num_steps
  cfg.update(overrides)
  return cfg


def prepare_run(workdir, config) -> str:
  """What every experiment's `run(config, workdir)` does first.

  Creates the workdir, validates every training section of `config` (before any
  data is prepared), refuses a changed config unless `config.allow_config_change`,
  and writes config.json.
  """
  allow = bool(config.get("allow_config_change", False))
  _policy["allow_config_change"] = allow
  validate_sections(config)
  prepare_workdir(workdir)
  check_config(workdir, config, allow_change=allow)
  write_config(workdir, config)
  return str(workdir)


_TRAIN_KEYS = ("num_steps", "log_every", "checkpoint_every", "keep_checkpoints")
# Every key `lib.train.train` reads (the optional ones included).
_READ_KEYS = _TRAIN_KEYS + ("seed", "eval_every", "mesh_data", "tensorboard")


def validate_train_config(
  config, where: str = "config", *, needs_mesh_data: bool = False
) -> None:
  """Checks the keys `lib.train.train` reads; ConfigError naming the key.

  `needs_mesh_data`: the run is given no mesh, so it builds one over
  `config.mesh_data` devices and the key must be there.
  """
  for key in _TRAIN_KEYS + ("seed",):
    if key not in config:
      raise errors.ConfigError(f"{where} is missing the training key {key!r}")
  errors.check(
    not needs_mesh_data or "mesh_data" in config,
    errors.ConfigError,
    f"{where} is missing the training key 'mesh_data' (the devices of the "
    "data mesh; -1: all): add it, or pass mesh=",
  )

  def check(ok, message):
    errors.check(ok, errors.ConfigError, f"{where}.{message}")

  for key in _TRAIN_KEYS + ("eval_every", "seed", "mesh_data"):
    value = config.get(key, 0)
    check(
      isinstance(value, int) and not isinstance(value, bool),
      f"{key}={value!r} must be an integer",
    )
  check(config.num_steps >= 0, f"num_steps={config.num_steps} must be >= 0")
  check(config.log_every > 0, f"log_every={config.log_every} must be > 0")
  check(
    config.keep_checkpoints > 0,
    f"keep_checkpoints={config.keep_checkpoints} must be > 0",
  )
  check(
    config.checkpoint_every > 0
    and config.checkpoint_every % config.log_every == 0,
    f"checkpoint_every={config.checkpoint_every} must be a positive "
    f"multiple of log_every={config.log_every}",
  )
  eval_every = config.get("eval_every", 0)
  check(
    eval_every >= 0 and eval_every % config.log_every == 0,
    f"eval_every={eval_every} must be 0 or a multiple of "
    f"log_every={config.log_every}",
  )


def validate_sections(config, where: str = "config") -> None:
  """Validates, anywhere in `config`, what needs no knowledge of the experiment.

  Every section that holds the training keys is a training config; every key named
  like `batch_size` or ending in `_batch_size` must be a positive integer, and
  every `seed` or `*_seed` an integer >= 0 (numpy's generators refuse a
  negative seed, deep inside the data preparation).
  """
  if not hasattr(config, "items"):
    return
  if all(k in config for k in _TRAIN_KEYS):
    validate_train_config(config, where)
  for key, value in config.items():
    name = f"{where}.{key}"
    if key == "batch_size" or key.endswith("_batch_size"):
      errors.check(
        isinstance(value, int) and not isinstance(value, bool) and value > 0,
        errors.ConfigError,
        f"{name}={value!r} must be a positive integer",
      )
    if key == "seed" or key.endswith("_seed"):
      errors.check(
        isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        errors.ConfigError,
        f"{name}={value!r} must be an integer >= 0",
      )
    if hasattr(value, "items"):
      validate_sections(value, name)


def write_results(workdir, results: dict) -> dict:
  """Saves the run's summary as `<workdir>/results.json` and returns it."""
  write_json(path(workdir, "results.json"), results)
  return results


def draw_figure(draw, *args, **kwargs) -> bool:
  """Calls `draw(*args, **kwargs)`, a function that writes a figure.

  Experiments write results.json first and figures after: a figure that fails
  (a plotting error, a full disk) is one warning naming it, never a lost
  result. Returns whether the figure was written.
  """
  try:
    draw(*args, **kwargs)
    return True
  except Exception as e:  # noqa: BLE001 (a figure never costs a result)
    logging.warning(
      "figure %s not written: %s: %s",
      getattr(getattr(draw, "func", draw), "__name__", draw),  # a partial too
      type(e).__name__,
      " ".join(str(e).split()),
    )
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
      plt.close("all")
    return False


def save_figure(fig, file, **savefig_kwargs) -> None:
  """Saves a matplotlib figure (process 0 only) and closes it on every process."""
  import matplotlib.pyplot as plt

  if is_main_process():
    with epath.Path(file).open("wb") as f:
      fig.savefig(f, format=str(file).rsplit(".", 1)[-1], **savefig_kwargs)
  plt.close(fig)
