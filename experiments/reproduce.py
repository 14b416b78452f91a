"""The reproduce report: run every registered paper claim, then write REPORT.md.

Each paper registers its claims in `experiments/claims/<paper>.py` (the Claim
schema and verdicts: `experiments/claims/report.py`). This binary runs each
(experiment, config) pair once, as its own process (the same command a user
would type), streams the child's log lines live prefixed with the run name
("[quartet_llm] step 100/400 ...") while saving them to `<run>/log.txt`, reads
the run's results.json, and writes REPORT.md: a claims table (paper value,
ours, comparator, check, verdict yes / no / unresolved / missing), the
commands that would settle the unresolved claims (each run again with more
seeds: `report.settle_commands`), a sanity table, notes, failed runs, verdict
changes since the last report in the same workdir, and the count line.

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
import json
import os
import time

from absl import logging

from experiments import _cli
from experiments import _jobs
from experiments import claims as claims_lib
from experiments.claims import report as report_lib
from lib import train as train_lib
from lib.core import errors


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
  tier = config.get("tier", "quick")
  claims = at_tier(select(claims_lib.all_claims(), config.only), tier)
  # Not prepare_run: a new `only` subset in the same workdir is no conflict
  # (each child run checks its own config), so there is nothing to refuse.
  train_lib.prepare_workdir(workdir)
  train_lib.write_config(workdir, config)
  before = previous_verdicts(workdir, tier)
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
  order = _jobs.schedule(
    list(runs), workdir, config.get("expected_seconds", {})
  )
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
    results, error, cached = _jobs.cached_run(
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
    stamp = _jobs.read_stamp(os.path.join(workdir, run_name)) or {}
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
      for proc in list(_jobs.LIVE):
        _jobs.stop(proc, grace=5.0)
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
  settle = report_lib.settle_commands(
    rows,
    _run_configs(workdir, outputs),
    seconds,
    config_suffix=",smoke" if config.smoke else "",
  )
  scale = tier
  if config.smoke:
    scale = "smoke" if tier == "quick" else f"{tier},smoke"
  text = report_lib.render_markdown(
    rows,
    environment=_jobs.environment_line(),
    failures=failures,
    changes=changes,
    scale=scale,
    wall_seconds=total,
    run_seconds=seconds,
    settle=settle,
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
    # One rerun command per run with unresolved claims (REPORT.md's
    # "Settling the unresolved claims").
    "settle": settle,
    "verdict_changes": {k: list(v) for k, v in changes.items()},
    "failures": failures,
  }
  return train_lib.write_results(workdir, summary)


def _run_configs(workdir, run_names) -> dict[str, dict]:
  """{run name: its config.json}, for the runs that wrote one."""
  configs = {}
  for name in run_names:
    file = os.path.join(workdir, name, "config.json")
    if os.path.exists(file):
      with open(file) as f:
        configs[name] = json.load(f)
  return configs


def check_config(config) -> None:
  """Refuses an unknown `config.only` name before the workdir is written."""
  select(claims_lib.all_claims(), config.only)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
