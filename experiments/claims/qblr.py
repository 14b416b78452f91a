"""Claims of "The Quotient Bayesian Learning Rule" (NeurIPS 2025).

The VI rows read QBLR on the paper's Normal-Wishart lift ("qng_nw") and
compare it with every baseline the experiment runs (BBVI and the Gaussian
BLR), each tuned on the same 3-point step-size grid by final training
ELBO; differences are paired per split with a 95% t interval, and a row holds
only when the whole interval passes its check.
"""

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import Claim

_COMMON = dict(paper="qblr", experiment="qblr", config="quick")

CLAIMS = [
  Claim(
    name="qblr_vi_accuracy",
    claim=(
      "QBLR (a full-covariance Student-t through the Normal-Wishart lift) "
      "reaches high posterior-mean test accuracy for Bayesian logistic "
      "regression on breast cancer."
    ),
    paper_value="0.9711 (NG-Ours, Normal-Wishart lift)",
    comparator="threshold 0.96 (paper's NG-Ours 0.9711)",
    metric="vi.qng_nw.acc_mean",
    check=">= 0.96",
    interval=("vi.qng_nw.acc_mean_lo", "vi.qng_nw.acc_mean_hi"),
    samples="vi.qng_nw.acc_mean_per_split",
    count_key="vi.num_splits",
    sample_unit="splits",
    fmt="{:.4f}",
    figures=("vi_elbo.png",),
    note="Ours: the Normal-Wishart lift of the paper's NG-Ours (d = 31 with "
    "the bias), constant step chosen from (0.02, 0.05, 0.1) on training "
    "ELBO (the paper: RDoG), 2000 full-batch steps, 5 splits; band: 95% t "
    "interval over splits. The threshold tells the setup is accurate, not "
    "that QBLR is: MAP logistic regression under the same prior reaches "
    "`vi.map.acc_mean` on the same splits (0.977 at quick scale), and one "
    "test tumour is 0.009 of accuracy. The mean-field Normal-Gamma QBLR "
    "(the claims' method until 2026-12-06) is `vi.qng`.",
    **_COMMON,
  ),
  Claim(
    name="qblr_vi_beats_bbvi",
    claim=(
      "QBLR's posterior-mean accuracy beats the baselines' (paper: +4.0 "
      "points over BBVI-NS)."
    ),
    paper_value="0.9711 vs 0.9314 (+0.0397)",
    comparator=(
      "strongest of BBVI (STL, Adam) and Gaussian BLR (VON), each tuned on "
      "a 3-point grid by training ELBO (name in vi.qng_nw_best_baseline)"
    ),
    comparator_diverged="vi.qng_nw_baselines_finite_fraction",
    metric="vi.qng_nw_minus_best_baseline",
    check="> 0",
    interval=(
      "vi.qng_nw_minus_best_baseline_lo",
      "vi.qng_nw_minus_best_baseline_hi",
    ),
    samples="vi.qng_nw_paired.*.by_split",
    count_key="vi.num_splits",
    sample_unit="splits",
    fmt="{:+.4f}",
    figures=("vi_elbo.png",),
    note="QBLR on the Normal-Wishart lift (the paper's NG-Ours). Paired "
    "per-split differences, 95% t interval; the band's low end is the "
    "lowest over all baselines, so a yes holds against each of them. The "
    "paper's gap comes with BBVI-NS collapsing (entropy 0); our BBVI (STL) "
    "does not collapse (row qblr_vi_bbvi_collapses), and every method sits "
    "near MAP's accuracy. "
    "Per-baseline numbers in vi.qng_nw_paired; the mean-field QBLR's in "
    "vi.paired (vi.qng_minus_best_baseline). The quotient projection is "
    "inactive here: the reparameterised ELBO of pi(lambda) is constant "
    "along the fibres, so its natural gradient is already horizontal (spec "
    "C.5; the paper's §5 says its own estimator depends on (Psi, kappa) "
    "only through quotient invariants), and QNG is the lifted natural "
    "gradient.",
    **_COMMON,
  ),
  Claim(
    name="qblr_vi_elbo_beats_baselines",
    claim=(
      "QBLR attains higher-quality solutions than the baselines: a higher "
      "training ELBO (a tighter bound, so a posterior closer in KL)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "strongest of BBVI (STL, Adam) and Gaussian BLR (VON) by final "
      "training ELBO (name in vi.qng_nw_elbo_best_baseline)"
    ),
    comparator_diverged="vi.qng_nw_elbo_baselines_finite_fraction",
    metric="vi.qng_nw_elbo_minus_best_baseline",
    check="> 0",
    interval=(
      "vi.qng_nw_elbo_minus_best_baseline_lo",
      "vi.qng_nw_elbo_minus_best_baseline_hi",
    ),
    samples="vi.qng_nw_elbo_paired.*.by_split",
    count_key="vi.num_splits",
    sample_unit="splits",
    fmt="{:+.2f}",
    figures=("vi_elbo.png",),
    note="Nats, the MC ELBO of each split's selected run on 200 common draws, "
    "paired per split. The families differ: QBLR's is a full-covariance "
    "Student-t, the baselines' are mean-field (a Gaussian, a Student-t), "
    "so the row measures the lift's family as much as its optimiser; the "
    "mean-field QBLR's ELBO gap is vi.qng_elbo_minus_best_baseline.",
    **_COMMON,
  ),
  Claim(
    name="qblr_vi_bbvi_collapses",
    claim=(
      "BBVI's posterior collapses: its predictive entropy on the test "
      "points is ~0, where QBLR's stays positive."
    ),
    paper_value="0 (BBVI-NS; NG-Ours 0.175; Table 2)",
    comparator="0, a collapsed posterior (QBLR's own: vi.qng_nw.entropy)",
    metric="vi.bbvi.entropy",
    check="< 0.01",
    interval=("vi.bbvi.entropy_lo", "vi.bbvi.entropy_hi"),
    samples="vi.bbvi.entropy_per_split",
    count_key="vi.num_splits",
    sample_unit="splits",
    fmt="{:.4f}",
    figures=("vi_elbo.png",),
    note="Nats: the binary entropy of the posterior predictive (the mean "
    "of sigmoid(x w) over 100 draws), averaged over the test tumours (the "
    "paper does not say nats or bits); band: 95% t interval over splits. "
    "Ours is BBVI with the STL gradient and Adam at its selected step; "
    "the paper's BBVI-NS runs Euclidean DoG with 10 MC samples "
    "(configs/qblr.py:quick,paper_steps), which did not collapse here "
    "either (WORKSPACE). QBLR minus BBVI, paired per split, is "
    "vi.qng_nw_entropy_paired.bbvi.",
    **_COMMON,
  ),
  Claim(
    name="qblr_vi_fewer_iterations",
    claim=(
      "QBLR reaches the baselines' ELBO in fewer iterations than they need "
      "(paper: roughly one-tenth as many as BBVI-NS)."
    ),
    paper_value="~0.1x (NG-Ours vs BBVI-NS; no iteration table)",
    comparator=(
      "each of BBVI (STL, Adam) and Gaussian BLR (VON): the first step its "
      "ELBO EMA is within 1 nat of its final value"
    ),
    metric="vi.qng_nw_iterations.ratio",
    check="< 1",
    interval=("vi.qng_nw_iterations.ratio_lo", "vi.qng_nw_iterations.ratio_hi"),
    samples="vi.qng_nw_iterations.worst_ratio_per_split",
    # A baseline that diverged at every step has no curve to reach, so it
    # is absent from the ratios: the report must say so (same baselines as
    # the accuracy's fraction; "selected" None = diverged everywhere).
    comparator_diverged="vi.qng_nw_baselines_finite_fraction",
    samples_log=True,
    count_key="vi.num_splits",
    sample_unit="splits",
    fmt="{:.2f}x",
    figures=("vi_elbo.png",),
    note="Per split, QBLR's (Normal-Wishart) first logged step (every 50) "
    "whose ELBO EMA reaches a baseline's final EMA less 1 nat, over the "
    "baseline's own; the larger of the two baselines' ratios, geometric "
    "mean over splits with a t interval of the logs. Per baseline in "
    "vi.qng_nw_iterations.by_baseline (BBVI alone is the paper's "
    "comparison); each method at its selected constant step. The paper's "
    "tuning-free rules (RDoG for QBLR, DoG with 10 MC samples for BBVI-NS; "
    "configs/qblr.py:quick,paper_steps) read the other way here: RDoG's "
    "ramp from eps 1e-3 takes QBLR ~1,100 steps to a baseline's final ELBO, "
    "2.9x [1.6x, 5.0x] (WORKSPACE). The mean-field QBLR's ratios are "
    "vi.qng_iterations.",
    **_COMMON,
  ),
  Claim(
    name="qblr_mle_beta03_iterations",
    claim=(
      "QNG (beta 0.3) reaches the Student-t MLE to a 1e-8 gap within 250 "
      "iterations (spec C.5 observed 193)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator="spec C.5's float64 check (ours)",
    sanity=True,
    metric="mle.iterations.qng_beta0.3",
    check="in [1, 250]",
    fmt="{:d}",
    figures=("mle_convergence.png",),
    note="The paper gives no MLE iteration count; the bound is our spec's.",
    **_COMMON,
  ),
  Claim(
    name="qblr_mle_qng_vs_baselines",
    claim=(
      "On the MLE, the best constant-step QNG needs more iterations than the "
      "best of ECME, GD and Adam (spec C.5: 57 vs ECME 21, best GD 31)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator="best of ECME, GD (3 lrs), Adam (3 lrs) in the same run",
    sanity=True,
    metric="mle.qng_over_best_baseline",
    check=">= 1",
    fmt="{:.2f}x",
    figures=("mle_convergence.png",),
    note="Ratio of iterations to the 1e-8 gap, best QNG beta over the best "
    "baseline (names and counts in mle.best_qng / mle.best_baseline). The "
    "paper claims no MLE speed-up; its speed claim is for VI with RDoG.",
    **_COMMON,
  ),
]
