r"""HNS benchmark: training (double backprop) and rollout steps/s vs a CNN.

Run (~1 min on 2 cores):
  python -m experiments.bench_hns --config configs/bench_hns.py \
    --workdir runs/bench_hns
Variants: (default) the advection setting (n_x 128, batch 32, HNS local FiLM
  SIREN 32 x 4 ~16K params vs a du/dt CNN 4 x 32 channels ~16K params);
  quick: n_x 64; add ',smoke' for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0
  config.n_x = 128
  config.length = 16.0
  config.dt = 0.02
  config.batch_size = 32
  config.hns = dict(
    width=32,
    num_layers=4,
    proj_dim=32,
    kernel_type="nonlinear",
    film="local",
    film_hidden=(32, 32),
    film_kernel_size=3,
    omega0=1.0,
  )
  config.cnn = dict(channels=(32, 32, 32, 32), kernel_size=5)
  config.j_stencil = "central"
  config.train_steps = 50  # steps per timed call (one lax.scan)
  config.rollout_steps = 200  # AB2 steps per timed call
  config.repeats = 5  # timed calls; the median is reported
  if arg.variant == "quick":
    config.n_x = 64
  if arg.smoke:
    config.n_x = 16
    config.batch_size = 8
    config.hns.update(width=8, num_layers=2, proj_dim=8, film_hidden=(8,))
    config.cnn.update(channels=(8, 8))
    config.train_steps = 3
    config.rollout_steps = 5
    config.repeats = 2
  return common.lock(config)
