"""TRPE: trust-region pure exploration for n agents with tabular policies.

Zamboni, Mutti, Restelli, "Towards Principled Unsupervised Multi-Agent
Reinforcement Learning" (NeurIPS 2025, arXiv 2502.08365); the update is read
from the official code (RiccZamboni/mepol, branch multi_agent,
src/algorithms/trpe.py). Per epoch:

1. N trajectories of length H with the behaviour policies pi_b^i.
2. Per trajectory the finite-trial entropy of the chosen objective:
   "joint" H(d(s^1..s^n)), "disjoint" H(d_i(s^i)) for agent i, "mixture"
   H((1/n) sum_i d_i) (`lib.rl.entropy.trajectory_entropies`).
3. Per agent, self-normalised trajectory importance weights
   w_n^i = softmax_n(sum_t log pi^i(a_t|s_t) - log pi_b^i(a_t|s_t)); the
   surrogate L_i = sum_n w_n^i H_n is ascended with Adam (gradients only
   through the weights) for off-policy iterations inside a policy-KL trust
   region, by one of two rules (`TRPEConfig.trust_region`, below).
4. pi_b <- pi.

Policies are decentralised: agent i's logits [S, 4] of its own policy state
(its cell on a `grid.Grid`; its cell and the door's state on the official
Rooms, `grid.SwitchRooms`); the entropies are of the cells alone, as the
official distributions (x, y) are.

trust_region="official" (the default, `official_epoch`) follows the
official `trpe` (src/algorithms/trpe.py at 33387192; its main loop and
`compute_kl`, `policy_update`):
- Each agent stops on its own: after every accepted iteration an agent
  whose KL is >= delta stops stepping, the others go on; a step is
  accepted while *any* agent's KL is <= delta (and the loss and KLs are
  finite), so an agent may end the epoch past delta. The official
  `policy_update` zips the optimizers with a list holding only the
  unfinished agents' flags, so once the first agent finishes it is agent
  0's optimizer that keeps stepping (a bug); we implement the intended
  rule.
- KL: the sum over every sampled state (N x (H + 1), s_H included) of
  KL(pi_b || pi), divided by the 4 actions (`official_kl`). Its delta is
  6-15 with 10-30 trajectories of 50-500 steps; we state delta as the
  per-state mean it implies (`config.kl_threshold`, scaled back by
  N (H + 1) / 4, `official_kl_threshold`).
- Backtracking (its default): a rejected step restores the last accepted
  policies (its optimizers keep the moments of the rejected step), divides
  the learning rate by 2^i and retries, at most 10 tries in all; the
  first step accepted after a backtrack ends the epoch.
- Its Adam optimizers are created once and keep their moments and step
  counts across epochs (`State.adam`); the learning rate is reset at the
  start of every epoch.
- Its per-trajectory distributions count the H states s_0..s_{H-1}; the
  surrogate's entropies here do too (our evaluations and logged
  entropies count s_0..s_H in both modes).

trust_region="joint" (ours, `joint_epoch`): the agents step together
while every agent's per-state *mean* KL over the visited states stays
<= delta (a step that would take any agent past delta is not taken and
ends the epoch's iterations) or `max_off_iters` is reached; only a
non-finite step halves the learning rate (at most `backtracks` times);
Adam starts afresh each epoch; the surrogate counts s_0..s_H.
"""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.rl import entropy as entropy_lib
from lib.rl import grid as grid_lib

OBJECTIVES = ("joint", "disjoint", "mixture")
TRUST_REGIONS = ("official", "joint")


@dataclasses.dataclass(frozen=True)
class TRPEConfig:
  objective: str = "mixture"
  trajectories: int = 16  # N per epoch
  horizon: int = 60  # H
  # delta, as a per-state mean of KL(pi_b || pi) in both modes ("official"
  # compares the official sum / 4 with N (H + 1) / 4 times it).
  kl_threshold: float = 0.1
  max_off_iters: int = 20
  learning_rate: float = 0.1
  # "official": tries in all (its max_backtrack_try; 1 = its
  # use_backtracking 0); "joint": halvings on a non-finite step.
  backtracks: int = 10
  backtrack_coeff: float = 2.0  # "official" only
  trust_region: str = "official"  # or "joint" (ours), see the docstring

  def __post_init__(self):
    errors.check(
      self.objective in OBJECTIVES,
      errors.ConfigError,
      f"objective={self.objective!r} is not one of {OBJECTIVES}",
    )
    errors.check(
      self.trust_region in TRUST_REGIONS,
      errors.ConfigError,
      f"trust_region={self.trust_region!r} is not one of {TRUST_REGIONS}",
    )
    errors.check(
      self.backtracks >= 1 and self.backtrack_coeff > 1,
      errors.ConfigError,
      f"backtracks must be >= 1 and backtrack_coeff > 1, got "
      f"{self.backtracks}, {self.backtrack_coeff}",
    )
    errors.check(
      self.horizon >= 1,
      errors.ConfigError,
      f"horizon must be >= 1, got {self.horizon}",
    )
    errors.check(
      self.trajectories >= 2,
      errors.ConfigError,
      f"trajectories must be >= 2, got {self.trajectories}",
    )
    errors.check(
      self.kl_threshold > 0,
      errors.ConfigError,
      f"kl_threshold must be > 0, got {self.kl_threshold}",
    )


def init(grid: grid_lib.Grid) -> jax.Array:
  """Zero logits [n, S, 4]: the uniform policy (entropy log 4), as the code."""
  return jnp.zeros((grid.num_agents, grid.num_states, grid_lib.NUM_ACTIONS))


def log_probs(logits, cells, actions):
  """log pi^i(a_t^i | s_t^i) [N, T, n] for trajectories cells [N, T+1, n]."""
  n = logits.shape[0]
  lp = jax.nn.log_softmax(logits, axis=-1)  # [n, S, 4]
  agent = jnp.arange(n)
  return lp[agent, cells[:, :-1], actions]


def importance_weights(logits, logits_b, cells, actions):
  """Self-normalised trajectory weights [n, N] of each agent's own policy."""
  ratio = log_probs(logits, cells, actions) - log_probs(
    logits_b, cells, actions
  )
  return jax.nn.softmax(jnp.sum(ratio, axis=1).T, axis=-1)  # over trajectories


def mean_kl(logits_b, logits, cells):
  """Per agent, mean over visited states of KL(pi_b || pi) [n]."""
  lb = jax.nn.log_softmax(logits_b, -1)
  lt = jax.nn.log_softmax(logits, -1)
  kl = jnp.sum(jnp.exp(lb) * (lb - lt), -1)  # [n, S]
  n = logits.shape[0]
  visited = kl[jnp.arange(n), cells.reshape(-1, n)]  # [N*(T+1), n]
  return jnp.mean(visited, axis=0)


def objective_values(cells, objective: str):
  """Per trajectory and agent, the entropy agent i ascends [N, n]."""
  ent = jax.vmap(entropy_lib.trajectory_entropies)(cells)
  n = cells.shape[-1]
  if objective == "disjoint":
    return ent["agents"]
  return jnp.repeat(ent[objective][:, None], n, axis=1)


def surrogate(logits, logits_b, cells, actions, values):
  """sum_i L_i = sum_i sum_n w_n^i H_n^i (gradients only through w)."""
  w = importance_weights(logits, logits_b, cells, actions)  # [n, N]
  return jnp.sum(w * jax.lax.stop_gradient(values).T)


def sample(grid, logits, key, config: TRPEConfig):
  """N trajectories: cells [N, H+1, n], actions [N, H, n]."""
  return grid_lib.rollouts(
    grid, logits, key, config.trajectories, config.horizon
  )


def _entropy_metrics(cells):
  """An epoch's logged entropies (means over its trajectories, s_0..s_H)."""
  ent = jax.vmap(entropy_lib.trajectory_entropies)(cells)
  return {
    "joint_entropy": jnp.mean(ent["joint"]),
    "mixture_entropy": jnp.mean(ent["mixture"]),
    "agent_entropy": jnp.mean(ent["agents"]),
  }


def joint_epoch(grid, config: TRPEConfig, logits_b, key):
  """Our epoch (`trust_region="joint"`) from behaviour logits [n, S, 4];
  returns (logits, metrics).

  The agents step together while every agent's per-state mean KL stays
  <= delta; Adam starts afresh each epoch (its moments belong to one
  surrogate); only a non-finite step halves the rate.
  """
  cells, actions = sample(grid, logits_b, key, config)
  values = objective_values(grid.positions(cells), config.objective)
  tx = optax.scale_by_adam()
  grad_fn = jax.grad(surrogate)

  def cond(c):
    it, _, _, scale, tries, done = c
    return (it < config.max_off_iters) & ~done & (tries <= config.backtracks)

  def body(c):
    it, logits, opt, scale, tries, _ = c
    g = grad_fn(logits, logits_b, cells, actions, values)
    upd, opt_new = tx.update(g, opt, logits)
    # Ascent; in the logits' own dtype (the float32 step scale would
    # promote bfloat16 logits and change the loop carry's type).
    new = (logits + config.learning_rate * scale * upd).astype(logits.dtype)
    kl = mean_kl(logits_b, new, cells)
    finite = jnp.all(jnp.isfinite(new)) & jnp.all(jnp.isfinite(kl))
    within = finite & jnp.all(kl <= config.kl_threshold)
    # Non-finite: halve the rate and retry; over the trust region: stop
    # without taking the step.
    logits = jnp.where(within, new, logits)
    opt = jax.tree.map(lambda a, b: jnp.where(within, a, b), opt_new, opt)
    scale = jnp.where(finite, scale, scale / 2)
    tries = tries + (~finite).astype(jnp.int32)
    done = finite & ~within
    return it + within.astype(jnp.int32), logits, opt, scale, tries, done

  c0 = (
    jnp.zeros((), jnp.int32),
    logits_b,
    tx.init(logits_b),
    jnp.ones(()),
    jnp.zeros((), jnp.int32),
    jnp.zeros((), bool),
  )
  iters, logits, _, _, _, _ = jax.lax.while_loop(cond, body, c0)
  metrics = {
    **_entropy_metrics(grid.positions(cells)),
    "kl": jnp.max(mean_kl(logits_b, logits, cells)),
    "off_iters": iters,
    "loss": -jnp.mean(values),
  }
  return logits, metrics


def official_kl(logits_b, logits, cells):
  """Per agent, the official code's KL [n]: the sum over every sampled state
  (all N x (H + 1) of cells [N, H+1, n]) of KL(pi_b || pi), divided by the 4
  actions (its `compute_kl`: a sum over trajectories and steps, then a mean
  over the action axis), clamped at 0 as there."""
  n = logits.shape[0]
  lb = jax.nn.log_softmax(logits_b, -1)
  lt = jax.nn.log_softmax(logits, -1)
  kl = jnp.sum(jnp.exp(lb) * (lb - lt), -1)  # [n, S]
  visited = kl[jnp.arange(n), cells.reshape(-1, n)]  # [N*(H+1), n]
  return jnp.maximum(jnp.sum(visited, axis=0) / grid_lib.NUM_ACTIONS, 0.0)


def official_kl_threshold(config: TRPEConfig):
  """delta in `official_kl`'s units: config.kl_threshold is a per-state
  mean, the official sum over N (H + 1) states / 4 is N (H + 1) / 4 times
  that."""
  return config.kl_threshold * config.trajectories * (config.horizon + 1) / 4


class State(NamedTuple):
  """What TRPE carries across epochs: the behaviour logits [n, S, 4] and
  each agent's Adam state (count [n], moments [n, S, 4]); the official code
  creates its optimizers once, so their moments and step counts persist."""

  logits: jax.Array
  adam: optax.ScaleByAdamState


_ADAM = optax.scale_by_adam()  # torch.optim.Adam's defaults, without the lr


def init_state(grid: grid_lib.Grid) -> State:
  logits = init(grid)
  return State(logits, jax.vmap(_ADAM.init)(logits))


def epoch(grid, config: TRPEConfig, state: State, key):
  """One TRPE epoch of `config.trust_region`; returns (State, metrics)."""
  if config.trust_region == "joint":
    logits, metrics = joint_epoch(grid, config, state.logits, key)
    return state._replace(logits=logits), metrics
  return official_epoch(grid, config, state, key)


def _per_agent(mask, new, old):
  """new where mask [n] else old, leaf by leaf (leading axis: the agent)."""
  return jax.tree.map(
    lambda a, b: jnp.where(mask.reshape((-1,) + (1,) * (a.ndim - 1)), a, b),
    new,
    old,
  )


def official_loop(loss_and_grad, kl_fn, logits_b, adam, config, delta):
  """The official off-policy iterations from logits_b [n, ...] and each
  agent's Adam state; returns the final carry: logits, adam, active [n],
  iters (accepted steps), tries (1 + rejected steps).

  loss_and_grad(logits) -> (loss, gradient to *ascend* [n, ...]);
  kl_fn(logits) -> [n], compared with delta. Each iteration steps every
  still-active agent with its own Adam; the step is accepted if the loss
  and KLs are finite and any agent's KL <= delta, after which an agent
  whose KL >= delta stops stepping. A rejected step restores the last
  accepted logits (the Adam moments and counts of the rejected step stay,
  as in the official optimizers) and the next try uses learning_rate /
  backtrack_coeff^(tries - 1); a rejection at the `backtracks`-th try ends
  the loop, and so does the first step accepted after a backtrack,
  `max_off_iters` accepted steps, or no agent left active.
  """
  n = logits_b.shape[0]

  def cond(c):
    return ~c["done"]

  def body(c):
    logits, active = c["logits"], c["active"]
    loss, g = loss_and_grad(logits)
    upd, adam_new = jax.vmap(_ADAM.update)(g, c["adam"], logits)
    adam = _per_agent(active, adam_new, c["adam"])  # kept even if rejected
    lr = config.learning_rate / config.backtrack_coeff ** (c["tries"] - 1)
    mask = active.reshape((-1,) + (1,) * (logits.ndim - 1))
    # Ascent, in the logits' own dtype (see `joint_epoch`).
    new = (logits + jnp.where(mask, lr * upd, 0.0)).astype(logits.dtype)
    kl = kl_fn(new)
    finite = (
      jnp.isfinite(loss)
      & jnp.all(jnp.isfinite(new))
      & jnp.all(jnp.isfinite(kl))
    )
    accept = finite & jnp.any(kl <= delta)
    iters = c["iters"] + accept.astype(jnp.int32)
    active = jnp.where(accept, active & (kl < delta), active)
    done = (
      (~accept & (c["tries"] >= config.backtracks))
      | (accept & (c["tries"] > 1))
      | (iters >= config.max_off_iters)
      | ~jnp.any(active)
    )
    return {
      "logits": jnp.where(accept, new, logits),
      "adam": adam,
      "active": active,
      "iters": iters,
      "tries": c["tries"] + (~accept).astype(jnp.int32),
      "done": done,
    }

  c0 = {
    "logits": logits_b,
    "adam": adam,
    "active": jnp.ones((n,), bool),
    "iters": jnp.zeros((), jnp.int32),
    "tries": jnp.ones((), jnp.int32),
    "done": jnp.zeros((), bool),
  }
  return jax.lax.while_loop(cond, body, c0)


def official_epoch(grid, config: TRPEConfig, state: State, key):
  """The official epoch (`trust_region="official"`); (State, metrics).

  `official_loop` on the surrogate and `official_kl`, with Adam carried in
  and out of the epoch. The surrogate's entropies count s_0..s_{H-1} as
  the official distributions do; the KL counts all H + 1 states.
  """
  logits_b = state.logits
  cells, actions = sample(grid, logits_b, key, config)
  values = objective_values(grid.positions(cells[:, :-1]), config.objective)
  c = official_loop(
    lambda lg: jax.value_and_grad(surrogate)(
      lg, logits_b, cells, actions, values
    ),
    lambda lg: official_kl(logits_b, lg, cells),
    logits_b,
    state.adam,
    config,
    official_kl_threshold(config),
  )
  logits = c["logits"]
  metrics = {
    **_entropy_metrics(grid.positions(cells)),
    # The largest agent's per-state mean KL, as `joint_epoch` reports it,
    # and in the official units.
    "kl": jnp.max(mean_kl(logits_b, logits, cells)),
    "kl_official": jnp.max(official_kl(logits_b, logits, cells)),
    "off_iters": c["iters"],
    "backtracks": c["tries"] - 1,
    "loss": -jnp.mean(values),
  }
  return State(logits, c["adam"]), metrics


# ----------------------------------------------------------------------------
# Downstream: a sparse team reward, zero-shot and REINFORCE fine-tuning.
# ----------------------------------------------------------------------------


def team_success(cells, goal_mask):
  """1 if at some step every agent stands in a goal cell, per trajectory [N]."""
  inside = goal_mask[cells]  # [N, T+1, n]
  return jnp.any(jnp.all(inside, axis=-1), axis=-1).astype(jnp.float32)


def reinforce_epoch(grid, logits, key, goal_mask, trajectories, horizon, lr):
  """One REINFORCE step on the team success (mean baseline); (logits, success)."""
  cfg = TRPEConfig(trajectories=trajectories, horizon=horizon)
  cells, actions = sample(grid, logits, key, cfg)
  r = team_success(cells, goal_mask)
  adv = r - jnp.mean(r)

  def objective(lg):
    lp = jnp.sum(log_probs(lg, cells, actions), axis=(1, 2))  # [N]
    return jnp.mean(adv * lp)

  g = jax.grad(objective)(logits)
  return logits + lr * g, jnp.mean(r)
