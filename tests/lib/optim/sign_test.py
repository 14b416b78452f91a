"""Adam's first step is signGD's (Vasudeva et al., Sec. 2)."""

import jax
import numpy as np
import optax

from lib import optim


def test_adam_first_step_equals_signgd():
  params = {"W": jax.random.normal(jax.random.key(0), (7, 3))}
  grads = {"W": jax.random.normal(jax.random.key(1), (7, 3))}
  lr = 1e-3
  adam = optax.adam(lr, b1=0.9999, b2=0.9999, eps=1e-12)
  sign = optim.sign_gd(lr)
  u_adam, _ = adam.update(grads, adam.init(params), params)
  u_sign, _ = sign.update(grads, sign.init(params), params)
  np.testing.assert_allclose(u_sign["W"], -lr * np.sign(grads["W"]))
  # float32 rounds 1 - 0.9999 (the bias correction) to ~1e-4 relative error.
  np.testing.assert_allclose(u_adam["W"], u_sign["W"], rtol=2e-4)
  # beta1 = beta2 = 0 makes every Adam step a signGD step (second step too).
  adam0 = optax.adam(lr, b1=0.0, b2=0.0, eps=0.0)
  state = adam0.init(params)
  for g in (grads, {"W": -2.0 * grads["W"] + 0.5}):
    u, state = adam0.update(g, state, params)
    np.testing.assert_allclose(u["W"], -lr * np.sign(g["W"]), rtol=1e-6)
