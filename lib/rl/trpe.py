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
   through the weights) for off-policy iterations while the mean
   KL(pi_b^i || pi^i) over the visited states stays <= delta for every agent
   (the agents step together: a step that would take any agent past delta
   is not taken and ends the epoch's iterations) or `max_off_iters` is
   reached; a non-finite step halves the learning rate (at most
   `backtracks` times).
4. pi_b <- pi.

Policies are decentralised: agent i's logits [S, 4] of its own cell.

Where the official `trpe` (src/algorithms/trpe.py, read 2026-12-05) does
otherwise (all of them choices of ours, not yet config modes):
- Its loop is meant to stop each agent on its own: after every iteration
  an agent whose KL is >= delta stops stepping, the others go on; a step is
  accepted while *any* agent's KL is <= delta, so an agent may end the
  epoch past delta. (Its optimizer loop zips the optimizers with a list of
  only the unfinished agents' flags, so once the first agent finishes it
  is the first agent's optimizer that keeps stepping.) Ours stops all
  agents jointly and rejects the step that would take any one past delta.
- Its KL is the sum over every sampled state (N x (H + 1)) of
  KL(pi_b || pi), divided by the 4 actions, not a mean over states: its
  delta of 6-15 with 10-30 trajectories of 50-500 steps is a per-state
  mean of 4 delta / (N (H + 1)), 2e-3 to 0.1 (scripts/tae/room.sh: 15,
  20 x 150 steps: 0.02).
- With backtracking (its default), a step rejected for KL or a non-finite
  value restores the last accepted policies, divides the learning rate by
  2^i and retries (at most 10 tries); the first step accepted after a
  backtrack ends the epoch. Ours halves the rate only on non-finite values.
- Its Adam optimizers are created once and keep their moments across
  epochs; ours start afresh every epoch.
- Its per-trajectory distributions count the H states s_0..s_{H-1}; ours
  also count s_H.
"""

import dataclasses

import jax
import jax.numpy as jnp
import optax

from lib.core import errors
from lib.rl import entropy as entropy_lib
from lib.rl import grid as grid_lib

OBJECTIVES = ("joint", "disjoint", "mixture")


@dataclasses.dataclass(frozen=True)
class TRPEConfig:
  objective: str = "mixture"
  trajectories: int = 16  # N per epoch
  horizon: int = 60  # H
  kl_threshold: float = 0.1  # delta
  max_off_iters: int = 20
  learning_rate: float = 0.1
  backtracks: int = 10

  def __post_init__(self):
    errors.check(
      self.objective in OBJECTIVES,
      errors.ConfigError,
      f"objective={self.objective!r} is not one of {OBJECTIVES}",
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
  return jnp.zeros((grid.num_agents, grid.num_cells, grid_lib.NUM_ACTIONS))


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
  keys = jax.random.split(key, config.trajectories)
  return jax.vmap(lambda k: grid_lib.rollout(grid, logits, k, config.horizon))(
    keys
  )


def epoch(grid, config: TRPEConfig, logits_b, key):
  """One TRPE epoch from behaviour logits [n, S, 4]; returns (logits, metrics).

  Adam starts afresh each epoch (its moments belong to one surrogate).
  """
  cells, actions = sample(grid, logits_b, key, config)
  values = objective_values(cells, config.objective)
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
  ent = jax.vmap(entropy_lib.trajectory_entropies)(cells)
  metrics = {
    "joint_entropy": jnp.mean(ent["joint"]),
    "mixture_entropy": jnp.mean(ent["mixture"]),
    "agent_entropy": jnp.mean(ent["agents"]),
    "kl": jnp.max(mean_kl(logits_b, logits, cells)),
    "off_iters": iters,
    "loss": -jnp.mean(values),
  }
  return logits, metrics


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
