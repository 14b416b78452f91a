"""The reproduce report: run every registered paper claim, then write REPORT.md.

Each paper registers its claims in `experiments/claims/<paper>.py`. This binary runs each
(experiment, config) pair once, as its own process (the same command a user would type),
reads the run's results.json, and fills a table of claim | paper | ours | holds?.

Run: python -m experiments.reproduce --config configs/reproduce.py --workdir runs/reproduce
"""

import json
import os
import platform
import subprocess
import sys
import time

import jax
from absl import logging

from experiments import _cli
from experiments import claims as claims_lib
from lib.core import errors
from lib.train import metrics as metrics_lib
from lib.train import report as report_lib

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


def run_experiment(experiment, config_arg, workdir, timeout):
  """Runs one experiment binary; returns (results dict or None, error text or None)."""
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
  with open(log_path, "w") as log:
    try:
      proc = subprocess.run(
        cmd, cwd=_ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout
      )
    except subprocess.TimeoutExpired:
      return None, f"timed out after {timeout} s (log: {log_path})"
  if proc.returncode != 0:
    with open(log_path) as f:
      tail = [line.strip() for line in f if line.strip()][-1:]
    return None, f"exit {proc.returncode}: {' '.join(tail)} (log: {log_path})"
  with open(os.path.join(workdir, "results.json")) as f:
    return json.load(f), None


def environment_line() -> str:
  devices = jax.devices()
  return (
    f"Environment: jax {jax.__version__}, {len(devices)} x "
    f"{devices[0].device_kind} ({devices[0].platform}), Python "
    f"{platform.python_version()}, {platform.machine()}; "
    f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."
  )


def run(config, workdir) -> dict:
  metrics_lib.prepare_workdir(workdir)
  metrics_lib.write_config(workdir, config)
  claims = select(claims_lib.all_claims(), config.only)
  runs = {}
  for c in claims:
    runs.setdefault((c.experiment, c.config, c.run_name), None)
  outputs, failures = {}, {}
  for i, (experiment, config_arg, run_name) in enumerate(runs, 1):
    arg = f"{config_arg},smoke" if config.smoke else config_arg
    start = time.perf_counter()
    logging.info("[%d/%d] %s:%s", i, len(runs), experiment, arg)
    results, error = run_experiment(
      experiment, arg, os.path.join(workdir, run_name), config.timeout_per_run
    )
    logging.info(
      "[%d/%d] %s done in %.0f s%s",
      i,
      len(runs),
      run_name,
      time.perf_counter() - start,
      f": {error}" if error else "",
    )
    outputs[run_name] = results
    if error:
      failures[run_name] = error
  rows = [report_lib.evaluate(c, outputs[c.run_name]) for c in claims]
  text = report_lib.render_markdown(
    rows, environment=environment_line(), failures=failures
  )
  with open(os.path.join(workdir, "REPORT.md"), "w") as f:
    f.write(text)
  logging.info("wrote %s\n%s", os.path.join(workdir, "REPORT.md"), text)
  summary = {
    "claims": {
      r["claim"].name: {"value": r["value"], "holds": r["holds"]} for r in rows
    },
    "num_claims": len(rows),
    "num_hold": sum(r["holds"] for r in rows),
    "failures": failures,
  }
  return metrics_lib.write_results(workdir, summary)


if __name__ == "__main__":
  _cli.main(run)
