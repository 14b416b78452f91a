"""Preference learning: DPO / IPO / SLiC losses and last-layer DPO dynamics.

Modules:
- `dpo`: preference losses on log-probabilities, the last-layer policy
  (logits = W g(x), frozen g, reference head W_ref), reward margins through
  log-softmax and through the exact single-token identity, and the exact
  one-step GD margin update.
- `data`: the paper's value clusters (K values, a token pair each, clusters
  +-c_k + b), the earlier shared-token clusters, and the concept-token task
  whose LM embeddings form the Llama mode.
- `scaling`: the measurement of the samples-per-value law: each value's
  accuracy, Q* (the smallest Q reaching a target accuracy) and the fits
  Q* = a + b log K against a' + b' K.

Reference: Im & Li, "Can DPO Learn Diverse Human Values? A Theoretical Scaling
Law", NeurIPS 2025 (arXiv 2408.03459); official code shawn-im/dpo-diverse.
"""

from lib.alignment.data import cluster_geometry
from lib.alignment.data import concept_pairs
from lib.alignment.data import concept_sequences
from lib.alignment.data import concept_world
from lib.alignment.data import first_q_mask
from lib.alignment.data import sample_pairs
from lib.alignment.data import shared_token_model
from lib.alignment.data import value_directions
from lib.alignment.data import value_model
from lib.alignment.data import value_pairs
from lib.alignment.dpo import LOSSES
from lib.alignment.dpo import check_beta
from lib.alignment.dpo import check_pairs
from lib.alignment.dpo import closed_form_margins
from lib.alignment.dpo import gd_margin_update
from lib.alignment.dpo import log_ratio_difference
from lib.alignment.dpo import loss
from lib.alignment.dpo import margins
from lib.alignment.dpo import mean_loss
from lib.alignment.dpo import population_accuracy
from lib.alignment.dpo import preference_loss
from lib.alignment.dpo import reward_accuracy
from lib.alignment.dpo import token_logprobs
from lib.alignment.dpo import value_block_loss
from lib.alignment.dpo import value_block_margins
from lib.alignment.scaling import fit_law
from lib.alignment.scaling import q_star
from lib.alignment.scaling import scaling_law
from lib.alignment.scaling import value_accuracy
