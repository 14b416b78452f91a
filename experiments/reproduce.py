"""The reproduce report: run every registered paper claim, then write REPORT.md.

Each paper registers its claims in `experiments/claims/<paper>.py` (the Claim
schema and verdicts: `experiments/claims/report.py`). This binary runs each
(experiment, config) pair once, as its own process (the same command a user
would type), streams the child's log lines live prefixed with the run name
("[quartet_llm] step 100/400 ...") while saving them to `<run>/log.txt`, reads
the run's results.json, and writes REPORT.md: a claims table (paper value,
ours, comparator, check, verdict yes / no / unresolved / missing), a sanity
table, notes, failed runs, verdict changes since the last report in the same
workdir, and the count line.

A run is cached: `<run>/stamp.json` records the command and the code version
(a hash of every source file, `code_version()`) it ran with. A rerun of the main
job reuses a finished run whose stamp matches (seconds instead of minutes),
resumes an unfinished one with the same stamp from its checkpoints, and starts
afresh (deleting the old run directory) where the code or the command changed.
`--config.rerun=True` starts every selected run afresh.

Runs execute `--config.jobs` at a time (0: min(4, CPU count)), longest first
by the duration their stamp recorded last time.

Tiers (`config.tier`): "quick" runs each claim's config as registered (the CPU
reproduction); "gpu" (`configs/reproduce.py:gpu`) replaces its `quick` variant
by `gpu` (larger models, more seeds: issue 35), in run directories of their
own (`<experiment>_gpu`), so a gpu report reads only gpu runs.

Run: python -m experiments.reproduce --config configs/reproduce.py --workdir runs/reproduce
"""

import concurrent.futures
import dataclasses
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
from experiments import claims as claims_lib
from experiments.claims import report as report_lib
from lib import train as train_lib
from lib.core import errors

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def select(claims, only: str):
  """Claims whose name or paper label is in the '+'-separated `only` ('' = all)."""
  if not only:
    return claims
  wanted = set(only.split("+"))
  known = {c.name for c in claims} | {c.paper for c in claims}
  unknown = wanted - known
  if unknown:
    raise errors.ConfigError(
      f"config.only names unknown claims or papers {sorted(unknown)}; "
      f"known papers: {sorted({c.paper for c in claims})}"
    )
  return [c for c in claims if c.name in wanted or c.paper in wanted]


def at_tier(claims, tier: str):
  """The claims with the `quick` variant of their config replaced by `tier`.

  'quick' -> 'gpu', 'quick,x=1' -> 'gpu,x=1'; `run_name` follows, so each
  tier's runs live in their own directories. "quick" returns them as they are.
  """
  if tier == "quick":
    return list(claims)
  out = []
  for c in claims:
    parts = [tier if p == "quick" else p for p in c.config.split(",")]
    out.append(dataclasses.replace(c, config=",".join(parts)))
  return out


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
_LIVE = set()


def _stop(proc, grace: float = 30.0) -> None:
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


def _read_stamp(workdir):
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
    stamp = _read_stamp(os.path.join(workdir, run[2])) or {}
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
  old = _read_stamp(workdir)
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
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
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
    _LIVE.add(proc)
    timed_out = False
    try:
      proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      timed_out = True
      logging.warning("[%s] timed out after %s s: stopping it", name, timeout)
      _stop(proc)
    except BaseException:  # Ctrl-C: do not leave the child running.
      _stop(proc, grace=5.0)
      raise
    finally:
      _LIVE.discard(proc)
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


def previous_verdicts(workdir, tier: str = "quick") -> dict:
  """{claim name: verdict} of an earlier reproduce in `workdir` ({} if none,
  or if it ran another tier: a gpu verdict is not a change of a quick one).

  Reports written before verdicts existed stored `holds`: read as yes/no.
  """
  try:
    with open(os.path.join(workdir, "results.json")) as f:
      previous = json.load(f)
  except (OSError, ValueError):
    return {}
  if previous.get("tier", "quick") != tier:
    return {}
  claims = previous.get("claims", {})
  out = {}
  for name, row in claims.items():
    if isinstance(row, dict) and "verdict" in row:
      out[name] = row["verdict"]
    elif isinstance(row, dict) and "holds" in row:
      out[name] = "yes" if row["holds"] else "no"
  return out


def run(config, workdir) -> dict:
  # Before anything starts a JAX backend here: on a GPU this process must not
  # take 75 % of the memory its children need (it computes nothing).
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  # Not prepare_run: a new `only` subset in the same workdir is no conflict
  # (each child run checks its own config), so there is nothing to refuse.
  train_lib.prepare_workdir(workdir)
  train_lib.write_config(workdir, config)
  tier = config.get("tier", "quick")
  before = previous_verdicts(workdir, tier)
  claims = at_tier(select(claims_lib.all_claims(), config.only), tier)
  runs = {}
  for c in claims:
    runs.setdefault((c.experiment, c.config, c.run_name), None)
  logging.info(
    "reproduce: %d claims and %d sanity checks over %d runs: %s",
    sum(not c.sanity for c in claims),
    sum(c.sanity for c in claims),
    len(runs),
    ", ".join(name for _, _, name in runs),
  )
  outputs, failures, seconds = {}, {}, {}
  total_start = time.perf_counter()
  jobs = config.jobs or min(4, os.cpu_count() or 1)
  order = schedule(list(runs), workdir, config.get("expected_seconds", {}))
  # One persistent compilation cache for every child: a program compiled by
  # one run (the same init or step under a new closure: another method of a
  # sweep, another phase, another experiment) is loaded, not compiled again.
  # Cached executables are the compiled ones: numbers do not change.
  cache_dir = os.path.abspath(os.path.join(workdir, "jax_cache"))
  logging.info("running %d experiments, %d at a time", len(order), jobs)

  def one(i, experiment, config_arg, run_name):
    arg = f"{config_arg},smoke" if config.smoke else config_arg
    start = time.perf_counter()
    logging.info("[%d/%d] %s:%s", i, len(order), experiment, arg)
    results, error, cached = cached_run(
      experiment,
      arg,
      os.path.join(workdir, run_name),
      config.timeout_per_run,
      run_name,
      rerun=config.rerun,
      cache_dir=cache_dir,
    )
    logging.info(
      "[%d/%d] %s %s in %.0f s (%.0f s so far)%s",
      i,
      len(order),
      run_name,
      "cached (same command and code version)" if cached else "done",
      time.perf_counter() - start,
      time.perf_counter() - total_start,
      f": {error}" if error else "",
    )
    stamp = _read_stamp(os.path.join(workdir, run_name)) or {}
    return run_name, results, error, stamp.get("seconds")

  with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    futures = [pool.submit(one, i, *r) for i, r in enumerate(order, 1)]
    try:
      for future in concurrent.futures.as_completed(futures):
        run_name, results, error, took = future.result()
        outputs[run_name] = results
        seconds[run_name] = took
        if error:
          failures[run_name] = error
    except BaseException:  # Ctrl-C: stop every running child, then re-raise.
      for f in futures:
        f.cancel()
      for proc in list(_LIVE):
        _stop(proc, grace=5.0)
      raise
  total = time.perf_counter() - total_start
  logging.info("all runs finished in %.0f s of wall time", total)
  logging.info("evaluating %d claims", len(claims))
  rows = [report_lib.evaluate(c, outputs[c.run_name]) for c in claims]
  changes = {
    r["claim"].name: (before[r["claim"].name], r["verdict"])
    for r in rows
    if r["claim"].name in before and before[r["claim"].name] != r["verdict"]
  }
  scale = tier
  if config.smoke:
    scale = "smoke" if tier == "quick" else f"{tier},smoke"
  text = report_lib.render_markdown(
    rows,
    environment=environment_line(),
    failures=failures,
    changes=changes,
    scale=scale,
    wall_seconds=total,
    run_seconds=seconds,
  )
  report_path = os.path.join(workdir, "REPORT.md")
  if train_lib.is_main_process():
    with open(report_path, "w") as f:
      f.write(text)
  logging.info("wrote %s\n%s", report_path, text)
  claim_rows = [r for r in rows if not r["claim"].sanity]
  sanity_rows = [r for r in rows if r["claim"].sanity]
  summary = {
    "claims": {
      r["claim"].name: {
        "value": r["value"],
        "verdict": r["verdict"],
        "reasons": r["reasons"],
        "sanity": r["claim"].sanity,
        # None when settled (yes / no); else samples that would settle it
        # (an int) or the text saying why there is no number.
        "seeds_needed": r["seeds_needed"],
        "seeds_ran": r["seeds_ran"],
        "run": r["claim"].run_name,
      }
      for r in rows
    },
    "num_claims": len(claim_rows),
    **{f"num_{v}": n for v, n in report_lib.counts(claim_rows).items()},
    "num_sanity": len(sanity_rows),
    "num_sanity_pass": report_lib.counts(sanity_rows)["yes"],
    "tier": tier,
    "wall_seconds": round(total, 1),
    "run_seconds": seconds,
    "papers": {
      paper: report_lib.counts(
        [r for r in claim_rows if r["claim"].paper == paper]
      )
      for paper in dict.fromkeys(r["claim"].paper for r in claim_rows)
    },
    "verdict_changes": {k: list(v) for k, v in changes.items()},
    "failures": failures,
  }
  return train_lib.write_results(workdir, summary)


if __name__ == "__main__":
  _cli.main(run)
