"""The one wrapper over orbax's CheckpointManager (orbax V1 is a one-file change).

Every process calls `save` and `restore_latest`; orbax coordinates the writes.

Restoring is defensive, because a resume is where damage shows up (a job killed
while writing, a disk that filled up, a copied folder that lost files):

* kept steps are tried newest first; a step that cannot be read (a missing
  item folder, an empty or truncated data file, garbage in a manifest or
  metadata file, a read that does not finish within `restore_timeout_s`) is
  logged as one warning line naming the step and the reason, moved aside to
  `<workdir>/ckpt_damaged/<step>` (so that the run can write that step again),
  and the next older step is tried;
* a checkpoint whose tree, shapes or dtypes differ from the state being
  restored (one written by another model) stops the run with a one-line
  `CheckpointError` naming a differing leaf: falling back would silently
  restart a different experiment in the same workdir;
* if no kept step can be read, `CheckpointError` names the directory and steps.

Cheap checks run first (the step's files exist, are non-empty, the JSON
metadata parses); only then is orbax asked, in a daemon thread with a timeout,
since a tensorstore read of a damaged file has been seen to hang for minutes.
"""

import json
import os
import threading
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
from absl import logging
from etils import epath
from jax.experimental import multihost_utils

from lib.core import errors
from lib.core import rng

_ITEM = "default"  # orbax's item folder of a StandardSave checkpoint.
# JSON files every step must have, and one it has when orbax wrote it.
_JSON_FILES = {f"{_ITEM}/_METADATA": True, "_CHECKPOINT_METADATA": False}
DAMAGED_DIR = "ckpt_damaged"


class _Damaged(Exception):  # noqa: N818 (internal signal, never escapes)
  """A step that cannot be read; the message says why."""


def _directory(workdir) -> epath.Path:
  """`<workdir>/ckpt`, absolute for a local path; gs:// paths are kept as is."""
  workdir = os.fspath(workdir)
  if "://" not in workdir:
    workdir = os.path.abspath(workdir)
  return epath.Path(workdir) / "ckpt"


def _leaf_name(path) -> str:
  """orbax's parameter name of a key path: keys joined by dots."""
  parts = []
  for k in path:
    for attr in ("key", "idx", "name"):
      if hasattr(k, attr):
        parts.append(str(getattr(k, attr)))
        break
    else:
      parts.append(str(k))
  return ".".join(parts)


def _short(e: BaseException, limit: int = 160) -> str:
  """The first line of an exception, shortened: a reason for one log line."""
  lines = [line.strip() for line in str(e).splitlines() if line.strip()]
  text = lines[0] if lines else ""
  text = f"{type(e).__name__}: {text}" if text else type(e).__name__
  return text if len(text) <= limit else text[: limit - 3] + "..."


def _walk(folder: epath.Path, depth: int):
  """The files below `folder`, `depth` levels deep at most (no `**` on gs://)."""
  for entry in folder.iterdir():
    if entry.is_dir():
      if depth > 1:
        yield from _walk(entry, depth - 1)
    else:
      yield entry


def _run_with_timeout(fn, timeout_s: float):
  """fn() in a daemon thread; its result, its exception, or TimeoutError.

  A daemon thread, not an executor: a read stuck inside tensorstore must not
  keep the process from exiting.
  """
  box = {}
  # `jax.enable_x64` is thread-local: a float64 run must restore float64
  # arrays in the reading thread too (else orbax hands back float32).
  x64 = bool(jax.config.jax_enable_x64)

  def target():
    try:
      with jax.enable_x64(x64):
        box["value"] = fn()
    except BaseException as e:  # noqa: BLE001 (handed to the caller)
      box["error"] = e

  thread = threading.Thread(target=target, name="ckpt-restore", daemon=True)
  thread.start()
  thread.join(timeout_s)
  if thread.is_alive():
    raise TimeoutError(f"no answer within {timeout_s:g} s")
  if "error" in box:
    raise box["error"]
  return box["value"]


class Checkpointer:
  """Saves and restores a pytree of arrays under `<workdir>/ckpt`, keeping the last K."""

  def __init__(self, workdir, *, keep: int, restore_timeout_s: float = 120):
    self._path = _directory(workdir)
    self.directory = str(self._path)
    self.restore_timeout_s = float(restore_timeout_s)
    self._options = ocp.CheckpointManagerOptions(
      max_to_keep=max(int(keep), 1), create=True, cleanup_tmp_directories=True
    )
    self._manager = ocp.CheckpointManager(
      self._path,
      options=self._options,
      item_handlers=ocp.StandardCheckpointHandler(),
    )
    self._closed = False

  def latest_step(self) -> int | None:
    return self._manager.latest_step()

  def all_steps(self) -> list[int]:
    return sorted(self._manager.all_steps())

  def restore(self, abstract_state, step: int | None = None):
    """Restores `step` (default: the newest) into `abstract_state`'s structure.

    No fallback: see `restore_latest` for the defensive version.
    """
    step = self.latest_step() if step is None else step
    target = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
    return self._manager.restore(step, args=ocp.args.StandardRestore(target))

  def restore_latest(self, abstract_state):
    """(step, state) of the newest readable checkpoint; (None, None) if none.

    Args:
      abstract_state: a pytree of arrays or `jax.ShapeDtypeStruct`s (with
        shardings) giving the structure, shapes, dtypes and placement.

    Raises:
      CheckpointError: the checkpoints belong to another model (tree, shape or
        dtype differ), or every kept step is damaged.
    """
    steps = sorted(self._manager.all_steps(), reverse=True)
    if not steps:
      return None, None
    target = jax.tree.map(ocp.utils.to_shape_dtype_struct, abstract_state)
    damaged = []
    for step in steps:
      try:
        self._check_files(step)
        state = _run_with_timeout(
          lambda s=step: self._read(s, target), self.restore_timeout_s
        )
        ok = True
      except errors.CheckpointError:
        raise
      except _Damaged as e:
        reason, ok = str(e), False
      except Exception as e:  # noqa: BLE001 (any failure to read: damaged)
        reason, ok = _short(e), False
      if not _agreed(ok):
        reason = reason if not ok else "another process could not read it"
        damaged.append(step)
        logging.warning(
          "checkpoint step %d in %s is damaged (%s); trying an older step",
          step,
          self.directory,
          reason,
        )
        continue
      if damaged:
        self._set_aside(damaged)
      return step, state
    raise errors.CheckpointError(
      f"no readable checkpoint in {self.directory} (steps "
      f"{', '.join(map(str, sorted(damaged)))} are damaged; see the warnings "
      "above): move the ckpt folder away to start over, or use a new --workdir"
    )

  def _check_files(self, step: int) -> None:
    """Cheap checks before orbax: the files exist, are non-empty and parse."""
    root = self._path / str(step)
    item = root / _ITEM
    if not item.is_dir():
      raise _Damaged(f"its item folder {_ITEM}/ is missing")
    for name, required in _JSON_FILES.items():
      file = root / name
      if not file.exists():
        if not required:
          continue
        raise _Damaged(f"{name} is missing")
      try:
        json.loads(file.read_text())
      except (OSError, UnicodeDecodeError, ValueError) as e:
        raise _Damaged(f"{name} is not readable JSON ({_short(e, 60)})") from e
    for file in _walk(item, depth=3):
      if file.name == "manifest.ocdbt" or file.parent.name == "d":
        if file.stat().length == 0:
          raise _Damaged(f"{file.relative_to(root)} is empty")

  def _read(self, step: int, target):
    """Compares the saved tree with `target`, then restores (in the thread)."""
    meta = self._manager.item_metadata(step)
    tree = getattr(meta, "tree", meta)
    saved = {
      getattr(m, "name", None) or _leaf_name(p): m
      for p, m in jax.tree_util.tree_flatten_with_path(tree)[0]
    }
    if not saved:
      raise _Damaged("orbax finds no arrays in its metadata")
    wanted = {
      _leaf_name(p): _as_stored(x)
      for p, x in jax.tree_util.tree_flatten_with_path(target)[0]
    }
    self._check_compatible(step, saved, wanted)
    state = self._manager.restore(step, args=ocp.args.StandardRestore(target))
    return jax.block_until_ready(state)

  def _check_compatible(self, step, saved: dict, wanted: dict) -> None:
    def refuse(what):
      raise errors.CheckpointError(
        f"the checkpoint at step {step} in {self.directory} was written by "
        f"another model ({what}); use a new --workdir"
      )

    for name, x in wanted.items():
      if name not in saved:
        refuse(f"leaf {name!r} of shape {tuple(x.shape)} is not in it")
      m = saved[name]
      shape = tuple(getattr(m, "shape", ()) or ())
      if shape != tuple(x.shape):
        refuse(f"leaf {name!r} has shape {shape} there, {tuple(x.shape)} here")
      dtype = getattr(m, "dtype", None)
      if dtype is not None and np.dtype(dtype) != np.dtype(x.dtype):
        refuse(
          f"leaf {name!r} has dtype {np.dtype(dtype)} there, "
          f"{np.dtype(x.dtype)} here"
        )
    extra = sorted(set(saved) - set(wanted))
    if extra:
      refuse(f"it holds leaf {extra[0]!r}, which this model does not have")

  def _set_aside(self, steps) -> None:
    """Moves damaged steps to `<workdir>/ckpt_damaged/` so they can be rewritten."""
    if jax.process_index() == 0:
      dest_root = self._path.parent / DAMAGED_DIR
      dest_root.mkdir(parents=True, exist_ok=True)
      for step in steps:
        dest = dest_root / str(step)
        if dest.exists():
          dest = dest_root / f"{step}.{int(time.time())}"
        try:
          (self._path / str(step)).rename(dest)
          logging.warning("moved damaged checkpoint step %d to %s", step, dest)
        except OSError as e:
          logging.warning("could not move damaged step %d: %s", step, e)
    if jax.process_count() > 1:
      multihost_utils.sync_global_devices("checkpoint_set_aside")
    self._manager.reload()

  def save(self, step: int, state) -> None:
    if self._closed:  # orbax would log tracebacks and write nothing.
      raise errors.CheckpointError(
        f"save(step={step}) on a closed Checkpointer of {self.directory}: "
        "open a new one"
      )
    if step in self._manager.all_steps():
      return
    self._manager.save(step, args=ocp.args.StandardSave(state), force=True)

  def wait(self) -> None:
    self._manager.wait_until_finished()

  def close(self) -> None:
    """Waits for pending saves and closes; a second close does nothing."""
    if self._closed:
      return
    self._manager.wait_until_finished()
    self._manager.close()
    self._closed = True


def _as_stored(x):
  """The shape and dtype a leaf has on disk: a typed PRNG key is stored as its
  key data (threefry: uint32 [..., 2]). orbax's to_shape_dtype_struct does
  this for a key array but passes a key-typed ShapeDtypeStruct through."""
  if rng.is_typed_key(x):
    abstract = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.eval_shape(jax.random.key_data, abstract)
  return x


def _agreed(ok: bool) -> bool:
  """True when every process could read the step (all hosts restore one step)."""
  if jax.process_count() == 1:
    return ok
  flags = multihost_utils.process_allgather(np.int32(ok))
  return bool(np.min(flags))
