"""Claims of "Can DPO Learn Diverse Human Values?" (Im & Li, NeurIPS 2025).

Ours: last-layer DPO (W trained from W_ref, frozen embeddings) on synthetic
value clusters, K in {1, ..., 32}, Q pairs per value, T = 200 full-batch
steps, 5 seeds; Q*(K) is the smallest Q whose test reward accuracy reaches
0.75 (interpolated on log Q; values never reaching it are left out of the
fits). Bands are 95 % t intervals over seeds.
"""

import functools

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import banded

_COMMON = dict(
  paper="dpo_diversity",
  experiment="dpo_diversity",
  config="quick",
)


_claim = functools.partial(banded, **_COMMON)


CLAIMS = [
  _claim(
    "dpo_accuracy_falls_with_more_values",
    "gd.first_minus_last_k",
    "At a fixed number of pairs per value and steps, test reward accuracy "
    "does not increase with the number of values K.",
    NO_PAPER_VALUE,
    "the same Q (16) and T with K = 32 values, paired per seed",
    "> 0",
    "Ours: GD, accuracy at K = 1 minus K = 32; `gd.max_rise_in_k` in "
    "results.json is the largest rise of the seed mean from one K to the "
    "next (<= 0 means non-increasing over the whole sweep).",
    "accuracy_vs_q.png",
  ),
  _claim(
    "dpo_qstar_grows_with_log_k",
    "gd.fit_b",
    "The samples per value needed for a fixed accuracy grow with K: "
    "Q* = a + b log K with b > 0.",
    "Q = Theta(log K)",
    "a constant Q* (b = 0)",
    "> 0",
    "Ours: GD; b fitted per seed on the K whose Q* lies inside the sweep.",
    "qstar_vs_logk.png",
  ),
  _claim(
    "dpo_qstar_log_k_beats_linear_k",
    "gd.sse_lin_minus_log",
    "Q*(K) follows log K better than linear-in-K growth.",
    "Q = Theta(log K)",
    "the least-squares fit a' + b' K on the same points",
    "> 0",
    "Ours: GD; residual sum of squares of the linear fit minus that of the "
    "log fit, per seed.",
    "qstar_vs_logk.png",
  ),
  _claim(
    "dpo_adam_qstar_log_k_beats_linear_k",
    "adam.sse_lin_minus_log",
    "The same with Adam (the paper's last-layer experiments use Adam).",
    "Q = Theta(log K)",
    "the least-squares fit a' + b' K on the same points",
    "> 0",
    "Ours: full-batch Adam, lr 1e-2.",
    "qstar_vs_logk.png",
  ),
]
