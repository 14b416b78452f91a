"""Run outputs: metrics.jsonl, config.json, results.json and progress lines.

One JSON object per log step, written by process 0 only (big_vision's writer, without clu).
"""

import json
import math
import os
import time

import jax
import numpy as np
from absl import logging

from lib.core import errors


def prepare_workdir(workdir: str) -> str:
  """Creates `workdir` and checks that it is writable; raises WorkdirError if not."""
  try:
    os.makedirs(workdir, exist_ok=True)
    probe = os.path.join(workdir, f".write_probe_{jax.process_index()}")
    with open(probe, "w") as f:
      f.write("ok")
    os.remove(probe)
  except OSError as e:
    raise errors.WorkdirError(
      f"workdir {workdir!r} is not writable: {e.strerror or e}"
    ) from None
  return workdir


def _to_python(value):
  if isinstance(value, dict):
    return {k: _to_python(v) for k, v in value.items()}
  if isinstance(value, list | tuple):
    return [_to_python(v) for v in value]
  if isinstance(value, np.generic | jax.Array | np.ndarray):
    arr = np.asarray(value)
    return arr.item() if arr.ndim == 0 else arr.tolist()
  if isinstance(value, float) and not math.isfinite(value):
    return str(value)
  return value


def write_json(path: str, obj) -> None:
  """Writes `obj` as pretty JSON atomically (process 0 only)."""
  if jax.process_index() != 0:
    return
  tmp = f"{path}.tmp"
  with open(tmp, "w") as f:
    json.dump(_to_python(obj), f, indent=2, sort_keys=True)
    f.write("\n")
  os.replace(tmp, path)


def write_config(workdir: str, config) -> None:
  """Saves the run's config as `<workdir>/config.json`."""
  data = config.to_dict() if hasattr(config, "to_dict") else dict(config)
  write_json(os.path.join(workdir, "config.json"), data)


def write_results(workdir: str, results: dict) -> dict:
  """Saves the run's summary as `<workdir>/results.json` and returns it."""
  write_json(os.path.join(workdir, "results.json"), results)
  return results


def read_jsonl(path: str) -> list[dict]:
  """Reads a metrics.jsonl file into a list of dicts."""
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


class MetricWriter:
  """Appends one JSON line per log step to `<workdir>/metrics.jsonl`.

  On resume from step `resume_step`, lines past that step (written by the killed run after
  its last checkpoint) are dropped, so the file ends as an uninterrupted run's would.
  """

  def __init__(self, workdir: str, *, resume_step: int | None = None):
    self.path = os.path.join(workdir, "metrics.jsonl")
    self._active = jax.process_index() == 0
    self.records = []  # Lines kept from before a resume.
    if not self._active:
      return
    if resume_step is None:
      open(self.path, "w").close()
    elif os.path.exists(self.path):
      self.records = [
        r for r in read_jsonl(self.path) if r["step"] <= resume_step
      ]
      with open(self.path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in self.records)

  def write(self, step: int, metrics: dict) -> None:
    if not self._active:
      return
    record = {"step": int(step), **_to_python(metrics)}
    with open(self.path, "a") as f:
      f.write(json.dumps(record) + "\n")


def check_finite(step: int, metrics: dict, keys=("loss", "grad_norm")) -> None:
  """Raises NonFiniteError naming `step` if a watched metric is NaN or infinite."""
  for key in keys:
    if key in metrics and not np.all(np.isfinite(np.asarray(metrics[key]))):
      raise errors.NonFiniteError(
        f"non-finite {key} ({metrics[key]}) at step {step}: lower the "
        "learning rate or check the input data"
      )


def first_non_finite(stacked: dict, keys=("loss", "grad_norm")):
  """Index of the first entry along axis 0 where a watched metric is not finite."""
  bad = None
  for key in keys:
    if key in stacked:
      idx = np.flatnonzero(~np.isfinite(np.asarray(stacked[key])))
      if idx.size:
        bad = int(idx[0]) if bad is None else min(bad, int(idx[0]))
  return bad


class Progress:
  """Logs step, loss, steps/s and ETA; the first (compiling) interval is excluded."""

  def __init__(self, total_steps: int, first_step: int = 0, name: str = ""):
    self.total = total_steps
    self.name = f"[{name}] " if name else ""
    self._t0 = None
    self._s0 = first_step
    self._start = time.perf_counter()

  def update(self, step: int, metrics: dict) -> float:
    """Logs one progress line; returns steps/s (0 until measured)."""
    now = time.perf_counter()
    if (
      self._t0 is None
    ):  # First interval includes compilation: start the clock here.
      self._t0, self._s0 = now, step
      rate = 0.0
    else:
      rate = (step - self._s0) / max(now - self._t0, 1e-9)
    eta = (self.total - step) / rate if rate > 0 else float("nan")
    loss = metrics.get("loss", float("nan"))
    logging.info(
      "%sstep %d/%d  loss %.5g  %.1f steps/s  ETA %s  (%.0fs elapsed)",
      self.name,
      step,
      self.total,
      loss,
      rate,
      _fmt_seconds(eta),
      now - self._start,
    )
    return rate


def _fmt_seconds(s: float) -> str:
  if not math.isfinite(s):
    return "?"
  s = int(s)
  return (
    f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 3600
    else f"{s // 60}m{s % 60:02d}s"
  )
