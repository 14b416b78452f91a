"""signGD: the optimizer Adam reduces to at its first step and when beta1 = beta2 = 0.

References:
  Vasudeva et al. The Rich and the Simple: On the Implicit Bias of Adam and SGD.
  NeurIPS 2025, Sec. 2 (Adam's first bias-corrected step is exactly signGD).
"""

import optax


def sign_gd(
  learning_rate: optax.ScalarOrSchedule,
) -> optax.GradientTransformation:
  """W <- W - lr * sign(grad), as `optax.chain(scale_by_sign, scale_by_lr)`."""
  return optax.chain(
    optax.scale_by_sign(), optax.scale_by_learning_rate(learning_rate)
  )
