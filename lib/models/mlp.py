"""A ReLU multilayer perceptron: the digits classifier of SADL and NanoAdam.

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (the digits MLP, 8 clients).
  Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small Weights"
  (NanoAdam), NeurIPS 2025 (the MLP pretrained on digits 0-4, fine-tuned
  on 5-9).
"""

import flax.linen as nn


class MLP(nn.Module):
  """Dense-ReLU layers of widths `hidden`, a linear head: [..., d] -> logits.

  Layers are named Dense_0, Dense_1, ... in order (the head last).
  """

  hidden: tuple[int, ...]
  num_outputs: int

  @nn.compact
  def __call__(self, x):
    for h in self.hidden:
      x = nn.relu(nn.Dense(h)(x))
    return nn.Dense(self.num_outputs)(x)
