r"""Adam vs GD simplicity bias on Gaussian clusters and on patch-coloured digits.

Run (the CPU reproduction, ~1 min on 2 cores):
  python -m experiments.simplicity_bias --config configs/simplicity_bias.py:quick \
    --workdir runs/simplicity_bias
Variants: (default) the paper's Fig. 1 setting (n 5000, m 1000, sigma (0.2, 0.15));
  quick: the spec's minimal CPU experiment (isotropic sigma 0.1, m 100, 5000 steps);
  add ',smoke' to any variant for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant

  # Data of Eq. (1): n train points, a large test set for accuracies near 1.
  config.data = dict(
    n=5000, n_test=200_000, mu=0.3, omega=2.0, sx=0.2, sy=0.15, d=2, sz=0.01
  )
  config.model = dict(m=1000, alpha=1e-3)
  # Paper: full-batch GD lr 0.1; Adam lr 1e-4 with beta1 = beta2 = 0.9999.
  config.optim = dict(
    gd_lr=0.1, adam_lr=1e-4, adam_b1=0.9999, adam_b2=0.9999, adam_eps=1e-8
  )
  config.optimizers = ("gd", "adam", "signgd")
  # Seeds (each its own data draw and init) of the Adam - GD accuracy gap.
  config.gap_seeds = 5
  config.signgd_lr = 1e-4
  config.boundary_x2 = 0.3
  config.train = common.train_config(
    num_steps=20_000, log_every=500, checkpoint_every=5000, eval_every=5000
  )
  # Spurious-patch digits (paper Sec. 4.2): SGD vs Adam, mini-batch 64, BCE.
  config.spurious = dict(
    enabled=True,
    train_correlation=1.0,
    test_fraction=0.3,
    patch_value=1.0,
    width=64,
    alpha=1e-3,
    batch_size=64,
    sgd_lr=0.1,
    adam_lr=1e-3,
    num_steps=4000,
    seeds=5,
    # Seed i trains on its own split (data seed train.seed + i); False: the
    # one split of train.seed for every seed (the reports before 2026-12-07).
    vary_split=True,
  )

  if arg.variant == "quick":
    config.data.update(sx=0.1, sy=0.1)
    config.model.m = 100
    config.train.update(num_steps=5000, checkpoint_every=5000, eval_every=0)
  if arg.variant == "gpu":
    # The GPU tier (issue 35): the quick setting with 8 seeds per optimizer
    # in the accuracy gap and the spurious-feature experiment (quick: 5).
    config = common.variant_of(get_config("quick"), "gpu")
    config.spurious.seeds = 8
    config.gap_seeds = 8
  if arg.smoke:
    config.data.update(n=512, n_test=4096)
    config.model.m = 16
    config.train.update(
      num_steps=40, log_every=10, checkpoint_every=20, eval_every=0
    )
    config.spurious.update(num_steps=40, seeds=2)
    config.gap_seeds = 2
  return common.lock(config)
