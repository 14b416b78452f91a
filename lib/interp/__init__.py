"""Module-level interpretability tools: the stethoscopes of SfN.

Modules:
- `stethoscopes`: Delta (per-module, per-layer l2 change, relative-change
  histograms, bimodality coefficient), Merge (copy chosen modules of B into
  A), Freeze (an optax `multi_transform` training only chosen modules) and
  Destruction (zero or perturb a module), over any flax parameter tree, with
  modules chosen by name pattern (`select`).
- `tasks`: the tiny-model protocol's synthetic data: a grammar ("conversation")
  and multi-digit addition with and without a scratchpad ("reasoning"), and
  the deterministic level I-IV grader.

Reference: Shao & Wu, "Who Reasons in the Large Language Models?", NeurIPS
2025 (arXiv 2505.20993). No official code was released.
"""

from lib.interp import tasks
from lib.interp.stethoscopes import DEFAULT_PATTERNS
from lib.interp.stethoscopes import GROUPS
from lib.interp.stethoscopes import bimodality_coefficient
from lib.interp.stethoscopes import check_same_structure
from lib.interp.stethoscopes import delta_norms
from lib.interp.stethoscopes import destroy
from lib.interp.stethoscopes import expand
from lib.interp.stethoscopes import freeze
from lib.interp.stethoscopes import layer_of
from lib.interp.stethoscopes import merge
from lib.interp.stethoscopes import module_of
from lib.interp.stethoscopes import path_name
from lib.interp.stethoscopes import relative_changes
from lib.interp.stethoscopes import select
