r"""Quotient natural gradient (QBLR): Student-t MLE and Student-t VI.

Run (the CPU reproduction, ~1-2 min on 2 cores):
  python -m experiments.qblr --config configs/qblr.py:quick --workdir runs/qblr
Variants: (default) the paper-like scale (10 splits, 8000 full-batch steps);
  quick: 5 splits, 2000 steps; add ',smoke' for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0

  # (i) Student-t MLE (spec C.5): N draws from t_3(mu 1, sigma^2 4), start
  # xi0 = (0, 1, 10) with the kappa = 1 representative.
  config.mle = dict(
    n=2000,
    true_mu=1.0,
    true_sigma2=4.0,
    true_nu=3.0,
    xi0=(0.0, 1.0, 10.0),
    kappa0=1.0,
    num_steps=2000,
    qng_betas=(0.1, 0.3, 1.0),  # 1.0 only runs thanks to the domain guard
    gd_lrs=(0.3, 1.0, 3.0),
    adam_lrs=(0.01, 0.03, 0.1),
    max_halvings=30,
    tol=1e-8,
  )
  # (ii) Student-t VI for Bayesian logistic regression on breast cancer.
  # Paper: 10 stratified 80/20 splits, 8000 epochs, DoG/RDoG step sizes.
  config.vi = dict(
    methods=("qng", "blr_gauss", "bbvi"),
    num_splits=10,
    test_fraction=0.2,
    num_steps=8000,
    num_samples=1,  # MC samples per step (paper: 1 for QBLR)
    prior_precision=1.0,
    sigma2_0=0.1,
    nu0=10.0,
    kappa0=1.0,
    qng_rdog=False,
    qng_lr=0.05,
    rdog_eps=1e-3,
    max_halvings=30,
    blr_rho=0.05,
    bbvi_lr=0.01,
    eval_samples=100,
  )

  if arg.variant == "quick":
    config.mle.num_steps = 1500
    config.vi.update(num_splits=5, num_steps=2000)
  if arg.smoke:
    config.mle.update(num_steps=60, n=400)
    # BBVI left out: its gamma-sampler gradient dominates compile time.
    config.vi.update(
      methods=("qng", "blr_gauss"), num_splits=2, num_steps=30, eval_samples=10
    )
  return common.lock(config)
