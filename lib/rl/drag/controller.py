"""DRAG's exploration: imagined goals, the scripted controller, one iteration.

Castanet, Sigaud, Lamprier, "Imagine Beyond!" (NeurIPS 2025, arXiv
2505.17830), isolating the representation from RL: goals are drawn from the
VAE prior and reached by a greedy controller in true state (no policy is
learned), their states fill the buffer the weighted VAE is trained on.
"""

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.rl.drag.maze import U_MAZE
from lib.rl.drag.maze import decode_position
from lib.rl.drag.maze import is_free
from lib.rl.drag.maze import render
from lib.rl.drag.vae import VAE
from lib.rl.drag.vae import Weighter
from lib.rl.drag.vae import skewfit_weights
from lib.rl.drag.vae import weighter_ascent

METHODS = ("rig", "skewfit", "drag")


def imagine_goals(vae: VAE, params, key, n: int, decoding: str = "argmax"):
  """Positions [n, 2] of n goals imagined from the prior.

  z ~ N(0, I), decoded to an image (sigmoid of the logits), read back as the
  position it shows (`decode_position` with mode `decoding`).
  """
  z = jax.random.normal(key, (n, vae.latent))
  img = jax.nn.sigmoid(vae.apply(params, z, method=VAE.decode))
  return decode_position(img, mode=decoding)


def reach(start, goal, steps: int, step_size: float = 0.06, maze=U_MAZE):
  """Greedy moves towards the goal in true state; a blocked axis stays.

  Returns the visited positions [steps, 2].
  """
  errors.check(
    steps >= 1, errors.ConfigError, f"horizon must be >= 1, got {steps}"
  )

  def body(pos, _):
    d = goal - pos
    move = step_size * d / jnp.maximum(jnp.linalg.norm(d), step_size)
    for axis in (0, 1):  # slide along walls: x first, then y
      trial = pos.at[axis].add(move[axis])
      pos = jnp.where(is_free(trial, maze), trial, pos)
    return pos, pos

  _, path = jax.lax.scan(body, start, None, length=steps)
  return path


def _check_method(method: str) -> None:
  errors.check(
    method in METHODS,
    errors.ConfigError,
    f"method={method!r} is not one of {METHODS}",
  )


def training_weights(method: str, losses, weighter: Weighter, params, x):
  """The weights [n] a method puts on a batch x [n, pixels] with losses l.

  Uniform ("rig"); Skew-Fit at alpha = -1 ("skewfit": with -log p ~ l,
  softmax(l), the DRO weights at tau = 1); DRAG ("drag": softmax(f_psi(x))
  under the weighter's `params`).
  """
  _check_method(method)
  if method == "rig":
    n = losses.shape[0]
    return jnp.full((n,), 1.0 / n)
  if method == "skewfit":
    return skewfit_weights(-losses, -1.0)
  return jax.nn.softmax(weighter.apply(params, x))


def online_iteration(
  state: dict,
  key,
  *,
  vae: VAE,
  weighter: Weighter,
  tx,
  weighter_tx,
  method: str,
  tau,
  horizon: int,
  vae_steps: int,
  batch_size: int,
  beta: float,
  goal_decoding: str = "argmax",
  weighter_steps: int = 1,
):
  """One iteration of the online loop for one seed; returns (state, loss).

  `state` holds "vae", "opt" (its optax state), "w", "wopt" (the weighter's),
  "buffer" [cap, 2] with the first "count" rows filled, and "walkers" [E, 2].

  1. Every walker draws a goal from the VAE prior (z ~ N(0, I), decoded,
     read back as a position by `goal_decoding`, `decode_position`) and
     walks `horizon` steps towards it (`reach`);
     its states join the buffer and it stays where it ended.
  2. `vae_steps` steps of the beta-VAE on batches drawn uniformly from the
     buffer, the per-sample loss l(s) weighted by the method: uniform
     ("rig"), Skew-Fit at alpha = -1 (softmax(l), the DRO weights at
     tau = 1), or DRAG ("drag": w = softmax(f_psi(s)) from the weighter's
     current parameters; in the same step the weighter takes
     `weighter_steps` ascent steps on sum w l - tau KL(w || uniform) over
     this batch, which the next batch's weights use: simultaneous
     descent-ascent; more steps bring f_psi nearer the batch's best
     response softmax(l / tau)).

  `tau` may be traced (one program serves every tau). The loss is the mean
  weighted VAE loss over the iteration's steps.

  The buffer must have room for the iteration's E * horizon new states
  (count + E * horizon <= cap); past that, `dynamic_update_slice` would
  overwrite the last rows and the batches would repeat the last row. A
  concrete count is checked (ConfigError); under jit size the buffer for
  the whole run (count after n iterations: 1 + n * E * horizon).
  """
  _check_method(method)
  walkers = state["walkers"].shape[0]
  cap, adds = state["buffer"].shape[0], walkers * horizon
  if errors.is_concrete(state["count"]):
    errors.check(
      int(state["count"]) + adds <= cap,
      errors.ConfigError,
      f"the buffer holds {cap} states; {int(state['count'])} are filled and "
      f"this iteration adds {adds} (walkers x horizon): make it larger",
    )
  k_goal, k_train = jax.random.split(key)
  # Goals from the prior, reached greedily; states join the buffer.
  goals = imagine_goals(vae, state["vae"], k_goal, walkers, goal_decoding)
  paths = jax.vmap(lambda p, g: reach(p, g, horizon))(
    state["walkers"], goals
  )  # [E, H, 2]
  new = paths.reshape(-1, 2)
  buf = jax.lax.dynamic_update_slice(state["buffer"], new, (state["count"], 0))
  count = state["count"] + new.shape[0]

  def vae_step(c, k):
    vp, opt, wp, wopt = c
    k_idx, k_eps, k_noise = jax.random.split(k, 3)
    idx = jax.random.randint(k_idx, (batch_size,), 0, count)
    x = render(buf[idx])

    def losses(v):
      return vae.apply(v, x, k_eps, beta)

    l_now = jax.lax.stop_gradient(losses(vp))
    w = jax.lax.stop_gradient(training_weights(method, l_now, weighter, wp, x))
    if method == "drag":
      wp, wopt = weighter_ascent(
        weighter, weighter_tx, wp, wopt, x, l_now, tau, weighter_steps
      )
    value, g = jax.value_and_grad(lambda v: jnp.sum(w * losses(v)))(vp)
    u, opt = tx.update(g, opt, vp)
    return (optax.apply_updates(vp, u), opt, wp, wopt), value

  (vp, opt, wp, wopt), values = jax.lax.scan(
    vae_step,
    (state["vae"], state["opt"], state["w"], state["wopt"]),
    jax.random.split(k_train, vae_steps),
  )
  out = {
    "vae": vp,
    "opt": opt,
    "w": wp,
    "wopt": wopt,
    "buffer": buf,
    "count": count,
    "walkers": paths[:, -1],
  }
  return out, jnp.mean(values)
