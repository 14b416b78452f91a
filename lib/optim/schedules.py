"""Learning-rate schedules as optax schedules (step -> learning rate).

References:
  Smith & Topin, "Super-Convergence" (2017), the one-cycle policy, as
  `torch.optim.lr_scheduler.OneCycleLR` implements it; Castro et al.,
  "Quartet: Native FP4 Training Can Be Optimal for Large Language Models",
  NeurIPS 2025 (its trainer, IST-DASLab/Quartet src/main.py, uses it).
"""

import jax.numpy as jnp
import optax


def one_cycle_schedule(
  peak_value: float,
  total_steps: int,
  warmup_steps: int,
  *,
  div_factor: float = 100.0,
  final_div_factor: float = 0.1,
  decay: bool = True,
) -> optax.Schedule:
  """torch's OneCycleLR with cosine annealing (two phases, no momentum cycle).

  With initial = peak / div_factor and final = initial / final_div_factor
  (Quartet's 100 and 0.1: from peak / 100 up to peak, then down to
  peak / 10), and cos(a, b, p) = b + (a - b) (1 + cos(pi p)) / 2:

    step s <= w - 1:  cos(initial, peak, s / (w - 1))
    step s >  w - 1:  cos(peak, final, (s - (w - 1)) / (T - w)),

  w = warmup_steps, T = total_steps, so the peak is reached at step w - 1
  and the final value at step T - 1 (held after it). Step s is the s-th
  update (optax's count from 0; torch's `last_epoch`).

  Args:
    peak_value: the maximum learning rate (torch's max_lr).
    total_steps: T >= 2.
    warmup_steps: w in [1, T) (torch: pct_start * T); w = 1 starts the decay
      from step 0's initial value. T and w may be traced integer scalars
      (one compiled program for runs of several lengths; then unchecked).
    div_factor, final_div_factor: as torch's.
    decay: False holds the peak after the warmup (no second phase).
  """
  static = isinstance(total_steps, int) and isinstance(warmup_steps, int)
  if static and (total_steps < 2 or not 1 <= warmup_steps < total_steps):
    raise ValueError(
      f"one_cycle_schedule needs total_steps >= 2 and 1 <= warmup_steps < "
      f"total_steps; got {total_steps}, {warmup_steps}"
    )
  initial = peak_value / div_factor
  final = initial / final_div_factor
  peak_step = warmup_steps - 1

  def anneal(start, end, pct):
    # (1 + cos(pi p)) / 2 = cos(pi p / 2)^2 and its complement sin^2, so that
    # float32 gives start at p = 0 and end at p = 1 to an ulp; the textbook
    # end + (start - end) w would lose ~1e-7 of start - end (a 1e-5 relative
    # error on lr / 100) to cancellation.
    half = jnp.pi / 2 * pct
    return start * jnp.square(jnp.cos(half)) + end * jnp.square(jnp.sin(half))

  def schedule(step):
    s = jnp.asarray(step, jnp.float32)
    up_steps = max(peak_step, 1) if static else jnp.maximum(peak_step, 1)
    up = anneal(initial, peak_value, s / up_steps)
    down_pct = jnp.clip((s - peak_step) / (total_steps - 1 - peak_step), 0, 1)
    down = anneal(peak_value, final, down_pct) if decay else peak_value
    return jnp.where(s <= peak_step, up, down)

  return schedule
