"""QuartetDense: a flax.linen Dense whose GEMMs run in MXFP4 (Quartet).

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import flax.linen as nn
import jax
import jax.numpy as jnp

from lib.quant import quartet


class QuartetDense(nn.Module):
  """y = x W^T (+ b) with Quartet's FP4 (MXFP4 or NVFP4) forward and backward.

  The kernel is stored [features, in_features] (the GEMM's K-major "TN"
  layout). The backward's randomness comes from the "quant" rng stream
  (`apply(..., rngs={"quant": key})`). Without it the layer evaluates (the
  forward is deterministic), and differentiating it raises ConfigError
  unless its backward is deterministic (`quartet.needs_key`): one fixed key
  at every step would bias SR.

  Attributes:
    features: output size N (multiple of 32).
    use_bias: add a high-precision bias.
    forward, backward, rerotate, implementation, fmt, compute_dtype: see
      `quartet_linear` (compute_dtype "bfloat16": torch bf16 autocast's
      GEMMs, the official trainer's; the quantizers read x and the kernel in
      `dtype`).
    dtype: the dtype x and the kernel are cast to before quantization, and
      the output dtype.
    kernel_init: initializer of the [N, K] kernel.
  """

  features: int
  use_bias: bool = False
  forward: str | None = None
  backward: str = "sr"
  rerotate: bool = True
  implementation: str | None = None
  fmt: str = "mxfp4"
  compute_dtype: str = "float32"
  dtype: jnp.dtype = jnp.float32
  kernel_init: nn.initializers.Initializer = nn.initializers.lecun_normal()

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    k = x.shape[-1]
    # Initialise as [K, N] (fan-in on axis 0) and store transposed.
    kernel = self.param(
      "kernel",
      lambda key, s: self.kernel_init(key, s[::-1]).T,
      (self.features, k),
    )
    key = self.make_rng("quant") if self.has_rng("quant") else None
    y = quartet.quartet_linear(
      x.astype(self.dtype),
      kernel.astype(self.dtype),
      key,
      forward=self.forward,
      backward=self.backward,
      rerotate=self.rerotate,
      implementation=self.implementation,
      fmt=self.fmt,
      compute_dtype=self.compute_dtype,
    )
    if self.use_bias:
      y = y + self.param("bias", nn.initializers.zeros, (self.features,))
    return y.astype(self.dtype)
