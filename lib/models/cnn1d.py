"""A small 1-D CNN time-series classifier: the model MIX explains.

References:
  Tran et al., "MIX: multi-view time-frequency explanations", NeurIPS 2025
  (no official code: a Conv-ReLU stack with global average pooling is the
  usual UCR baseline architecture).
"""

import flax.linen as nn
import jax.numpy as jnp

from lib.core import errors


class Conv1D(nn.Module):
  """'SAME' zero-padded 1-D convolution as one matmul over shifted copies.

  [n, c_in] -> [n, features]. XLA:CPU runs `nn.Conv` inside `lax.scan` (the
  training loop) many times slower than outside; slices + a matmul do not
  have that problem (as `lib.pde.hns.PeriodicConv`).
  """

  features: int
  kernel_size: int

  @nn.compact
  def __call__(self, x):
    if x.ndim != 2:
      raise errors.ShapeError(
        f"Conv1D takes [n, c_in], got shape {x.shape}: jax.vmap it over a batch"
      )
    n, c_in = x.shape
    k = self.kernel_size
    kernel = self.param(
      "kernel", nn.initializers.lecun_normal(), (k * c_in, self.features)
    )
    bias = self.param("bias", nn.initializers.zeros, (self.features,))
    left = (k - 1) // 2
    xp = jnp.pad(x, ((left, k - 1 - left), (0, 0)))
    patches = jnp.concatenate([xp[j : j + n] for j in range(k)], axis=-1)
    return patches @ kernel + bias


class CNN1D(nn.Module):
  """Conv-ReLU blocks, global average pooling, a linear head: [n] -> logits.

  The blocks are named Conv1D_0, Conv1D_1, ... (the name of `Conv1D` is part
  of every parameter path, so of its init key: renaming it changes the init).
  """

  channels: tuple
  kernel_sizes: tuple
  num_classes: int

  @nn.compact
  def __call__(self, x):
    if x.ndim != 1:
      raise errors.ShapeError(
        f"CNN1D classifies one series [n], got shape {x.shape}: jax.vmap it "
        "over a batch"
      )
    h = x[:, None]
    for c, k in zip(self.channels, self.kernel_sizes):
      h = nn.relu(Conv1D(c, k)(h))
    return nn.Dense(self.num_classes)(jnp.mean(h, axis=0))
