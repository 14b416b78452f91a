"""Unsupervised exploration in JAX: multi-agent state entropy (TRPE) and DRAG.

Modules:
- `grid`: multi-agent grid worlds (pure reset / step / rollout, vmappable),
  the two-room world and the official Rooms (a door opened by switches).
- `entropy`: plug-in and IS-weighted k-NN state-entropy estimators, the
  joint / per-agent / mixture finite-trial entropies of a trajectory.
- `trpe`: tabular softmax policies, self-normalised trajectory importance
  weights, the KL trust-region TRPE epoch, and the downstream team reward
  with REINFORCE fine-tuning.
- `matrpo`: the official downstream learner, multi-agent TRPO with GAE and
  per-agent critics (tabular), for the Rooms' goal reward.
- `drag` (a package; goal-conditioned exploration, not an RL learner):
  `maze` (the U-maze, rendered observations, coverage), `vae` (the
  beta-VAE, KL-DRO weights, tabular and neural weighters, Skew-Fit and its
  DRO link), `controller` (imagined goals, the scripted goal-reaching
  controller, one online iteration).

References: Zamboni, Mutti, Restelli, "Towards Principled Unsupervised
Multi-Agent Reinforcement Learning", NeurIPS 2025 (arXiv 2502.08365);
Castanet, Sigaud, Lamprier, "Imagine Beyond! Distributionally Robust
Auto-Encoding for State Space Coverage in Online RL", NeurIPS 2025 (arXiv
2505.17830).
"""

from lib.rl import drag
from lib.rl import entropy
from lib.rl import grid
from lib.rl import matrpo
from lib.rl import trpe
