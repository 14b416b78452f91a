"""The run's working directory: creation, config.json, results.json, config changes.

Paths go through `etils.epath`, so a workdir may be local or on a bucket (`gs://...`).
Only process 0 writes files; every process validates.

A workdir belongs to one config. `prepare_run` refuses to resume (or overwrite the
results of) a workdir whose `config.json` differs from the new config, naming the keys
that differ, unless the config says `allow_config_change=True`; then the change is
recorded in `<workdir>/config_changes.jsonl` and the run goes on.
"""

import json
import math
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
  tmp.write_text(json.dumps(to_python(obj), indent=2, sort_keys=True) + "\n")
  tmp.replace(file)


def _config_dict(config) -> dict:
  data = config.to_dict() if hasattr(config, "to_dict") else dict(config)
  return json.loads(json.dumps(to_python(data)))  # tuples -> lists, as on disk


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


def check_config(workdir, config, *, allow_change: bool | None = None) -> None:
  """Raises ConfigError if `workdir` already holds a run of another config.

  Args:
    workdir: the run's directory.
    config: the new config.
    allow_change: resume anyway (recording the change); None takes the policy of
      the last `prepare_run` in this process (`config.allow_config_change`).
  """
  file = path(workdir, CONFIG_FILE)
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
      "use a new --workdir, or pass --config.allow_config_change=True to "
      "resume with the new config"
    )
  logging.warning("config changed in %s (allowed): %s", workdir, shown)
  if is_main_process():
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": diff}
    with path(workdir, CHANGES_FILE).open("a") as f:
      f.write(json.dumps(record) + "\n")


def write_config(workdir, config) -> None:
  """Saves the run's config as `<workdir>/config.json`."""
  write_json(path(workdir, CONFIG_FILE), _config_dict(config))


def phase_config(train_config, num_steps: int, **overrides):
  """A copy of a training config for one phase of an experiment.

  num_steps is set, checkpoint_every defaults to num_steps (one checkpoint at
  the end of the phase), and `overrides` (e.g. checkpoint_every, eval_every)
  replace any other key.
  """
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


def validate_train_config(config, where: str = "config") -> None:
  """Checks the keys `lib.train.train` reads; ConfigError naming the key."""
  for key in _TRAIN_KEYS + ("seed",):
    if key not in config:
      raise errors.ConfigError(f"{where} is missing the training key {key!r}")

  def check(ok, message):
    errors.check(ok, errors.ConfigError, f"{where}.{message}")

  for key in _TRAIN_KEYS + ("eval_every",):
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
  like `batch_size` or ending in `_batch_size` must be a positive integer.
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
    if hasattr(value, "items"):
      validate_sections(value, name)


def write_results(workdir, results: dict) -> dict:
  """Saves the run's summary as `<workdir>/results.json` and returns it."""
  write_json(path(workdir, "results.json"), results)
  return results


def save_figure(fig, file, **savefig_kwargs) -> None:
  """Saves a matplotlib figure (process 0 only) and closes it on every process."""
  import matplotlib.pyplot as plt

  if is_main_process():
    with epath.Path(file).open("wb") as f:
      fig.savefig(f, format=str(file).rsplit(".", 1)[-1], **savefig_kwargs)
  plt.close(fig)
