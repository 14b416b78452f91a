"""Claims of "The Quotient Bayesian Learning Rule" (NeurIPS 2025)."""

from experiments.claims.report import Claim

_COMMON = dict(paper="qblr", experiment="qblr", config="quick")

CLAIMS = [
  Claim(
    name="qblr_vi_accuracy",
    claim=(
      "QBLR (Student-t VI via the Normal-Gamma lift) reaches high posterior-mean "
      "test accuracy for Bayesian logistic regression on breast cancer."
    ),
    paper_value="0.9711 (NG-Ours, Normal-Wishart lift)",
    comparator="threshold 0.96 (paper's NG-Ours 0.9711)",
    metric="vi.qng.acc_mean",
    check=">= 0.96",
    fmt="{:.4f}",
    figures=("vi_elbo.png",),
    note="Ours: mean-field Normal-Gamma lift, constant beta, 2000 full-batch "
    "steps, 5 splits.",
    **_COMMON,
  ),
  Claim(
    name="qblr_vi_beats_bbvi",
    claim="QBLR's posterior-mean accuracy is at least BBVI's (paper: +4.0 points).",
    paper_value="0.9711 vs 0.9314 (+0.0397)",
    comparator="BBVI (STL, Adam 1e-2)",
    metric="vi.qng_minus_bbvi",
    check=">= 0",
    fmt="{:+.4f}",
    note="The paper's gap comes with BBVI-NS collapsing (entropy 0); our BBVI "
    '(STL, Adam 1e-2) does not collapse, so we check "at least" with no tolerance.',
    **_COMMON,
  ),
  Claim(
    name="qblr_mle_beta03_iterations",
    claim="QNG (beta 0.3) reaches the Student-t MLE to a 1e-8 gap (spec C.5: 193 iterations).",
    paper_value="193 (spec C.5's float64 check, ours)",
    sanity=True,
    metric="mle.iterations.qng_beta0.3",
    check="in [1, 250]",
    fmt="{:d}",
    figures=("mle_convergence.png",),
    note="Not a paper number: the spec's own float64 check; ECME and tuned "
    "log-coordinate GD need fewer iterations.",
    **_COMMON,
  ),
]
