"""Unsupervised exploration in JAX: multi-agent state entropy (TRPE) and DRAG.

Modules:
- `grid`: multi-agent grid worlds (pure reset / step / rollout, vmappable),
  the two-room world.
- `entropy`: plug-in and IS-weighted k-NN state-entropy estimators, the
  joint / per-agent / mixture finite-trial entropies of a trajectory.
- `trpe`: tabular softmax policies, self-normalised trajectory importance
  weights, the KL trust-region TRPE epoch, and the downstream team reward
  with REINFORCE fine-tuning.
- `drag`: the U-maze with rendered observations, the beta-VAE, KL-DRO
  weights (tabular and neural weighters), Skew-Fit weights and their DRO
  link, the scripted goal-reaching controller, coverage metrics.

References: Zamboni, Mutti, Restelli, "Towards Principled Unsupervised
Multi-Agent Reinforcement Learning", NeurIPS 2025 (arXiv 2502.08365);
Castanet, Sigaud, Lamprier, "Imagine Beyond! Distributionally Robust
Auto-Encoding for State Space Coverage in Online RL", NeurIPS 2025 (arXiv
2505.17830).
"""

from lib.rl import drag
from lib.rl import entropy
from lib.rl import grid
from lib.rl import trpe
