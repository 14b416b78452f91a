"""Claims of "Understanding challenges to the interpretation of disaggregated
evaluations of algorithmic fairness" (Pfohl et al., NeurIPS 2025).

Ours: the paper's simulated settings (quick: 20k train / 20k evaluation rows,
200 percentile-bootstrap resamples). Group 1 is A = 1. The paper's claims are
qualitative; "explained" means T_1(V) is practically zero: its whole 95 %
interval lies within +-0.02 (config.margin, fixed before the runs), an
equivalence check that a wide interval cannot pass.
"""

import functools

from experiments.claims.report import banded

_COMMON = dict(
  paper="disaggregated_eval",
  experiment="disaggregated_eval",
  config="quick",
  figures=("forest.png",),
  no_samples="percentile bootstrap over the evaluation rows of one "
  "simulated population (more rows, not seeds)",
)
_EQUIV = "in [-0.02, 0.02]"


_claim = functools.partial(banded, fmt="{:+.4f}", **_COMMON)


CLAIMS = [
  _claim(
    name="disagg_covariate_shift_unequal",
    metric="covariate_shift.xa.disparity.log_loss",
    claim="Under covariate shift a Bayes-optimal model is unequal across groups.",
    paper_value="unequal subgroup metrics (Sec. 4)",
    comparator="group 0's log-loss, same Bayes-optimal model",
    check="> 0",
    note="Ours: log-loss of P(Y | X, A) from the DGP, group 1 minus group 0.",
  ),
  _claim(
    name="disagg_covariate_shift_explained_by_x",
    metric="covariate_shift.xa.T1(X).log_loss",
    claim="... and the difference is explained by the shift in X: T_a(X) ~ 0.",
    paper_value="T_a(X) ~ 0",
    comparator="the population weighted by P(A=1 | X) (logistic regression)",
    check=_EQUIV,
    note="Ours: T_1(X) of the log-loss.",
  ),
  _claim(
    name="disagg_outcome_shift_not_explained_by_x",
    metric="outcome_shift.xa.T1(X).log_loss",
    claim=(
      "Under outcome shift (P(Y | X) differs by group) weighting on X does not "
      "explain the difference."
    ),
    paper_value="T_a(X) != 0",
    comparator="the population weighted by P(A=1 | X)",
    check="< 0",
    note=(
      "Ours: group 1's steeper P(Y | X) (slope -1 vs 0.5) gives it the lower "
      "log-loss, so T_1(X) < 0. In this setting A is independent of X "
      "(P(A = 1 | X) = 0.5), so T_1(X) is the unweighted disparity and the "
      "row cannot test the weighting; the next row can."
    ),
  ),
  _claim(
    name="disagg_outcome_shift_not_explained_by_x_under_x_shift",
    metric="complex_causal_shift.xa.T1(X).log_loss",
    claim=(
      "... and where X shifts by group too, weighting on X removes the "
      "X-shift part and leaves the outcome shift's."
    ),
    paper_value="T_a(X) != 0",
    comparator="the population weighted by P(A=1 | X)",
    check="< 0",
    note=(
      "Ours: the complex causal setting (X and P(Y | X) both shift by "
      "group), where the weights P(A = 1 | X) differ from a constant."
    ),
  ),
  _claim(
    name="disagg_anticausal_label_shift_unequal_precision",
    metric="anticausal_label_shift.x.disparity.precision",
    claim=(
      "Under anticausal label shift the group-agnostic model's precision "
      "differs by group."
    ),
    paper_value="unequal label-rate-dependent metrics",
    comparator="group 0's precision, same f(X)",
    check="< 0",
    note="Ours: f(X) by logistic regression; group 1's label rate is 0.1 vs 0.5.",
  ),
  _claim(
    name="disagg_anticausal_label_shift_explained_by_y_precision",
    metric="anticausal_label_shift.x.T1(Y).precision",
    claim="... and weighting on Y explains it: T_a(Y) ~ 0 (precision).",
    paper_value="T_a(Y) ~ 0",
    comparator="the population weighted by P(A=1 | Y)",
    check=_EQUIV,
    note="Ours: T_1(Y) of the precision at 0.5. The interval resamples "
    "the evaluation rows only: f(X) and P(A | Y) are fitted once on the "
    "training rows (as the official bootstrap does). Redrawing the training "
    "data moves this value with a standard deviation of about 0.01 "
    "(measured once by an audit script, 6 draws), which would take the "
    "band past +-0.02: the yes is narrower than it reads.",
  ),
  _claim(
    name="disagg_anticausal_label_shift_explained_by_y_log_loss",
    metric="anticausal_label_shift.x.T1(Y).log_loss",
    claim="... the same for the log-loss.",
    paper_value="T_a(Y) ~ 0",
    comparator="the population weighted by P(A=1 | Y)",
    check=_EQUIV,
    note="Ours: T_1(Y) of the log-loss.",
  ),
  _claim(
    name="disagg_selection_on_y_miscalibrates",
    metric="selection_on_y.xa.calibration.group1",
    claim=(
      "Selection on Y miscalibrates a model fitted on the selected data, "
      "within groups of the population."
    ),
    paper_value="miscalibrated under selection on Y (selection_calibration)",
    comparator="calibration-in-the-large = 0",
    check="> 0",
    note=(
      "Ours: f(X, A) fitted on selected training rows (official notebook), its "
      "mean score minus the label rate in group 1 of the population; "
      "P(S | y) = (0.4, 0.8) over-selects positives, so it over-predicts."
    ),
  ),
  _claim(
    name="disagg_selection_on_y_ipw_restores",
    metric="selection_on_y.xa.calibration_ipw.group1",
    claim="Inverse-probability weights 1/P(S | y) restore calibration.",
    paper_value="calibrated after 1/P(S | y) weighting",
    comparator="calibration-in-the-large = 0",
    check=_EQUIV,
    note=(
      "Ours: f(X, A) fitted on the same selected rows weighted by 1/P(S | y), "
      "on the population (the notebook has no weighted model)."
    ),
  ),
  _claim(
    name="disagg_covariate_shift_group_aware_no_better",
    metric="covariate_shift.relative.group1.log_loss",
    claim=(
      "Where Y _|_ A | X (covariate shift), the group-aware model f(X, A) is no "
      "better than f(X): the relative comparison is ~0."
    ),
    paper_value="equal performance probes Y _|_ A | X",
    comparator="f(X) by logistic regression, paired per row",
    check=_EQUIV,
    note=(
      "Ours: log-loss of f(X, A) minus f(X) in group 1 (outcome_shift gives "
      "a clear negative value, in results.json)."
    ),
  ),
]
