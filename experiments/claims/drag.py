"""Claims of DRAG, "Imagine Beyond!" (Castanet, Sigaud, Lamprier, NeurIPS 2025).

Ours: a point in a U-maze observed as 16 x 16 rendered images, 8 walkers
reaching goals imagined from the beta-VAE prior by a scripted greedy
controller (the representation is isolated from RL), 400 iterations, 12
seeds; RIG (uniform weights), Skew-Fit (alpha = -1) and DRAG (neural
KL-DRO weighter) at tau in {0.5, 1, 2}. The DRAG objective is the standard
KL-DRO form (inferred; no code). 95 % t intervals over seeds.
"""

from experiments.claims.report import banded

_COMMON = dict(
  paper="drag",
  experiment="drag",
  config="quick",
  figures=("coverage.png",),
  fmt="{:+.3f}",
  count_key="seeds",
)

CLAIMS = [
  banded(
    name=f"drag_tau{tau}_coverage_at_least_baselines",
    metric=f"drag_tau{tau}_minus_best_baseline_coverage",
    claim=(
      "Distributionally robust VAE training covers at least as much of "
      f"the maze as RIG and Skew-Fit after the same budget (DRAG, tau = {tau})."
    ),
    paper_value="DRAG > RIG, Skew-Fit in coverage (pixel mazes)",
    comparator=(
      "the better of RIG (uniform weights) and Skew-Fit (alpha = -1) per seed, "
      "same walkers and budget"
    ),
    check=">= 0",
    note=(
      "Ours: visited coverage = fraction of free cells ever visited; "
      "`drag_tau*_minus_rig_coverage` (the issue's pairwise comparison) and the "
      "imagined coverage of every method are in results.json."
    ),
    **_COMMON,
  )
  for tau in ("0.5", "1", "2")
]
