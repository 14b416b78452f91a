"""Time integrators as `lax.scan` rollouts.

HNS rolls out du/dt = J dH_theta/du with 2nd-order Adams-Bashforth and a
forward-Euler first step, using the data's time step directly.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Alg. 1 / App. D.
"""

import jax
import jax.numpy as jnp

from lib.core import errors


def rk4_step(f, u, dt):
  """Classical 4th-order Runge-Kutta step."""
  k1 = f(u)
  k2 = f(u + 0.5 * dt * k1)
  k3 = f(u + 0.5 * dt * k2)
  k4 = f(u + dt * k3)
  return u + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def _promoted(step_fn, u0):
  """u0 in the dtype one step returns (a bfloat16 field under a float32
  model steps in float32), so that the scan's carry keeps one dtype."""
  out = jax.eval_shape(step_fn, u0)
  return u0.astype(jnp.promote_types(u0.dtype, out.dtype))


def rk4_rollout(f, u0, dt, num_steps):
  """RK4 trajectory [num_steps + 1, *u0.shape], including u0 (in the dtype
  the step returns, as `ab2_rollout`)."""
  u0 = _promoted(lambda u: rk4_step(f, u, dt), u0)

  def step(u, _):
    u_next = rk4_step(f, u, dt)
    return u_next, u_next

  _, us = jax.lax.scan(step, u0, None, length=num_steps)
  return jnp.concatenate([u0[None], us], axis=0)


def ab2_rollout(f, u0, dt, num_steps):
  """AB2 trajectory [num_steps + 1, *u0.shape] with an Euler first step.

  u_{t+1} = u_t + dt (3/2 f(u_t) - 1/2 f(u_{t-1})); one f evaluation per
  step (the previous one is carried).
  """
  f0 = f(u0)
  u1 = u0 + dt * f0

  def step(carry, _):
    u, f_prev = carry
    f_u = f(u)
    u_next = u + dt * (1.5 * f_u - 0.5 * f_prev)
    return (u_next, f_u), u_next

  if num_steps < 1:
    return u0[None]
  _, us = jax.lax.scan(step, (u1, f0), None, length=num_steps - 1)
  return jnp.concatenate([u0[None], u1[None], us], axis=0)


def next_step_rollout(step_fn, u0, num_steps):
  """Autoregressive trajectory of a learned map u_{t+1} = step_fn(u_t)
  (in the dtype the step returns, as `ab2_rollout`)."""
  u0 = _promoted(step_fn, u0)

  def step(u, _):
    u_next = step_fn(u)
    return u_next, u_next

  _, us = jax.lax.scan(step, u0, None, length=num_steps)
  return jnp.concatenate([u0[None], us], axis=0)


def richardson_dudt(traj, dt):
  """4th-order du/dt of a trajectory [T, ...] (T >= 6) along axis 0.

  Interior: (4/3)(u_{t+1} - u_{t-1})/(2dt) - (1/3)(u_{t+2} - u_{t-2})/(4dt);
  the first and last two steps use one-sided 5-point formulas, as in the
  HNS code (the one at step 1 reads u_1..u_5, hence T >= 6).

  Raises:
    ShapeError: fewer than 6 steps.
  """
  u = traj
  errors.check(
    u.ndim >= 1 and u.shape[0] >= 6,
    errors.ShapeError,
    f"richardson_dudt needs a trajectory of >= 6 steps on axis 0, got "
    f"shape {u.shape}",
  )
  interior = (4.0 / 3.0) * (u[3:-1] - u[1:-3]) / (2.0 * dt) - (1.0 / 3.0) * (
    u[4:] - u[:-4]
  ) / (4.0 * dt)

  def forward(i):
    return -(
      25 * u[i] - 48 * u[i + 1] + 36 * u[i + 2] - 16 * u[i + 3] + 3 * u[i + 4]
    ) / (12.0 * dt)

  def backward(i):
    return (
      25 * u[i] - 48 * u[i - 1] + 36 * u[i - 2] - 16 * u[i - 3] + 3 * u[i - 4]
    ) / (12.0 * dt)

  t = u.shape[0]
  head = jnp.stack([forward(0), forward(1)])
  tail = jnp.stack([backward(t - 2), backward(t - 1)])
  return jnp.concatenate([head, interior, tail], axis=0)
