"""DRAG: distributionally robust auto-encoding for goal-conditioned exploration.

Castanet, Sigaud, Lamprier, "Imagine Beyond! Distributionally Robust
Auto-Encoding for State Space Coverage in Online RL" (NeurIPS 2025, arXiv
2505.17830; no code released). A beta-VAE fitted to the states an agent has
visited over-represents the frequent ones, so goals imagined from its prior
stay near what was seen; DRAG trains the VAE under KL-DRO so that its goals
reach further. This is goal-conditioned exploration with a scripted
goal-reaching controller, not an RL learner: what is compared is the
representation. Spec: extended_papers.md section 7.

Modules:
- `maze`: the U-maze, positions and cells, rendered observations, coverage.
- `vae`: the beta-VAE, the KL-DRO optimum and objective, Skew-Fit weights
  and their DRO link, the tabular (oracle) and neural weighters.
- `controller`: goals imagined from the prior, the greedy controller
  (`reach`) and one online iteration (goals -> reaching -> buffer ->
  weighted VAE steps).
"""

from lib.rl.drag.controller import METHODS
from lib.rl.drag.controller import imagine_goals
from lib.rl.drag.controller import online_iteration
from lib.rl.drag.controller import reach
from lib.rl.drag.controller import training_weights
from lib.rl.drag.maze import GOAL_DECODINGS
from lib.rl.drag.maze import U_MAZE
from lib.rl.drag.maze import cell_of
from lib.rl.drag.maze import coverage
from lib.rl.drag.maze import decode_position
from lib.rl.drag.maze import is_free
from lib.rl.drag.maze import render
from lib.rl.drag.vae import VAE
from lib.rl.drag.vae import Weighter
from lib.rl.drag.vae import check_tau
from lib.rl.drag.vae import dro_objective
from lib.rl.drag.vae import dro_weights
from lib.rl.drag.vae import ess_fraction
from lib.rl.drag.vae import skewfit_histogram_step
from lib.rl.drag.vae import skewfit_weights
from lib.rl.drag.vae import tabular_weighter
from lib.rl.drag.vae import weighter_ascent
