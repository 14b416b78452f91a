"""Module-level interpretability tools: the stethoscopes of SfN.

Modules:
- `stethoscopes`: Delta (per-module, per-layer l2 change, relative-change
  histograms, bimodality coefficient, `delta_report` over seeds), Merge (copy
  chosen modules of B into A), Freeze (an optax `multi_transform` training
  only chosen modules; `freeze_where` for a vmapped stack of runs) and
  Destruction (zero or perturb a module), over any flax parameter tree, with
  modules chosen by name pattern (`select`).
- `tasks`: the tiny-model protocol's synthetic data: a grammar ("conversation")
  and multi-digit addition with and without a scratchpad ("reasoning"), and
  the deterministic level I-IV grader.
- `scoring`: a causal LM scored on those tasks (teacher-forced level IV,
  greedy generation, grammar perplexity) and the seed bands of the scores.

Reference: Shao & Wu, "Who Reasons in the Large Language Models?", NeurIPS
2025 (arXiv 2505.20993). No official code was released.
"""

from lib.interp import scoring
from lib.interp import tasks
from lib.interp.stethoscopes import DEFAULT_PATTERNS
from lib.interp.stethoscopes import GROUPS
from lib.interp.stethoscopes import bimodality_coefficient
from lib.interp.stethoscopes import check_same_structure
from lib.interp.stethoscopes import delta_norms
from lib.interp.stethoscopes import delta_report
from lib.interp.stethoscopes import destroy
from lib.interp.stethoscopes import expand
from lib.interp.stethoscopes import freeze
from lib.interp.stethoscopes import freeze_where
from lib.interp.stethoscopes import layer_of
from lib.interp.stethoscopes import merge
from lib.interp.stethoscopes import module_of
from lib.interp.stethoscopes import path_name
from lib.interp.stethoscopes import relative_changes
from lib.interp.stethoscopes import select
from lib.interp.stethoscopes import trim_tails
