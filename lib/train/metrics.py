"""Run outputs: metrics.jsonl, optional TensorBoard events, and progress lines.

The metrics schema: one JSON object per (logged step, run), with scalar columns:
`step`, `run` (when the workdir trains several things) and the metrics. Process 0
writes; `read_jsonl` reads a file or every metrics.jsonl below a workdir, and
`pandas.DataFrame(read_jsonl(workdir))` is the table (big_vision's writer, without clu).
"""

import json
import math
import time

import numpy as np
from absl import logging
from etils import epath

from lib.core import errors
from lib.train import workdir as workdir_lib

METRICS_FILE = "metrics.jsonl"


def read_jsonl(path) -> list[dict]:
  """Rows of a metrics.jsonl file, or of every metrics.jsonl below a directory.

  A directory's files are read in sorted path order; rows keep their `run` column.
  A damaged last line (a run killed mid-write, a full disk) is skipped with a
  warning; a damaged line before it is a one-line WorkdirError naming the file
  and line number, since skipping it would silently lose a row.
  """
  path = epath.Path(path)
  files = sorted(_find(path, METRICS_FILE)) if path.is_dir() else [path]
  rows = []
  for file in files:
    rows += _read_rows(file)
  return rows


def _read_rows(file: epath.Path) -> list[dict]:
  try:
    lines = file.read_bytes().decode("utf-8", errors="replace").split("\n")
  except OSError as e:
    raise errors.WorkdirError(
      f"cannot read {file}: {e.strerror or e}"
    ) from None
  numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
  rows = []
  for k, (number, line) in enumerate(numbered):
    try:
      row = json.loads(line)
      if not isinstance(row, dict):
        raise ValueError(f"a JSON {type(row).__name__}, not an object")
    except ValueError as e:
      if k == len(numbered) - 1:
        logging.warning(
          "%s: skipping its damaged last line %d (%s)", file, number, e
        )
        break
      raise errors.WorkdirError(
        f"{file} line {number} is damaged ({e}): delete that line to "
        "keep the other rows, or use a new --workdir"
      ) from None
    rows.append(row)
  return rows


def _find(root: epath.Path, name: str):
  """Every file called `name` below `root` (epath has no recursive glob)."""
  for child in root.iterdir():
    if child.is_dir():
      yield from _find(child, name)
    elif child.name == name:
      yield child


class _TensorBoard:
  """Scalars as TensorBoard event files, through tensorboardX (no TensorFlow)."""

  def __init__(self, logdir: str):
    try:
      from tensorboardX import SummaryWriter
    except ImportError:
      raise errors.ConfigError(
        "config.tensorboard=True needs the tensorboardX package: "
        "pip install -r requirements-dev.txt"
      ) from None
    self._writer = SummaryWriter(logdir)

  def write(self, step: int, record: dict) -> None:
    prefix = f"{record['run']}/" if "run" in record else ""
    for key, value in record.items():
      if isinstance(value, int | float) and key not in ("step", "run"):
        self._writer.add_scalar(prefix + key, value, step)
    self._writer.flush()

  def close(self) -> None:
    self._writer.close()


class MetricWriter:
  """Appends rows to `<workdir>/metrics.jsonl` (process 0).

  On resume from `resume_step`, rows past that step (written by the killed run after
  its last checkpoint) are dropped, so the file ends as an uninterrupted run's would.
  """

  def __init__(
    self, workdir, *, resume_step: int | None = None, tensorboard=False
  ):
    self.path = workdir_lib.path(workdir, METRICS_FILE)
    self._active = workdir_lib.is_main_process()
    self.records = []  # Rows kept from before a resume.
    self._tb = None
    if not self._active:
      return
    if resume_step is not None and self.path.exists():
      self.records = [
        r for r in read_jsonl(self.path) if r["step"] <= resume_step
      ]
    self._append("".join(json.dumps(r) + "\n" for r in self.records), "w")
    if tensorboard:
      self._tb = _TensorBoard(str(workdir_lib.path(workdir, "tensorboard")))

  def write(self, step: int, metrics: dict) -> dict:
    """Appends one row; returns it (as written)."""
    record = {"step": int(step), **workdir_lib.to_python(metrics)}
    if self._active:
      self._append(json.dumps(record) + "\n", "a")
      if self._tb is not None:
        self._tb.write(step, record)
    return record

  def _append(self, text: str, mode: str) -> None:
    try:
      with self.path.open(mode) as f:
        f.write(text)
    except OSError as e:  # A full disk, a read-only or vanished directory.
      raise errors.WorkdirError(
        f"cannot write {self.path}: {e.strerror or e}"
      ) from None

  def close(self) -> None:
    if self._tb is not None:
      self._tb.close()


def check_finite(step: int, metrics: dict, keys=("loss", "grad_norm")) -> None:
  """Raises NonFiniteError naming `step` if a watched metric is NaN or infinite."""
  for key in keys:
    if key in metrics and not np.all(np.isfinite(np.asarray(metrics[key]))):
      raise errors.NonFiniteError(
        f"non-finite {key} ({metrics[key]}) at step {step}: lower the "
        "learning rate or check the input data"
      )


def first_non_finite(stacked: dict, keys=("loss", "grad_norm")):
  """Index along axis 0 (steps) of the first entry where a watched metric is not
  finite (for any run, when metrics carry a run axis); None if all are finite."""
  bad = None
  for key in keys:
    if key in stacked:
      v = np.asarray(stacked[key])
      rows = ~np.isfinite(v.reshape(v.shape[0], -1)).all(axis=1)
      idx = np.flatnonzero(rows)
      if idx.size:
        bad = int(idx[0]) if bad is None else min(bad, int(idx[0]))
  return bad


def _fmt_seconds(s: float) -> str:
  if not math.isfinite(s):
    return "?"
  s = int(s)
  return (
    f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 3600
    else f"{s // 60}m{s % 60:02d}s"
  )


def _summary(loss: np.ndarray) -> str:
  """A loss for the progress line: a scalar, or a stack's mean (min, max).

  A vmapped sweep's loss has one entry per member; printing them all made
  one progress line per few dozen members unreadable. Non-finite entries
  (diverged members) are counted, not averaged.
  """
  if not loss.ndim:
    return f"{loss:.5g}"
  if loss.size <= 4:
    return np.array2string(loss, precision=5)
  ok = loss[np.isfinite(loss)]
  bad = f", {loss.size - ok.size} non-finite" if ok.size < loss.size else ""
  if not ok.size:
    return f"non-finite ({loss.size} runs)"
  return (
    f"mean {ok.mean():.5g} (min {ok.min():.5g}, max {ok.max():.5g}; "
    f"{loss.size} runs{bad})"
  )


class Progress:
  """Logs step, loss, steps/s and ETA (process 0); the compiling interval is excluded."""

  def __init__(self, total_steps: int, first_step: int = 0, name: str = ""):
    self.total = total_steps
    self.name = f"[{name}] " if name else ""
    self._t0 = None
    self._s0 = first_step
    self._start = time.perf_counter()

  def update(self, step: int, metrics: dict) -> float:
    """Logs one progress line; returns steps/s (0 until measured)."""
    now = time.perf_counter()
    if self._t0 is None:  # The first interval includes compilation.
      self._t0, self._s0 = now, step
      rate = 0.0
    else:
      rate = (step - self._s0) / max(now - self._t0, 1e-9)
    eta = (self.total - step) / rate if rate > 0 else float("nan")
    loss = np.asarray(metrics.get("loss", float("nan")), np.float64)
    if workdir_lib.is_main_process():
      logging.info(
        "%sstep %d/%d  loss %s  %.1f steps/s  ETA %s  (%.0fs elapsed)",
        self.name,
        step,
        self.total,
        _summary(loss),
        rate,
        _fmt_seconds(eta),
        now - self._start,
      )
    return rate


class Sweep:
  """Progress over several runs of one experiment: "run i/N <label>", overall ETA.

      sweep = Sweep(len(methods), name="quartet_llm")
      for method in methods:
        with sweep.run(method):
          ...  # lib.train.train / fit

  The ETA assumes the remaining runs take as long as the finished ones on average.
  """

  def __init__(self, num_runs: int, name: str = ""):
    self.total = int(num_runs)
    self.name = f"[{name}] " if name else ""
    self.done = 0
    self._start = time.perf_counter()

  def run(self, label: str):
    return _SweepRun(self, label)

  def _log(self, message: str, *args) -> None:
    if workdir_lib.is_main_process():
      logging.info(self.name + message, *args)


class _SweepRun:
  def __init__(self, sweep: Sweep, label: str):
    self.sweep, self.label = sweep, label

  def __enter__(self):
    s = self.sweep
    elapsed = time.perf_counter() - s._start
    eta = elapsed / s.done * (s.total - s.done) if s.done else float("nan")
    s._log(
      "run %d/%d %s  (%.0fs elapsed, overall ETA %s)",
      s.done + 1,
      s.total,
      self.label,
      elapsed,
      _fmt_seconds(eta),
    )
    return self

  def __exit__(self, exc_type, *exc):
    if exc_type is None:
      self.sweep.done += 1
    return False
