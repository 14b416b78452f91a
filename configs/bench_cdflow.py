r"""CDFlow efficiency benchmark: CD vs dense log-det, inverse and forward (jitted).

Run (the CPU reproduction, ~1 min on 2 cores):
  python -m experiments.bench_cdflow --config configs/bench_cdflow.py:quick \
    --workdir runs/bench_cdflow
Variants: (default) n in {16, ..., 1024}, batch 4096, 20 timed repeats;
  quick: n up to 512, 5 repeats; gpu: n in {96, ..., 4096} on a GPU
  (tests/gpu/run.sh); add ',smoke' for a seconds-long run.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="full", smoke=False)
  common.check_variant(arg.variant, ("full", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.sizes = (16, 32, 64, 96, 128, 256, 512, 1024)
  config.batch = 4096  # vectors per inverse/forward call (paper Sec. 4.4)
  config.m = 2  # CD diagonal factors (paper default)
  config.repeats = 20  # timed calls; the median is reported
  config.inner = (
    10  # op applications per call (lax.fori_loop), amortises dispatch
  )
  config.reference_n = 96  # the paper's headline channel count
  config.seed = 0
  if arg.variant == "quick":
    config.sizes = (16, 32, 64, 96, 128, 256, 512)
    config.repeats = 10
  if arg.variant == "gpu":
    # From the paper's headline 96 channels up to where dense O(n^3) log-det
    # and solve dominate; 10 rounds keep the run near a minute on an H200.
    config.sizes = (96, 128, 256, 512, 1024, 2048, 4096)
    config.repeats = 10
  if arg.smoke:
    config.sizes = (8, 16)
    config.batch = 64
    config.repeats = 2
    config.inner = 2
    config.reference_n = 16
  return common.lock(config)
