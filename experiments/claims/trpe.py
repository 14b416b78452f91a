"""Claims of "Towards Principled Unsupervised Multi-Agent RL" (TRPE, NeurIPS 2025).

Ours: the spec's 12 x 12 two-room grid, 2 agents, H = 60, tabular softmax
policies, 200 TRPE epochs of 16 trajectories per objective (the official
code's trust-region loop, `trust_region="official"`), 24 seeds; the
downstream task is the spec's sparse team reward (both agents in the far
room at the same step), 40 REINFORCE epochs from each pretrained policy and
from the uniform one. 95 % t intervals over seeds, paired by seed.
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
      "Ours: mean team success over the REINFORCE epochs (the area under "
      "the learning curve); `mixture_vs_others_zero_shot` is the "
      "zero-shot counterpart. Read it with the sanity row 'fine-tuning "
      "learns': TRPE leaves the tabular policies nearly deterministic, and "
      "REINFORCE with a binary team reward and a mean baseline gets no "
      "gradient from a batch that all fails or all succeeds, so where no "
      "source's success moves, this row measures zero-shot success. The "
      "task also differs from the official Rooms (a door opened by an agent "
      "on a switch, a per-agent goal reward): ours needs both agents in the "
      "far room at once, and mixture pretraining tends to send one agent "
      "there (`sources.*.zero_shot_success` in results.json)."
    ),
    figures=("finetune.png",),
  ),
  Claim(
    name="trpe_finetune_learns",
    claim=(
      "Fine-tuning learns: some source's team success rises by at least "
      "0.05 from the first to the last eighth of the REINFORCE epochs."
    ),
    paper_value="(none); the learning curves of the paper rise",
    metric="finetune_largest_gain",
    check=">= 0.05",
    fmt="{:+.3f}",
    note=(
      "The largest over the sources (uniform, joint, disjoint, mixture) of "
      "the seed-mean gain; `sources.*.finetune_gain` holds each."
    ),
    figures=("finetune.png",),
    sanity=True,
    **_COMMON,
  ),
]
