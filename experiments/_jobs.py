"""Running experiment binaries as child processes, behind a stamp cache.

The reproduce report's job runner (experiments/reproduce.py): each run is the
command a user would type, in its own process group, its log lines relayed live
with the run name ("[quartet_llm] step 100/400 ...") and saved to
`<run>/log.txt`. `<run>/stamp.json` records the command and `code_version()`;
`cached_run` reuses a finished run with the same stamp, resumes an unfinished
one, and starts afresh where the code or the command changed.
"""

import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import jax
from absl import logging

from experiments import _cli
from lib import train as train_lib

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# absl's line header, e.g. "I1203 09:19:59.419810 139771284233088 loop.py:88] ".
_ABSL_HEADER = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+\s+\S+:\d+\]\s?")


def _relay(pipe, log, name: str, echo: bool) -> None:
  """Copies the child's output line by line to `log` and, if `echo`, to ours.

  Echoed lines lose absl's header and gain the run name:
  "[quartet_llm] step 100/400 ...". Runs in its own thread until EOF.
  """
  for line in iter(pipe.readline, ""):
    log.write(line)
    log.flush()
    text = line.rstrip()
    if echo and text:
      m = _ABSL_HEADER.match(text)
      level = m.group(1) if m else "I"
      text = text[m.end() :] if m else text
      (logging.info if level == "I" else logging.warning)("[%s] %s", name, text)
  pipe.close()


# Children running now (the runs execute `config.jobs` at a time, one thread
# each); an interrupted reproduce stops them all.
LIVE = set()


def stop(proc, grace: float = 30.0) -> None:
  """SIGTERM to the child's process group (it saves a checkpoint), then SIGKILL."""
  for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
    try:
      os.killpg(proc.pid, sig)
    except ProcessLookupError:
      return
    try:
      proc.wait(timeout=wait)
      return
    except subprocess.TimeoutExpired:
      continue


# What a run's results depend on besides its command: the project's sources
# (configs included) and the pinned requirements.
_CODE_DIRS = ("lib", "experiments", "configs", "pallas_kernels")
_CODE_SUFFIXES = (".py", ".cc", ".cu", ".h")


def code_version(root: str = _ROOT) -> str:
  """sha256 (16 hex digits) over every project source file and requirements.txt.

  Independent of git, so it works in an installed copy or a dirty tree; the
  claim registry and the report machinery (`experiments/claims`,
  `experiments/reproduce.py` and its own `configs/reproduce.py`: selection,
  jobs, expected seconds) change what is read or when, not what a run
  computes, and are left out so that editing them does not rerun anything.
  """
  h = hashlib.sha256()
  paths = []
  for top in _CODE_DIRS:
    for dirpath, dirnames, files in os.walk(os.path.join(root, top)):
      dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
      paths += [
        os.path.join(dirpath, f) for f in files if f.endswith(_CODE_SUFFIXES)
      ]
  paths.append(os.path.join(root, "requirements.txt"))
  skip = (
    os.path.join(root, "experiments", "claims") + os.sep,
    os.path.join(root, "experiments", "reproduce.py"),
    os.path.join(root, "configs", "reproduce.py"),
  )
  for path in sorted(paths):
    if path.startswith(skip) or not os.path.exists(path):
      continue
    h.update(os.path.relpath(path, root).encode() + b"\0")
    with open(path, "rb") as f:
      h.update(f.read() + b"\0")
  return h.hexdigest()[:16]


def read_stamp(workdir):
  try:
    with open(os.path.join(workdir, "stamp.json")) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _write_stamp(workdir, stamp, status):
  with open(os.path.join(workdir, "stamp.json"), "w") as f:
    json.dump({**stamp, "status": status}, f, indent=1)


def schedule(runs, workdir, expected=None):
  """Runs ordered longest first, so that with several jobs the slowest start
  early and no core idles at the end: by the duration recorded in the run's
  stamp, else by `expected` (run name -> seconds, the config's measured
  table), else first of all (unknown)."""
  expected = expected or {}

  def seconds(run):
    stamp = read_stamp(os.path.join(workdir, run[2])) or {}
    return stamp.get("seconds", expected.get(run[2], float("inf")))

  return sorted(runs, key=seconds, reverse=True)


def cached_run(
  experiment, config_arg, workdir, timeout, name, *, rerun, cache_dir=None
):
  """run_experiment behind the stamp cache; returns (results, error, cached).

  Same command and code version: a finished run's results.json is reused and
  an unfinished one resumes from its checkpoints. Otherwise (or `rerun`), the
  old run directory is deleted and the run starts afresh.
  """
  stamp = {
    "command": f"experiments.{experiment} configs/{experiment}.py:{config_arg}",
    "code_version": code_version(),
    "jax": jax.__version__,
  }
  old = read_stamp(workdir)
  same = old is not None and all(old.get(k) == v for k, v in stamp.items())
  results_path = os.path.join(workdir, "results.json")
  if same and not rerun and old.get("status") == "done":
    try:
      with open(results_path) as f:
        return json.load(f), None, True
    except (OSError, ValueError):
      pass  # Damaged or missing: run it again (it resumes).
  if os.path.isdir(workdir) and (rerun or not same):
    if train_lib.is_main_process():
      logging.info(
        "[%s] %s: starting afresh",
        name,
        "rerun asked" if rerun else "code or command changed",
      )
      shutil.rmtree(workdir)
  os.makedirs(workdir, exist_ok=True)
  if train_lib.is_main_process():
    _write_stamp(workdir, stamp, "running")
  start = time.perf_counter()
  results, error = run_experiment(
    experiment, config_arg, workdir, timeout, name, cache_dir=cache_dir
  )
  if error is None and train_lib.is_main_process():
    stamp["seconds"] = round(time.perf_counter() - start, 1)
    _write_stamp(workdir, stamp, "done")
  return results, error, False


def run_experiment(
  experiment, config_arg, workdir, timeout, name=None, cache_dir=None
):
  """Runs one experiment binary; returns (results dict or None, error or None).

  The child's stdout and stderr go to `<workdir>/log.txt` and, on process 0,
  live to our log, each line prefixed with `[name]`. `cache_dir`: JAX's
  persistent compilation cache for the child (see `run`).
  """
  name = name or experiment
  cmd = [
    sys.executable,
    "-m",
    f"experiments.{experiment}",
    f"--config=configs/{experiment}.py:{config_arg}",
    f"--workdir={workdir}",
  ]
  logging.info("running: %s", " ".join(cmd))
  os.makedirs(workdir, exist_ok=True)
  log_path = os.path.join(workdir, "log.txt")
  env = dict(os.environ, PYTHONUNBUFFERED="1")  # prints arrive line by line
  # Several children share one GPU: none may take 75 % of its memory up front
  # (JAX's default). No effect on CPU.
  env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  if cache_dir:
    env.setdefault("JAX_COMPILATION_CACHE_DIR", cache_dir)
    env.setdefault(
      "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
      str(_cli.CACHE_MIN_COMPILE_SECS),
    )
  with open(log_path, "w") as log:
    proc = subprocess.Popen(
      cmd,
      cwd=_ROOT,
      env=env,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
      errors="replace",
      start_new_session=True,  # its own process group, stopped as one
    )
    relay = threading.Thread(
      target=_relay,
      args=(proc.stdout, log, name, train_lib.is_main_process()),
      daemon=True,
    )
    relay.start()
    LIVE.add(proc)
    timed_out = False
    try:
      proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      timed_out = True
      logging.warning("[%s] timed out after %s s: stopping it", name, timeout)
      stop(proc)
    except BaseException:  # Ctrl-C: do not leave the child running.
      stop(proc, grace=5.0)
      raise
    finally:
      LIVE.discard(proc)
      relay.join(timeout=10)
  if timed_out:
    return None, f"timed out after {timeout} s (log: {log_path})"
  if proc.returncode != 0:
    with open(log_path) as f:
      tail = [line.strip() for line in f if line.strip()][-1:]
    return None, f"exit {proc.returncode}: {' '.join(tail)} (log: {log_path})"
  results_path = os.path.join(workdir, "results.json")
  if not os.path.exists(results_path):
    return None, f"exit 0 but no results.json (log: {log_path})"
  with open(results_path) as f:
    return json.load(f), None


def environment_line() -> str:
  devices = jax.devices()
  return (
    f"Environment: jax {jax.__version__}, {len(devices)} x "
    f"{devices[0].device_kind} ({devices[0].platform}), Python "
    f"{platform.python_version()}, {platform.machine()}; "
    f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
  )
