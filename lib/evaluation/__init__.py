"""Disaggregated evaluation under a causal lens: simulators, weighted metrics, T_a.

Modules:
- `simulators`: the causal and anticausal data-generating processes, their
  named settings and the three selection mechanisms (pure functions of a key).
- `metrics`: weighted group metrics (log-loss, ROC-AUC, label rate, recall,
  specificity, precision, net benefit), logistic-regression P(A | V),
  importance and stable weights, T_a(V), the vmapped percentile bootstrap.
- `data`: a user's own CSV of scores, labels and groups.

Reference: Pfohl, Nagpal, Madras, Mhasawade, Salaudeen, ..., Koyejo,
"Understanding challenges to the interpretation of disaggregated evaluations
of algorithmic fairness", NeurIPS 2025 (arXiv 2506.04193); official code
google-research/causal_evaluation.
"""

from lib.evaluation.data import load_csv
from lib.evaluation.metrics import METRICS
from lib.evaluation.metrics import bootstrap
from lib.evaluation.metrics import calibration_in_the_large
from lib.evaluation.metrics import check_inputs
from lib.evaluation.metrics import fit_logistic
from lib.evaluation.metrics import group_metrics
from lib.evaluation.metrics import group_probability
from lib.evaluation.metrics import importance_weights
from lib.evaluation.metrics import polynomial_features
from lib.evaluation.metrics import predict_logistic
from lib.evaluation.metrics import stable_weights
from lib.evaluation.metrics import t_statistic
from lib.evaluation.metrics import tie_bounds
from lib.evaluation.metrics import weighted_auc
from lib.evaluation.simulators import SETTINGS
from lib.evaluation.simulators import Setting
from lib.evaluation.simulators import selection_probability
from lib.evaluation.simulators import setting
from lib.evaluation.simulators import simulate
from lib.evaluation.simulators import true_group_probability
