"""Claims of "How to Train Your Compact Memory" (Jung et al., NeurIPS 2025).

Our CPU stand-in for Split-ImageNet is class-incremental Split-digits (5 tasks
x 2 classes, 65-d pixel features, memory per task 2 / 5 / 10 / 20 = 0.8 / 2 /
4 / 8 % of the data it summarises). Every comparison is paired per seed (same
start, same memory points for replay, random K-prior and the EM start of the
compact memory), with a 95 % t interval over 3 seeds (four moons: 4); a row
holds only when the whole interval passes. Baselines: replay, the official
K-prior with random points (L2 towards 0), the same anchored at the previous
task's weights (ours), the anchored one with each point weighted N_t / K
(ours), and batch training as the upper bound. Four moons
follows the official notebook (only the memory's beta clamped; its EM's scale
max(norm, 1) and early stop; its joint model's 20,001 Adam steps at 0.05),
Split-digits the Split-CIFAR script.
"""

from experiments.claims.report import NO_PAPER_VALUE
from experiments.claims.report import banded

_COMMON = dict(
  paper="compact_memory",
  experiment="compact_memory",
  config="quick",
)


def _paired(*, figures=("accuracy_vs_memory.png",), **kwargs):
  # Four moons runs its own seeds (`moons.seeds`), Split-digits `seeds`.
  moons = kwargs["metric"].startswith("moons.")
  return banded(
    fmt="{:+.3f}",
    figures=figures,
    count_key="moons.seeds" if moons else "seeds",
    **kwargs,
    **_COMMON,
  )


_REPLAY = (
  "experience replay with the same number of stored points per task "
  "(class-balanced random), paired per seed"
)

CLAIMS = [
  _paired(
    name="compact_memory_beats_replay_smallest",
    metric="digits.smallest.compact_minus_replay",
    claim=(
      "At the smallest memory, compact memory is far more accurate than "
      "experience replay."
    ),
    paper_value="60 % vs 30 % at memory 0.3 % of the data (Split-ImageNet, CLIP)",
    comparator=_REPLAY,
    check="> 0",
    note=(
      "Ours: Split-digits accuracy over all classes after the last task, "
      "compact minus replay at 2 points per task (0.8 % of the data)."
    ),
  ),
  _paired(
    name="compact_memory_beats_replay_m5",
    metric="digits.compact_minus_replay.m5",
    claim="Compact memory beats replay at moderate memory too.",
    paper_value="74 % at 2 % memory (replay lower; Split-ImageNet)",
    comparator=_REPLAY,
    check="> 0",
    note="Ours: 5 points per task (2.0 % of the data).",
  ),
  _paired(
    name="compact_memory_beats_replay_m10",
    metric="digits.compact_minus_replay.m10",
    claim=(
      "Compact memory beats replay at every memory size up to 10 per task "
      "(the issue's acceptance)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=_REPLAY,
    check="> 0",
    note="Ours: 10 points per task (4.0 % of the data).",
  ),
  _paired(
    name="compact_memory_beats_random_kprior",
    metric="digits.smallest.compact_minus_random",
    claim=(
      "Fitting the memory by Hessian matching (PPCA-EM) beats a K-prior on "
      "the same number of random points (unit weights)."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with random memory points as the official baseline (L2 term "
      "towards 0), the same points the EM starts from, paired per seed"
    ),
    check="> 0",
    note="Ours: 2 points per task.",
  ),
  _paired(
    name="compact_memory_beats_random_kprior_anchored",
    metric="digits.smallest.compact_minus_random_anchored",
    claim=(
      "Hessian matching also beats random points when the random K-prior's "
      "L2 term is anchored at the previous task's weights, as the compact "
      "memory's is."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with random memory points, L2 towards the previous task's "
      "weights (ours, a second baseline), the same points, paired per seed"
    ),
    check="> 0",
    note="Ours: 2 points per task.",
  ),
  _paired(
    name="compact_memory_beats_weighted_random_kprior",
    metric="digits.smallest.compact_minus_random_weighted",
    claim=(
      "Hessian matching beats random points that carry the task's data mass "
      "too: the anchored random K-prior with each point weighted N_t / K."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with random memory points weighted N_t / K each, L2 towards "
      "the previous task's weights (ours, a third baseline), the same "
      "points, paired per seed"
    ),
    check="> 0",
    note=(
      "Ours: 2 points per task. The official random K-prior keeps unit "
      "weights while the compact memory's weights scale with the task's "
      "Hessian; this row separates what the EM's directions add from what "
      "weighting adds."
    ),
  ),
  _paired(
    name="compact_memory_batch_upper_bound",
    metric="digits.smallest.batch_minus_compact",
    claim=(
      "Batch (joint) training on all data bounds the continual methods from "
      "above."
    ),
    paper_value="batch 77.6 % vs compact 60 % (0.3 %) / 74 % (2 %)",
    comparator="compact memory at 2 points per task (batch is the reference)",
    check=">= 0",
    note=(
      "Ours: batch minus compact; batch trains for as many Adam steps as the "
      "whole task sequence."
    ),
  ),
  _paired(
    name="compact_memory_moons_beats_random_kprior",
    metric="moons.smallest.compact_minus_random",
    claim=(
      "On the four-moons demo, one compact memory vector per task beats a "
      "K-prior on one random point per task."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with random memory points as the official baseline (L2 term "
      "towards 0), 1 point per task, paired per seed"
    ),
    check="> 0",
    note=(
      "The notebook's setup: its binary sigmoid model, only the memory's "
      "beta clamped, its EM's scale max(norm, 1) and early stop."
    ),
    figures=("moons_boundaries.png", "accuracy_vs_memory.png"),
  ),
  _paired(
    name="compact_memory_moons_beats_random_kprior_anchored",
    metric="moons.smallest.compact_minus_random_anchored",
    claim=(
      "On the four-moons demo, one compact memory vector per task beats a "
      "K-prior on one random point per task with its L2 term anchored at the "
      "previous task's weights."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with random memory points, L2 towards the previous task's "
      "weights (ours, a second baseline), 1 point per task, paired per seed"
    ),
    check="> 0",
    note=(
      "The notebook's setup: its binary sigmoid model, only the memory's "
      "beta clamped, its EM's scale max(norm, 1) and early stop."
    ),
    figures=("moons_boundaries.png", "accuracy_vs_memory.png"),
  ),
  _paired(
    name="compact_memory_moons_beats_weighted_random_kprior",
    metric="moons.smallest.compact_minus_random_weighted",
    claim=(
      "On the four-moons demo, one compact memory vector per task beats one "
      "random point per task weighted N_t (the task's data mass), L2 "
      "anchored at the previous task's weights."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator=(
      "K-prior with one random point per task weighted N_t, L2 towards the "
      "previous task's weights (ours, a third baseline), paired per seed"
    ),
    check="> 0",
    note=(
      "The notebook's setup: its binary sigmoid model, only the memory's "
      "beta clamped, its EM's scale max(norm, 1) and early stop."
    ),
    figures=("moons_boundaries.png", "accuracy_vs_memory.png"),
  ),
  _paired(
    name="compact_memory_moons_beats_replay",
    metric="moons.smallest.compact_minus_replay",
    claim=(
      "On the four-moons demo, one compact memory vector per task retains the "
      "old boundaries better than one replayed point per task."
    ),
    paper_value=NO_PAPER_VALUE,
    comparator="experience replay, 1 point per task, paired per seed",
    check="> 0",
    note=(
      "Ours: 10k full-batch Adam steps per task (the notebook's 10k-20k); "
      "with 2k steps per task the sequential models are under-trained and the "
      "gap is inside seed noise. See moons_boundaries.png."
    ),
    figures=("moons_boundaries.png", "accuracy_vs_memory.png"),
  ),
]
