r"""HNS H0: learning toy functionals and their functional derivatives (Table 1).

Run (the CPU reproduction, ~2 min on 2 cores):
  python -m experiments.hns_toy --config configs/hns_toy.py:quick \
    --workdir runs/hns_toy
Variants: (default) the paper's setting (100 train / 10 validation quadratics
  on 100 points in [-1, 1], 10k steps, six seeds); quick: the same data,
  1k steps, ten seeds; add ',smoke' for a seconds-long run (tests).
Each (functional, model) sweeps config.lrs at seed 0, keeps the rate with the
lowest derivative MSE on a selection set, and trains the other seeds there.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  # Paper Table 1: quadratics with coefficients ~ U[-1, 1] on 100 uniform
  # points of [-1, 1] (trapezoid weights); 100 train / 10 validation.
  # OOD: coefficients ~ U[1, 3]; Disc.: the grid on [-2, 2].
  config.data = dict(
    n_x=100,
    lo=-1.0,
    hi=1.0,
    num_train=100,
    num_val=10,
    coeff_range=(-1.0, 1.0),
    ood_range=(1.0, 3.0),
    disc_lo=-2.0,
    disc_hi=2.0,
  )
  # F_l = int x^2 u (dF/du = x^2) and F_nl = int u^3 (dF/du = 3 u^2).
  config.functionals = ("linear", "cubic")
  # IKF: GELU-MLP kernel kappa(x) (linear) or kappa(x, u) (cubic), hidden
  # [64, 64] = 4.4K params (paper 4.3K). MLP on [x, u] in R^200 with hidden
  # [32, 32]: 7.5K (paper 7.5K).
  config.ikf = dict(hidden=(64, 64))
  config.mlp = dict(hidden=(32, 32))
  # The same tuning budget for both models (issue 14): one learning-rate
  # sweep at seed 0, the rate picked per model by its derivative MSE on a
  # separate selection set, then num_seeds - 1 more seeds at that rate
  # (paper: six seeds). Adam with cosine decay from the rate. The grid spans
  # the optima measured at quick scale (derivative MSE on the selection set:
  # linear IKF 1e-3 to 3e-3, cubic IKF >= 3e-2, both MLPs 1e-2 to 3e-2).
  # The official notebook (examples.ipynb) trains each model with Adam
  # 5e-4, no schedule, batch 1, 25 epochs (2,500 steps), MSE on F; its F
  # labels are exact integrals (sympy), ours the trapezoid sums; its MLP
  # derivative is the gradient / dx (ours / (mu dx), so 2x at the two end
  # points); its discretisation test reuses the validation polynomials.
  config.lrs = (3e-3, 1e-2, 3e-2)
  config.num_seeds = 6
  config.train = common.train_config(
    num_steps=10_000, log_every=500, checkpoint_every=10_000
  )
  if arg.variant == "quick":
    # 1k steps (the paper variant: 10k): the cubic IKF's 3 rates + 2 more
    # seeds must fit the reproduce report's CPU budget. Measured at
    # rate 3e-2 (one seed): its derivative MSE is 0.16 at 1k steps vs 0.12
    # at 2k. Seeds: n = 2 x the largest "seeds to settle" among this run's
    # unresolved claims in the 2026-12-05 pilot report (3 seeds; cubic IKF
    # grad MSE < 0.2: 5) = 10, seeds 0..9 (the pilot's 0..2 among them).
    # Seed s's key is fold_in(key, s) (`_hns.train_runs`), whatever the
    # count. Cost: the cubic IKF's seeds run one after the other, ~6 CPU-s
    # each (pilot 66 CPU-s in all at 3 seeds).
    config.num_seeds = 10
    config.train.update(num_steps=1000, log_every=500, checkpoint_every=1000)
  if arg.variant == "gpu":
    # The GPU tier (issue 35): quick's 10 seeds at 3k steps (quick: 1k;
    # paper: 6 seeds at 10k).
    config = common.variant_of(get_config("quick"), "gpu")
    config.train.update(num_steps=3000, log_every=500, checkpoint_every=3000)
  if arg.smoke:
    config.data.update(n_x=20, num_train=16, num_val=4)
    config.ikf.update(hidden=(8,))
    config.mlp.update(hidden=(8,))
    config.lrs = (1e-3, 1e-2)
    config.num_seeds = 2
    config.train.update(num_steps=10, log_every=5, checkpoint_every=5)
  return common.lock(config)
