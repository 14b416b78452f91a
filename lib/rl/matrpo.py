"""MATRPO: multi-agent TRPO fine-tuning, tabular policies and critics.

The official downstream learner of Zamboni, Mutti, Restelli, "Towards
Principled Unsupervised Multi-Agent Reinforcement Learning" (NeurIPS 2025,
arXiv 2502.08365): RiccZamboni/mepol, branch multi_agent,
src/algorithms/matrpo.py, run by scripts/goal_rl/room.sh. Per epoch:

1. N trajectories of T steps with the current decentralised policies (the
   official Rooms episode is 1000 steps, so a T-step trajectory never ends
   and its last state is bootstrapped).
2. Per agent i, with its critic V^i over its own states: the targets are the
   discounted returns bootstrapped by V^i(s_T), the advantages GAE(gamma,
   lambda) (`gae`), normalised over the epoch's N T samples (mean 0,
   unbiased standard deviation 1).
3. Per agent a TRPO step (`trpo_step`): g the gradient of the gain
   mean(pi / pi_old * A); x = CG(F + damping I, g) with F the Hessian of the
   mean KL(pi_old || pi) over the samples (`conjugate_gradient`); the step
   x / sqrt(x^T (F + damping I) x / (2 delta)), halved up to `backtracks`
   times until the gain improves and the KL is < delta, else no step.
4. Per agent the critic: Adam on the squared error to the targets,
   `critic_iters` passes of shuffled minibatches of `critic_batch` samples
   (the last partial batch dropped).

Here the policy and the critic of an agent are tables over its own states
(the official ones are 64-64 ReLU networks). Two guards the official code
lacks (it would return NaN): an epoch whose advantages are all equal leaves
them unscaled (standard deviation 0), and a zero gradient takes no step.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.rl import grid as grid_lib


@dataclasses.dataclass(frozen=True)
class MATRPOConfig:
  """The official goal_rl.py defaults and scripts/goal_rl/room.sh values."""

  trajectories: int = 20  # --batch_size
  horizon: int = 20  # --traj_len
  kl_threshold: float = 0.001  # --kl_thresh (mean KL over the samples)
  gamma: float = 0.995
  lambd: float = 0.98
  cg_iters: int = 10
  cg_damping: float = 0.1
  backtracks: int = 10  # backtracking(max_iters=10)
  critic_lr: float = 1e-2
  critic_batch: int = 64
  critic_iters: int = 5

  def __post_init__(self):
    for name in ("trajectories", "horizon", "cg_iters", "backtracks"):
      value = getattr(self, name)
      errors.check(
        value >= 1, errors.ConfigError, f"{name} must be >= 1, got {value}"
      )
    errors.check(
      self.kl_threshold > 0,
      errors.ConfigError,
      f"kl_threshold must be > 0, got {self.kl_threshold}",
    )
    errors.check(
      0 < self.gamma <= 1 and 0 <= self.lambd <= 1,
      errors.ConfigError,
      f"gamma must be in (0, 1] and lambd in [0, 1], got {self.gamma}, "
      f"{self.lambd}",
    )
    errors.check(
      1 <= self.critic_batch <= self.trajectories * self.horizon,
      errors.ConfigError,
      f"critic_batch must be in [1, trajectories x horizon = "
      f"{self.trajectories * self.horizon}], got {self.critic_batch}",
    )


class State(NamedTuple):
  """Per agent: policy logits [n, S, 4], critic values [n, S] and the
  critic's Adam state (created once, as the official optimizers are)."""

  logits: jax.Array
  values: jax.Array
  critic_opt: optax.OptState


def _critic_adam(config: MATRPOConfig):
  return optax.adam(config.critic_lr)  # torch.optim.Adam's defaults


def init_state(logits, config: MATRPOConfig) -> State:
  """From pretrained (or uniform) logits [n, S, 4]; the critics start at 0."""
  values = jnp.zeros(logits.shape[:2], jnp.float32)
  return State(logits, values, jax.vmap(_critic_adam(config).init)(values))


def gae(rewards, values, boot, gamma: float, lambd: float):
  """(targets, advantages) [T] of one trajectory: rewards [T], values
  V(s_0..s_{T-1}) [T], boot V(s_T). targets_t = r_t + gamma targets_{t+1}
  from boot; A_t = delta_t + gamma lambd A_{t+1}, delta_t = r_t +
  gamma V(s_{t+1}) - V(s_t) (the official `process_traj`)."""

  def body(carry, x):
    target_next, adv_next, v_next = carry
    r, v = x
    target = r + gamma * target_next
    adv = r + gamma * v_next - v + gamma * lambd * adv_next
    return (target, adv, v), (target, adv)

  init = (boot, jnp.zeros_like(boot), boot)
  _, (targets, adv) = jax.lax.scan(body, init, (rewards, values), reverse=True)
  return targets, adv


def conjugate_gradient(matvec, b, iters: int):
  """The official `conj_gradient`: `iters` CG steps on matvec(x) = b from
  x = 0 (a zero residual takes zero steps instead of 0 / 0)."""

  def body(_, c):
    x, r, p = c
    ap = matvec(p)
    rr = jnp.vdot(r, r)
    pap = jnp.vdot(p, ap)
    alpha = jnp.where(pap > 0, rr / jnp.where(pap > 0, pap, 1.0), 0.0)
    x = x + alpha * p
    r_new = r - alpha * ap
    beta = jnp.where(
      rr > 0, jnp.vdot(r_new, r_new) / jnp.where(rr > 0, rr, 1.0), 0.0
    )
    return x, r_new, r_new + beta * p

  x, _, _ = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(b), b, b))
  return x


def trpo_step(logits, states, actions, advantages, config: MATRPOConfig):
  """One agent's TRPO step on its table logits [S, 4] from samples states,
  actions, advantages [M]; returns (logits, accepted, backtracks used)."""
  lp_old = jax.nn.log_softmax(logits, -1)
  lp_old_taken = lp_old[states, actions]
  lp_old_states = lp_old[states]  # [M, 4]

  def gain(lg):
    lp = jax.nn.log_softmax(lg, -1)[states, actions]
    return jnp.mean(jnp.exp(lp - lp_old_taken) * advantages)

  def kl(lg):
    lp = jax.nn.log_softmax(lg, -1)[states]
    return jnp.mean(
      jnp.sum(jnp.exp(lp_old_states) * (lp_old_states - lp), axis=-1)
    )

  grad_kl = jax.grad(kl)

  def fvp(v):
    return jax.jvp(grad_kl, (logits,), (v,))[1] + config.cg_damping * v

  g = jax.grad(gain)(logits)
  x = conjugate_gradient(fvp, g, config.cg_iters)
  shs = jnp.vdot(x, fvp(x))
  step = jnp.where(
    shs > 0,
    jax.lax.rsqrt(jnp.where(shs > 0, shs, 1.0) / (2 * config.kl_threshold)),
    0.0,
  )
  old = gain(logits)
  alphas = 0.5 ** jnp.arange(config.backtracks, dtype=jnp.float32)
  cands = logits[None] + (alphas * step)[:, None, None] * x[None]
  gains = jax.vmap(gain)(cands)
  kls = jax.vmap(kl)(cands)
  ok = (
    jnp.isfinite(gains)
    & (gains - old > 0)
    & jnp.isfinite(kls)
    & (kls < config.kl_threshold)
  )
  first = jnp.argmax(ok)
  accepted = jnp.any(ok)
  new = jnp.where(accepted, cands[first], logits).astype(logits.dtype)
  return new, accepted, jnp.where(accepted, first, config.backtracks)


def _critic_update(values, opt, states, targets, key, config: MATRPOConfig):
  """`critic_iters` passes of Adam over shuffled minibatches; values [S]."""
  tx = _critic_adam(config)
  m = states.shape[0]
  batches = m // config.critic_batch

  def loss(v, s, t):
    return jnp.mean((v[s] - t) ** 2)

  def one_pass(c, k):
    perm = jax.random.permutation(k, m)[: batches * config.critic_batch]
    idx = perm.reshape(batches, config.critic_batch)

    def one_batch(c, i):
      v, o = c
      g = jax.grad(loss)(v, states[i], targets[i])
      upd, o = tx.update(g, o, v)
      return (optax.apply_updates(v, upd), o), None

    return jax.lax.scan(one_batch, c, idx)[0], None

  keys = jax.random.split(key, config.critic_iters)
  (values, opt), _ = jax.lax.scan(one_pass, (values, opt), keys)
  return values, opt


def epoch(env: grid_lib.SwitchRooms, config: MATRPOConfig, state: State, key):
  """One MATRPO epoch on `env` (its `rewards`); returns (State, metrics):
  `return` (the mean return of the epoch's trajectories, before the
  update), `accepted` (agents whose step was taken), `backtracks`."""
  k_roll, k_critic = jax.random.split(key)
  states, actions = grid_lib.rollouts(
    env, state.logits, k_roll, config.trajectories, config.horizon
  )
  rewards = env.rewards(env.positions(states[:, 1:]))  # [N, T]
  n = state.logits.shape[0]

  def agent(logits, values, opt, s, a, k):
    v = values[s]  # [N, T+1]
    targets, adv = jax.vmap(
      lambda r, vv: gae(r, vv[:-1], vv[-1], config.gamma, config.lambd)
    )(rewards, v)
    adv = adv.reshape(-1)
    sd = jnp.std(adv, ddof=1)
    adv = (adv - jnp.mean(adv)) / jnp.where(sd > 0, sd, 1.0)
    s_flat, a_flat = s[:, :-1].reshape(-1), a.reshape(-1)
    new, accepted, tries = trpo_step(logits, s_flat, a_flat, adv, config)
    values, opt = _critic_update(
      values, opt, s_flat, targets.reshape(-1), k, config
    )
    return new, values, opt, accepted, tries

  keys = jax.random.split(k_critic, n)
  new, values, opt, accepted, tries = jax.vmap(agent)(
    state.logits,
    state.values,
    state.critic_opt,
    jnp.moveaxis(states, -1, 0),
    jnp.moveaxis(actions, -1, 0),
    keys,
  )
  metrics = {
    "return": jnp.mean(jnp.sum(rewards, axis=1)),
    "accepted": jnp.sum(accepted),
    "backtracks": jnp.mean(tries.astype(jnp.float32)),
  }
  return State(new, values, opt), metrics
