r"""The reproduce report: run every registered paper claim at its quick scale.

Run (the main job; 14 min 54 s to 15 min 24 s for all quick runs on a fresh clone, 2-core CPU):
  python -m experiments.reproduce --config configs/reproduce.py --workdir runs/reproduce
A subset: --config configs/reproduce.py:only=simplicity_bias (claim names or paper labels,
separated by '+'). ':smoke' runs each experiment's smoke variant (seconds; used by tests).
Each child's log lines stream live, prefixed with its run name ("[qblr] ..."), and are
saved to <workdir>/<run>/log.txt. REPORT.md: claims (verdicts yes / no / unresolved /
missing, see experiments/claims/report.py), sanity checks, notes, failed runs, the verdicts
that changed since the last report in the same workdir, and the count line.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, only="", smoke=False, rerun=False, jobs=0)
  config = ml_collections.ConfigDict()
  config.only = arg.only  # '+'-separated claim names or paper labels; '' = all.
  # Append ',smoke' to every experiment's config argument.
  config.smoke = arg.smoke
  # Seconds; a run past it gets SIGTERM (it saves a checkpoint), then SIGKILL.
  config.timeout_per_run = 3600
  # Runs are cached by command and code version (experiments/reproduce.py);
  # True starts every selected run afresh.
  config.rerun = arg.rerun
  # Experiments run at once (each its own process); 0 = min(4, CPU count).
  config.jobs = arg.jobs
  # Seconds each run took in a full job on a 2-core CPU (two at a time); used
  # only to start the longest first in a workdir without stamps (later jobs
  # use the durations their own stamps record).
  config.expected_seconds = dict(
    quartet_llm=228,
    quartet_scaling=224,
    sadl=191,
    sfn=191,
    cdflow_density=114,
    drag=77,
    hns_kdv=106,
    hns_advection=80,
    mix=52,
    hns_toy=65,
    disaggregated_eval=74,
    dpo_diversity=59,
    qblr=66,
    trpe=32,
    bench_cdflow=66,
    compact_memory=80,
    simplicity_bias=33,
    nanoadam_finetune=32,
    bench_mxfp4=18,
  )
  return common.lock(config)
