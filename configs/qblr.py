r"""Quotient natural gradient (QBLR): Student-t MLE and Student-t VI.

Run (the CPU reproduction, ~1 min on 2 cores):
  python -m experiments.qblr --config configs/qblr.py:quick --workdir runs/qblr
Variants: (default) the paper-like scale (10 splits, 8000 full-batch steps);
  quick: 5 splits, 2000 steps; gpu: 32 splits, 2000 steps (the reproduce
  report's GPU tier); add ',smoke' for a seconds-long run (tests),
  ',paper_steps' for the paper's step-size rules in place of the VI grids
  (RDoG for QBLR, DoG with 10 MC samples for BBVI).

Every method trains through `lib.train.train` in its own sub-workdir
(mle/<method>, vi/<method>), a vmapped stack of runs: betas or learning rates
for the MLE, (step size, split) pairs for VI. `--config.vi.train.num_steps=...`
and friends set the training loop of each part; the MC keys follow
`config.seed`.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False, paper_steps=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0

  # (i) Student-t MLE (spec C.5): N draws from t_3(mu 1, sigma^2 4), start
  # xi0 = (0, 1, 10) with the kappa = 1 representative. Full batch, no
  # randomness: every method is deterministic.
  config.mle = dict(
    methods=("ecme", "qng", "gd", "adam"),
    n=2000,
    true_mu=1.0,
    true_sigma2=4.0,
    true_nu=3.0,
    xi0=(0.0, 1.0, 10.0),
    kappa0=1.0,
    qng_betas=(0.1, 0.3, 1.0),  # 1.0 only runs thanks to the domain guard
    gd_lrs=(0.3, 1.0, 3.0),
    adam_lrs=(0.01, 0.03, 0.1),
    max_halvings=30,
    tol=1e-8,  # the gap |l_t - l*| that counts as converged
    # The reference l*: ECME fixed-point iterations, then Newton polish.
    reference_em_steps=300,
    reference_newton_steps=30,
    # log_every: the resolution of the convergence figure; the iteration
    # counts are exact whatever it is (tracked on device, in the state).
    train=common.train_config(
      num_steps=2000, log_every=10, checkpoint_every=500
    ),
  )
  # (ii) Student-t VI for Bayesian logistic regression on breast cancer.
  # Paper: 10 stratified 80/20 splits, 8000 epochs, DoG/RDoG step sizes.
  # Every method gets the same budget: a 3-point step-size grid, the point
  # chosen on the final training ELBO (never on test accuracy) [ours: at
  # 2000 full-batch steps the paper's RDoG is still ramping up; measured in
  # WORKSPACE "QBLR: the paper's step sizes"]. ':paper_steps': the paper's
  # tuning-free rules (the Gaussian BLR, not in the paper, keeps its grid).
  # Methods: "qng_nw", QBLR as the paper's NG-Ours (a full-covariance
  # Student-t through the Normal-Wishart lift; the claims read it); "qng",
  # the mean-field Normal-Gamma QBLR [ours; the claims' method until
  # 2026-12-06: ('qng', 'blr_gauss', 'bbvi') reproduces those runs bit for
  # bit]; the baselines "blr_gauss" and "bbvi".
  config.vi = dict(
    methods=("qng_nw", "qng", "blr_gauss", "bbvi"),
    num_splits=10,
    test_fraction=0.2,
    num_samples=1,  # MC samples per step (paper: 1 for QBLR)
    prior_precision=1.0,
    sigma2_0=0.1,
    nu0=10.0,
    kappa0=1.0,
    # The paper's step-size rules instead of a grid (':paper_steps' sets all
    # three, and BBVI's 10 MC samples): RDoG in the lift for "qng_nw" and
    # "qng" (initial distance rdog_eps), Euclidean DoG for "bbvi" (BBVI-NS).
    qng_nw_rdog=False,
    qng_rdog=False,
    bbvi_dog=False,
    bbvi_num_samples=1,  # MC samples per BBVI step (paper's BBVI-NS: 10)
    # QNG's and the Gaussian BLR's grids were (0.02, 0.05, 0.1) until
    # 2026-12-05: both picked 0.02, the grid's edge, where smaller steps
    # gave a better training ELBO. Re-centred on the best, as every grid
    # here is, until it was inside: (0.01, 0.02, 0.05) picked 0.01 (both),
    # (0.005, 0.01, 0.02) picked 0.005 (both), then this grid.
    qng_lrs=(0.0025, 0.005, 0.01),
    # Centred as the other grids: (0.0025, 0.005, 0.01) picked its top edge;
    # (0.01, 0.02, 0.05, 0.1, 0.2) peaked at 0.05 (training ELBO).
    qng_nw_lrs=(0.02, 0.05, 0.1),
    rdog_eps=1e-3,
    max_halvings=30,
    blr_rhos=(0.0025, 0.005, 0.01),
    bbvi_lrs=(0.003, 0.01, 0.03),  # Adam on (mu, log s, log nu)
    elbo_samples=200,  # MC samples of the final training ELBO (selection)
    elbo_ema=0.98,  # decay of the logged ELBO average
    eval_samples=100,  # posterior samples of the "sample" accuracy
    interval_level=0.95,  # paired t interval over splits
    train=common.train_config(
      num_steps=8000, log_every=50, checkpoint_every=1000
    ),
  )
  config.mle.train.seed = config.get_ref("seed")
  config.vi.train.seed = config.get_ref("seed")

  if arg.variant == "quick":
    config.mle.train.num_steps = 1500
    config.vi.num_splits = 5
    config.vi.train.update(num_steps=2000, checkpoint_every=500)
  if arg.variant == "gpu":
    # The GPU tier (issue 35): 32 splits (the VI intervals are over
    # splits), the quick report's count to settle its unresolved
    # iterations row (5 ran). At 32 splits the Normal-Wishart QBLR chose
    # its grid's top edge (0.1) and the Gaussian BLR its bottom edge
    # (0.0025) (WORKSPACE "QBLR: the paper's Normal-Wishart lift"), so both
    # 3-point grids move one step that way.
    config = common.variant_of(get_config("quick"), "gpu")
    config.vi.num_splits = 32
    config.vi.qng_nw_lrs = (0.05, 0.1, 0.2)
    config.vi.blr_rhos = (0.00125, 0.0025, 0.005)
  if arg.paper_steps:
    config.vi.update(
      qng_nw_rdog=True, qng_rdog=True, bbvi_dog=True, bbvi_num_samples=10
    )
  if arg.smoke:
    config.mle.n = 400
    config.mle.train.update(num_steps=60, log_every=10, checkpoint_every=20)
    # BBVI left out: its gamma-sampler gradient dominates compile time.
    config.vi.update(
      methods=("qng_nw", "qng", "blr_gauss"),
      num_splits=2,
      eval_samples=10,
      elbo_samples=10,
    )
    config.vi.train.update(num_steps=30, log_every=5, checkpoint_every=10)
  return common.lock(config)
