"""Claims of "Pay Attention to Small Weights" (NanoAdam, NeurIPS 2025)."""

from experiments.claims.report import Claim

_COMMON = dict(paper="nanoadam", experiment="nanoadam_finetune", config="quick")

CLAIMS = [
  Claim(
    name="nanoadam_small_weights_update_better",
    claim=(
      "Updating the smallest-magnitude weights fine-tunes better than updating "
      "the largest ones at equal density."
    ),
    paper_value="(none); qualitative",
    comparator="largest-magnitude mask, same density, same LR sweep",
    metric="nano_minus_largest_best_new_acc",
    check=">= 0",
    fmt="{:+.4f}",
    figures=("finetune.png",),
    note="Best new-task (digits 5-9) accuracy over the LR sweep, density 5%.",
    **_COMMON,
  ),
  Claim(
    name="nanoadam_less_forgetting",
    claim="NanoAdam forgets the old task less than Adam at the same learning rate.",
    paper_value="(none); qualitative",
    comparator="dense Adam at each learning rate of the grid",
    metric="adam_minus_nano_forgetting_mean_over_lrs",
    check="> 0",
    fmt="{:+.4f}",
    note="Drop of task-incremental accuracy on digits 0-4, averaged over the "
    "LR grid.",
    **_COMMON,
  ),
  Claim(
    name="nanoadam_larger_learning_rates",
    claim="NanoAdam tolerates (and prefers) larger learning rates than Adam.",
    paper_value="(none); qualitative",
    comparator="dense Adam's best learning rate on the same grid",
    metric="nano_best_lr_over_adam_best_lr",
    check=">= 3",
    fmt="{:.3g}x",
    **_COMMON,
  ),
]
