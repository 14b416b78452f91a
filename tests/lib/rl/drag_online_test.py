"""lib.rl.drag.online_iteration: the buffer bookkeeping and the weighting."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.core import errors
from lib.rl import drag


def test_online_iteration_buffer_and_weighted_loss():
  vae, weighter = drag.VAE(latent=2, hidden=8), drag.Weighter(hidden=4)
  tx, wtx = optax.adam(1e-3), optax.adam(1e-3)
  k_v, k_w, key = jax.random.split(jax.random.key(0), 3)
  start = jnp.array([0.1, 0.1])

  @jax.jit
  def init():  # jitted: flax's init op by op takes seconds
    vp = vae.init(k_v, jnp.zeros((1, 256)), k_v)
    wp = weighter.init(k_w, jnp.zeros((1, 256)))
    return {
      "vae": vp,
      "opt": tx.init(vp),
      "w": wp,
      "wopt": wtx.init(wp),
      "buffer": jnp.zeros((1 + 2 * 3, 2)).at[0].set(start),
      "count": jnp.ones((), jnp.int32),
      "walkers": jnp.tile(start, (2, 1)),
    }

  state = init()
  kw = dict(
    vae=vae, weighter=weighter, tx=tx, weighter_tx=wtx, tau=1.0, horizon=3,
    vae_steps=1, batch_size=8, beta=1.0,
  )  # fmt: skip

  @jax.jit
  def both(state):
    rig = drag.online_iteration(state, key, method="rig", **kw)
    skew = drag.online_iteration(state, key, method="skewfit", **kw)
    return rig, skew

  (new, rig_loss), (_, skew_loss) = both(state)
  # Two walkers x three steps join the buffer after the start; each walker
  # stays where its path ended, and every visited state is free.
  assert int(new["count"]) == 7
  buf = np.asarray(new["buffer"])
  np.testing.assert_array_equal(buf[0], start)
  np.testing.assert_array_equal(buf[[3, 6]], new["walkers"])
  assert bool(jnp.all(drag.is_free(new["buffer"])))
  # Same batch and draws: the Skew-Fit loss sum softmax(l) l is at least the
  # uniform mean of l (l and e^l are comonotone), strictly unless l is flat.
  assert float(skew_loss) > float(rig_loss)
  with pytest.raises(errors.ConfigError, match="method='drag_tau1'"):
    drag.online_iteration(state, key, method="drag_tau1", **kw)
  # The buffer is full (7 of 7): another iteration would overwrite its last
  # rows and sample the last one over and over, silently (count 13 of 7).
  with pytest.raises(errors.ConfigError, match="buffer holds 7 states; 7"):
    drag.online_iteration(new, key, method="rig", **kw)
