"""Claims of "Who Reasons in the Large Language Models?" (Shao & Wu, NeurIPS 2025).

The paper's models are Qwen2.5 / DeepSeek-R1-Distill (1.5B-32B) on AIME;
ours is the spec's tiny-model protocol (extended_papers.md section 8): a
2-layer Llama A trained on a grammar with direct-answer addition, B = A
fine-tuned on 3-digit addition with a scratchpad; 3 seeds (independent A/B
pairs), 95 % t intervals over seeds. Reasoning accuracy = level IV (right
answer, every scratchpad step right) on 1,000 held-out problems. Whether
o_proj carries the reasoning in so small a model is an empirical question:
these rows answer it, they are not tuned to pass.
"""

import functools

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import Claim
from experiments.claims.report import banded

_COMMON = dict(paper="sfn", experiment="sfn", config="quick", count_key="seeds")


_claim = functools.partial(banded, **_COMMON)


def _vs_each(key: str, figure: str, **kw) -> Claim:
  """A claim on `stats.against_each`'s comparison with each other module's
  run (`key` in results.json): every paired interval must clear the check."""
  return Claim(
    metric=f"{key}.point",
    interval=(f"{key}.lo", f"{key}.hi"),
    samples=f"{key}.baselines.*.by_seed",
    comparator_diverged=f"{key}.comparator_finite_fraction",
    fmt="{:+.3g}",
    figures=(figure,),
    **kw,
    **_COMMON,
  )


CLAIMS = [
  _claim(
    name="sfn_o_proj_largest_delta",
    metric="delta.o_minus_second_other_relative",
    claim=(
      "Fine-tuning for reasoning changes o_proj the most (largest or second "
      "largest l2 change among the modules)."
    ),
    paper_value="o_proj largest or 2nd largest",
    comparator=(
      "q, k, v, gate, up, down: the second largest relative change among "
      "them (> 0: o ranks first or second)"
    ),
    check="> 0",
    note=(
      "Ours: relative Frobenius change |W_B - W_A| / |W_A| over all layers "
      "(modules differ in size, so the raw norm would favour the MLP); "
      "`delta.o_rank_relative` in results.json is o's rank per seed, "
      "`delta.o_minus_max_other_relative` o against the largest alone "
      "(the check of reports up to 2026-12-05)."
    ),
    figure="delta_norms.png",
  ),
  _claim(
    name="sfn_o_proj_bimodal",
    metric="delta.o_bimodality_minus_uniform",
    claim="o_proj's histogram of relative changes (W_B - W_A) / W_A is bimodal.",
    paper_value="bimodal (figure)",
    comparator="a uniform histogram's bimodality coefficient, 5/9",
    check="> 0",
    note=(
      "Ours: Sarle's bimodality coefficient of the relative changes minus "
      "5/9, 1 % of each tail dropped first (`config.delta_trim`; where W_A "
      "is near 0 the changes have heavy tails, and the raw coefficient of "
      "pure noise ranges over 0-0.4); `delta.bimodality` lists every "
      "module's."
    ),
    figure="relative_change_hist.png",
  ),
  _claim(
    name="sfn_merge_o_transfers_reasoning",
    metric="merge_o_minus_a",
    claim=(
      "Merging only o_proj from the reasoning model into the base model gives "
      "correct reasoning (level IV) the base model lacks."
    ),
    paper_value="level-IV answers on some AIME-2024 questions",
    comparator="A, the base model",
    check="> 0",
    note=(
      "Ours: level-IV accuracy of A + o_proj(B), all layers, norms kept from "
      "A, minus A's. A is trained to answer directly: its first answer token "
      "is never the scratchpad's, so a merge that does not carry B's answer "
      "format scores 0 whatever it carries of the reasoning. Where every "
      "single-module merge scores 0 (the quick run), this row is that floor, "
      "not a ranking; the graded rows (loss on B's traces) rank the merges."
    ),
    figure="merge_freeze.png",
  ),
  _claim(
    name="sfn_merge_o_moves_towards_reasoning",
    metric="merge_o_nll_gain_over_a",
    claim=(
      "Merging only o_proj from the reasoning model moves the base model "
      "towards its reasoning (graded: a lower teacher-forced loss on the "
      "reasoning traces than A's)."
    ),
    paper_value="level-IV answers on some AIME-2024 questions",
    comparator="A, the base model, on the same traces",
    check="> 0",
    note=(
      "Ours: A's minus A + o_proj(B)'s mean next-token loss (nats) on the "
      "answer tokens of the held-out problems' scratchpad traces, teacher "
      "forced: graded where level-IV accuracy sits at 0."
    ),
    figure="merge_freeze.png",
  ),
  _vs_each(
    "merge_o_vs_other_merges",
    name="sfn_merge_o_best_single",
    claim=(
      "o_proj is the module whose merge carries reasoning; merging other "
      "modules does not (it often breaks the model)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "each single-module merge of q, k, v, gate, up, down, paired by seed "
      "(the point against the strongest, the low end the lowest)"
    ),
    check="> 0",
    note=(
      "Ours: merge-o accuracy minus each other single merge's; at the "
      "level-IV floor (every single merge 0) this row reads 0."
    ),
    figure="merge_freeze.png",
  ),
  _vs_each(
    "merge_o_nll_vs_other_merges",
    name="sfn_merge_o_best_single_graded",
    claim=(
      "o_proj is the module whose merge carries reasoning (graded: merging "
      "it lowers the loss on the reasoning traces more than merging any "
      "other single module)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "each single-module merge of q, k, v, gate, up, down, on the same "
      "traces, paired by seed"
    ),
    check="> 0",
    note=(
      "Ours: each other single merge's loss minus merge-o's (teacher "
      "forced, nats per answer token)."
    ),
    figure="merge_freeze.png",
  ),
  _vs_each(
    "freeze_o_vs_other_freezes",
    name="sfn_freeze_o_beats_other_modules",
    claim=(
      "Fine-tuning only o_proj recovers more of the reasoning gain than "
      "fine-tuning only the other modules."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "training {q, k, v}, the MLP, or neither (each run also trains the "
      "embedding, head and norms), same steps and data; each paired by seed"
    ),
    check="> 0",
    note=(
      "Ours: equal step budgets and data; o has d^2 trainable weights per "
      "layer against 3 d^2 for q, k, v and 3 d h for the MLP; every run also "
      "trains the embedding, LM head and norms (the paper's 'plus what is "
      "needed for fluency'). "
      "`freeze_o_recovered_fraction` is o's share of B's gain: near 0 "
      "at quick scale, where every freeze run's accuracy stays near the "
      "floor (see the graded row)."
    ),
    figure="merge_freeze.png",
  ),
  _vs_each(
    "freeze_o_nll_vs_other_freezes",
    name="sfn_freeze_o_beats_other_modules_graded",
    claim=(
      "Fine-tuning only o_proj brings the model closer to the reasoning "
      "model's traces than fine-tuning only the other modules (graded: "
      "teacher-forced loss)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "training {q, k, v}, the MLP, or neither (each also trains the "
      "embedding, head and norms), on the same traces; each paired by seed"
    ),
    check="> 0",
    note=(
      "Ours: each other freeze run's loss minus the o run's (nats per "
      "answer token on the held-out traces)."
    ),
    figure="merge_freeze.png",
  ),
]
