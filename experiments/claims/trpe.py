"""Claims of "Towards Principled Unsupervised Multi-Agent RL" (TRPE, NeurIPS 2025).

Ours: the official Rooms (10 x 10, a door that opens only while an agent
stands by a switch; each agent's tabular softmax policy reads its cell and
the door), 2 agents, 200 TRPE epochs of 10 trajectories of 50 steps per
objective (the official trust-region loop and room.sh's delta), 128 seeds;
the downstream task is the official goal region (100 per agent and step on
it), 100 MATRPO epochs of 20 trajectories of 20 steps (scripts/goal_rl/
room.sh) from each pretrained policy and from the uniform one, policies and
critics tabular. The score of an episode is its return over the largest
possible (100 x 2 agents x 20 steps). 95 % t intervals over seeds, paired by
seed. `configs/trpe.py:quick,team_far_room` is the setup of the runs until
2026-12-06 (the spec's open-door grid, a team reward, REINFORCE).
"""

from experiments.claims.report import Claim

_COMMON = dict(paper="trpe", experiment="trpe", config="quick")
_OTHERS = (
  "joint, disjoint and the uniform policy, each paired by seed: the point "
  "against the strongest, the low end the lowest"
)


def _vs_others(key: str, **kw) -> Claim:
  """A claim on `stats.against_each`'s comparison of mixture with each
  other source (`key`: mixture_vs_others_<what> in results.json)."""
  return Claim(
    metric=f"{key}.point",
    interval=(f"{key}.lo", f"{key}.hi"),
    samples=f"{key}.baselines.*.by_seed",
    comparator_diverged=f"{key}.comparator_finite_fraction",
    count_key="seeds",
    fmt="{:+.3f}",
    **kw,
    **_COMMON,
  )


CLAIMS = [
  _vs_others(
    "mixture_vs_others_coverage",
    name="trpe_mixture_coverage_at_least_others",
    claim=(
      "Mixture-entropy pretraining covers the state space at least as well "
      "as disjoint (per-agent) or joint entropy."
    ),
    paper_value="mixture >= disjoint, joint (room30, secret_room, push_box)",
    comparator=_OTHERS,
    check=">= 0",
    note=(
      "Ours: coverage = fraction of free cells either agent visits in one "
      "episode (finite trial), mean of 64 fresh episodes per seed; "
      "`mixture_minus_disjoint_coverage` is the issue's pairwise comparison."
    ),
    figures=("visitation.png",),
  ),
  _vs_others(
    "mixture_vs_others_finetune",
    name="trpe_mixture_finetunes_at_least_as_fast",
    claim=(
      "Mixture-pretrained policies learn the sparse downstream task at "
      "least as fast as joint- or disjoint-pretrained ones."
    ),
    paper_value="mixture learns faster (room30, secret_room)",
    comparator=_OTHERS,
    check=">= 0",
    note=(
      "Ours: the mean score over the MATRPO epochs (the area under the "
      "learning curve). Read it with the sanity row 'fine-tuning learns': "
      "a batch without reward gives every advantage the same value, so no "
      "step (the uniform policy never reaches the goal in 20 steps), and "
      "MATRPO's KL of 0.001 per epoch moves a tabular policy slowly, so "
      "this row mostly measures how often a source's policy reaches the "
      "goal at all: a mixture-pretrained pair reaches it on a few seeds, "
      "the others on almost none. The paper's policies are networks "
      "pretrained for 10,000 epochs; ours are tables after 200."
    ),
    figures=("finetune.png",),
  ),
  _vs_others(
    "mixture_vs_others_zero_shot",
    name="trpe_mixture_zero_shot_at_least_others",
    claim=(
      "Mixture-pretrained policies transfer zero-shot to the sparse "
      "downstream task at least as well as joint- or disjoint-pretrained "
      "ones."
    ),
    paper_value="mixture: strong zero-shot transfer (TL;DR, room30)",
    comparator=_OTHERS,
    check=">= 0",
    note=(
      "Ours: the score of 64 fresh 20-step episodes of each pretrained "
      "policy before any fine-tuning."
    ),
    figures=("visitation.png",),
  ),
  Claim(
    name="trpe_finetune_learns",
    claim=(
      "Fine-tuning learns: some source's score rises by at least 0.05 "
      "from the first to the last eighth of the MATRPO epochs."
    ),
    paper_value="(none); the learning curves of the paper rise",
    metric="finetune_largest_gain",
    check=">= 0.05",
    fmt="{:+.3f}",
    note=(
      "The largest over the sources (uniform, joint, disjoint, mixture) of "
      "the seed-mean gain, in the score's unit (the return over the largest "
      "possible); `sources.*.finetune_gain` holds each."
    ),
    figures=("finetune.png",),
    sanity=True,
    **_COMMON,
  ),
]
