"""TRPE: multi-agent state-entropy pretraining, joint vs disjoint vs mixture.

Zamboni, Mutti, Restelli, "Towards Principled Unsupervised Multi-Agent
Reinforcement Learning" (NeurIPS 2025, arXiv 2502.08365): n agents pretrain
task-agnostic policies by maximising a state entropy; of the joint, disjoint
(per agent) and mixture (entropy of the mean of the agents' marginals)
objectives the mixture is argued to be the tractable, effective one, and
mixture-pretrained policies transfer best to sparse-reward tasks.

The CPU reproduction (spec: extended_papers.md section 6), on the official
Rooms (`config.task="rooms"`, `lib.rl.grid.rooms`): a 10 x 10 grid whose
door opens only while an agent stands by a switch, 2 agents starting in the
left room, tabular softmax policies over each agent's (door, cell) trained by
TRPE (`lib.rl.trpe`) for each objective, its seeds one `lib.train.run_sweep`
(one vmapped program; a member whose loss goes non-finite is frozen and makes
`finite` false). Then per objective: the finite-trial entropies and the
coverage (fraction of free cells either agent visits in one episode) of fresh
episodes, visitation heat maps, and the downstream task, the official goal
region (100 per agent and step on it): zero-shot score and MATRPO
fine-tuning (`lib.rl.matrpo`) from each pretrained policy and from the
uniform policy, at equal budgets (all sources and seeds one sweep). The
score of an episode is its return over the largest possible (100 x agents x
steps). `config.task="team_far_room"` is the earlier setup (the spec's
12 x 12 grid with an open door, success when both agents stand in the far
room at once, REINFORCE).

Run: python -m experiments.trpe --config configs/trpe.py:quick --workdir runs/trpe
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import rl
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import stats

TASKS = ("rooms", "team_far_room")
# The downstream score's name in results.json: "rooms" scores the return
# over the largest possible, "team_far_room" the team's success.
SCORE = {"rooms": "score", "team_far_room": "success"}


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.phased(config.train, "config.epochs and config.finetune.epochs")
  _checks.one_of(config.task, TASKS, "config.task")
  _checks.names(config.objectives, rl.trpe.OBJECTIVES, "config.objectives")
  _checks.integer(config.size, "config.size", minimum=4)
  _checks.integer(config.seeds, "config.seeds")
  _checks.integer(config.epochs, "config.epochs")
  _checks.multiple_of(config.epochs, config.train.log_every, "config.epochs")
  _checks.integer(config.finetune.epochs, "config.finetune.epochs")
  _checks.multiple_of(
    config.finetune.epochs, config.train.log_every, "config.finetune.epochs"
  )
  _checks.integer(
    config.eval_trajectories, "config.eval_trajectories", minimum=2
  )
  _checks.number(config.finetune.lr, "config.finetune.lr", above=0)
  _checks.integer(
    config.finetune.trajectories, "config.finetune.trajectories", minimum=2
  )
  _checks.number(config.learning_rate, "config.learning_rate", above=0)
  _checks.integer(config.finetune.horizon, "config.finetune.horizon")
  try:
    make_grid(config)
    trpe_config(config, config.objectives[0])
    if config.task == "rooms":
      matrpo_config(config)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"config: {e}") from None


def make_grid(config):
  """`rl.grid.SwitchRooms` ("rooms") or `rl.grid.Grid` ("team_far_room")."""
  starts = tuple(map(tuple, config.starts))
  if config.task == "rooms":
    return rl.grid.rooms(config.size, starts=starts)
  return rl.grid.two_rooms(config.size, starts=starts)


def matrpo_config(config) -> rl.matrpo.MATRPOConfig:
  f = config.finetune
  return rl.matrpo.MATRPOConfig(
    trajectories=f.trajectories,
    horizon=f.horizon,
    kl_threshold=f.kl_threshold,
    gamma=f.gamma,
    lambd=f.lambd,
    cg_iters=f.cg_iters,
    cg_damping=f.cg_damping,
    critic_lr=f.critic_lr,
    critic_batch=f.critic_batch,
    critic_iters=f.critic_iters,
  )


def max_return(config, grid) -> float:
  """The largest return of a fine-tuning episode: every agent on the goal
  at every step ("rooms"; the score's unit)."""
  return grid.goal_reward * grid.num_agents * config.finetune.horizon


def trpe_config(config, objective: str) -> rl.trpe.TRPEConfig:
  return rl.trpe.TRPEConfig(
    objective=objective,
    trajectories=config.trajectories,
    horizon=config.horizon,
    kl_threshold=(
      config.kl_threshold
      if config.trust_region == "official"
      else config.joint_kl_threshold
    ),
    max_off_iters=config.max_off_iters,
    learning_rate=config.learning_rate,
    trust_region=config.trust_region,
  )


def pretrain(config, grid, objective: str, workdir: str):
  """TRPE on one objective, its seeds one sweep: (logits [S, n, cells, 4],
  the number of seeds that diverged). The sweep's state is `rl.trpe.State`
  (logits and each agent's Adam state, which "official" carries across
  epochs and "joint" leaves untouched)."""
  tcfg = trpe_config(config, objective)
  seeds = config.seeds

  def step_one(logits, batch, key, step, setting):
    del batch, step
    key = jax.random.fold_in(rng.stream(key, "trpe"), setting["seed"])
    return rl.trpe.epoch(grid, tcfg, logits, key)

  result = train_lib.run_sweep(
    lambda key, setting: rl.trpe.init_state(grid),
    step_one,
    train_lib.sweep_stack(seed=range(seeds)),
    workdir=workdir,
    config=train_lib.phase_config(config.train, config.epochs),
    name=f"trpe/{objective}",
  )
  return np.asarray(result.state.logits), int(result.diverged.sum())


def finetune(config, grid, start_logits: dict, workdir: str):
  """Fine-tuning from each source's logits [S, ...], all sources and seeds
  one sweep: ({source: score per epoch [S, E]}, the number of members that
  diverged). "rooms": MATRPO, the score the epoch's mean return over
  `max_return`; "team_far_room": REINFORCE on the team task, the score its
  success.

  The state carries the score curve, so a resumed run returns all of it.
  """
  f = config.finetune
  seeds, sources = config.seeds, list(start_logits)
  starts = jnp.asarray(np.stack([start_logits[s] for s in sources]))
  names = [f"finetune_{s}/seed{r}" for s in sources for r in range(seeds)]
  settings = train_lib.sweep_grid(
    names, source=range(len(sources)), seed=range(seeds)
  )

  if config.task == "rooms":
    init_one, step_one = _matrpo_member(config, grid, starts)
  else:
    init_one, step_one = _reinforce_member(config, grid, starts)

  result = train_lib.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=workdir,
    config=train_lib.phase_config(config.train, f.epochs),
    name="trpe",
  )
  curves = np.asarray(result.state["curve"]).reshape(len(sources), seeds, -1)
  return dict(zip(sources, curves)), int(result.diverged.sum())


def _reinforce_member(config, grid, starts):
  """(init, step) of one "team_far_room" member: REINFORCE on the team task."""
  f = config.finetune
  goal = jnp.asarray(rl.grid.right_room(grid))

  def init_one(key, setting):
    del key
    return {
      "logits": starts[setting["source"], setting["seed"]],
      "curve": jnp.zeros((f.epochs,), jnp.float32),
    }

  def step_one(state, batch, key, step, setting):
    del batch
    key = jax.random.fold_in(rng.stream(key, "reinforce"), setting["seed"])
    new, success = rl.trpe.reinforce_epoch(
      grid, state["logits"], key, goal, f.trajectories, f.horizon, f.lr
    )
    curve = state["curve"].at[step].set(success)
    return {"logits": new, "curve": curve}, {
      "success": success,
      "loss": -success,
    }

  return init_one, step_one


def _matrpo_member(config, grid, starts):
  """(init, step) of one "rooms" member: MATRPO on the goal reward."""
  mcfg = matrpo_config(config)
  scale = 1.0 / max_return(config, grid)
  epochs = config.finetune.epochs

  def init_one(key, setting):
    del key
    logits = starts[setting["source"], setting["seed"]]
    return {
      "matrpo": rl.matrpo.init_state(logits, mcfg),
      "curve": jnp.zeros((epochs,), jnp.float32),
    }

  def step_one(state, batch, key, step, setting):
    del batch
    key = jax.random.fold_in(rng.stream(key, "matrpo"), setting["seed"])
    new, m = rl.matrpo.epoch(grid, mcfg, state["matrpo"], key)
    score = m["return"] * scale
    curve = state["curve"].at[step].set(score)
    return {"matrpo": new, "curve": curve}, {
      "score": score,
      "accepted": m["accepted"],
      "loss": -score,
    }

  return init_one, step_one


def evaluator(config, grid):
  """A jitted (logits [S, ...], key) -> per seed: entropies, coverage,
  zero-shot score; pooled visitation. One program for every source.

  Entropies and coverage are of `eval_trajectories` episodes of the
  pretraining horizon; the zero-shot score of as many episodes of the
  fine-tuning's ("rooms": their mean return over `max_return`; a key of their
  own, the "zero_shot" stream of the seed's) or of the same episodes ("team_far_room": the team
  success, its fine-tuning horizon being the pretraining's)."""
  free = jnp.asarray(grid.free_cells())
  tcfg = rl.trpe.TRPEConfig(
    trajectories=config.eval_trajectories, horizon=config.horizon
  )
  if config.task == "rooms":
    scale = 1.0 / max_return(config, grid)

    def zero_shot(lg, k, cells):
      del cells
      states, _ = rl.grid.rollouts(
        grid,
        lg,
        rng.stream(k, "zero_shot"),
        config.eval_trajectories,
        config.finetune.horizon,
      )
      r = grid.rewards(grid.positions(states[:, 1:]))  # [N, T]
      return jnp.mean(jnp.sum(r, axis=1)) * scale
  else:
    goal = jnp.asarray(rl.grid.right_room(grid))

    def zero_shot(lg, k, cells):
      del lg, k
      return jnp.mean(rl.trpe.team_success(cells, goal))

  def one(lg, k):
    states, _ = rl.trpe.sample(grid, lg, k, tcfg)  # [N, T+1, n]
    cells = grid.positions(states)
    ent = jax.vmap(rl.entropy.trajectory_entropies)(cells)
    visits = jax.vmap(
      lambda c: jnp.zeros(grid.num_cells).at[c.reshape(-1)].add(1.0)
    )(cells)  # [N, cells]
    coverage = jnp.sum((visits > 0) & free, axis=1) / jnp.sum(free)
    return {
      "joint_entropy": jnp.mean(ent["joint"]),
      "mixture_entropy": jnp.mean(ent["mixture"]),
      "agent_entropy": jnp.mean(ent["agents"]),
      "coverage": jnp.mean(coverage),
      "zero_shot": zero_shot(lg, k, cells),
      "visits": jnp.sum(visits, axis=0),
    }

  @jax.jit
  def evaluate(logits, key):
    seeds = jnp.arange(config.seeds)  # seed s's key: fold_in(key, s)
    keys = jax.vmap(lambda s: jax.random.fold_in(key, s))(seeds)
    return jax.vmap(one)(logits, keys)

  return lambda logits, key: {
    k: np.asarray(v) for k, v in evaluate(logits, key).items()
  }


def finetune_gain(curves) -> np.ndarray:
  """Per seed: the mean score of the last eighth of the fine-tuning epochs
  minus that of the first eighth (at least one epoch each); curves [S, E]."""
  curves = np.asarray(curves)
  k = max(1, curves.shape[-1] // 8)
  return curves[..., -k:].mean(-1) - curves[..., :k].mean(-1)


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  grid = make_grid(config)
  sources = ["uniform"] + list(config.objectives)
  sweep = train_lib.Sweep(len(config.objectives) + 1, name="trpe")
  logits = {"uniform": np.stack([rl.trpe.init(grid)] * config.seeds)}
  diverged = 0
  for objective in config.objectives:
    with sweep.run(f"pretrain {objective}"):
      logits[objective], d = pretrain(
        config, grid, objective, os.path.join(workdir, objective)
      )
      diverged += d
  eval_key = rng.stream(rng.root_key(config.train.seed), "evaluate")
  evaluate = evaluator(config, grid)
  ev = {name: evaluate(lg, eval_key) for name, lg in logits.items()}
  with sweep.run("fine-tune"):
    curves, diverged_ft = finetune(
      config, grid, logits, os.path.join(workdir, "finetune")
    )

  score = SCORE[config.task]
  results = {"sources": {}}
  for name in sources:
    e = ev[name]
    auc = curves[name].mean(axis=1)
    results["sources"][name] = {
      k: stats.band(e[k])
      for k in ("joint_entropy", "mixture_entropy", "agent_entropy", "coverage")
    }
    results["sources"][name][f"zero_shot_{score}"] = stats.band(e["zero_shot"])
    results["sources"][name][f"finetune_{score}_auc"] = stats.band(auc)
    results["sources"][name]["finetune_gain"] = stats.band(
      finetune_gain(curves[name])
    )
    results["sources"][name]["finetune_curve"] = (
      curves[name].mean(axis=0).tolist()
    )
  if {"mixture", "disjoint"} <= set(config.objectives):
    results["mixture_minus_disjoint_coverage"] = stats.band(
      ev["mixture"]["coverage"] - ev["disjoint"]["coverage"]
    )
  if "mixture" in config.objectives:
    # Mixture against each other source, paired by seed.
    others = [s for s in sources if s != "mixture"]
    auc = {s: curves[s].mean(axis=1) for s in sources}
    for key, by_source in (
      ("coverage", {s: ev[s]["coverage"] for s in sources}),
      ("finetune", auc),
      ("zero_shot", {s: ev[s]["zero_shot"] for s in sources}),
    ):
      results[f"mixture_vs_others_{key}"] = stats.against_each(
        by_source["mixture"], {s: by_source[s] for s in others}
      )
  # Whether fine-tuning learns at all: where no source's score moves, the
  # area under the curve is the zero-shot score under another name.
  results["finetune_largest_gain"] = float(
    max(results["sources"][s]["finetune_gain"]["mean"] for s in sources)
  )
  results["finite"] = bool(
    all(np.all(np.isfinite(lg)) for lg in logits.values())
    and diverged == diverged_ft == 0
  )
  results["setting"] = {
    "task": config.task,
    "size": config.size,
    "horizon": config.horizon,
    "epochs": config.epochs,
    "seeds": config.seeds,
    "free_cells": int(grid.free_cells().sum()),
  }
  for name in sources:
    r = results["sources"][name]
    logging.info(
      "%-9s coverage %.3f  mixture H %.3f  joint H %.3f  zero-shot %.3f  "
      "fine-tune AUC %.3f",
      name,
      r["coverage"]["mean"],
      r["mixture_entropy"]["mean"],
      r["joint_entropy"]["mean"],
      r[f"zero_shot_{score}"]["mean"],
      r[f"finetune_{score}_auc"]["mean"],
    )
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figures, workdir, config, grid, sources, ev, results)
  return results


def figures(workdir, config, grid, sources, ev, results) -> None:
  from experiments._plot import plt

  h, w = grid.shape
  walls = np.asarray(grid.walls)
  fig, axes = plt.subplots(1, len(sources), figsize=(3.2 * len(sources), 3.2))
  for ax, name in zip(np.atleast_1d(axes), sources):
    v = ev[name]["visits"].sum(0).reshape(h, w)
    v = np.where(walls, np.nan, v / max(v.sum(), 1))
    ax.imshow(v, cmap="viridis")
    ax.imshow(np.where(walls, 1.0, np.nan), cmap="gray_r", vmin=0, vmax=1)
    cov = results["sources"][name]["coverage"]["mean"]
    ax.set(title=f"{name} (coverage {cov:.2f})", xticks=[], yticks=[])
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "visitation.png"), dpi=120)

  fig, ax = plt.subplots(figsize=(5, 3.4))
  for name in sources:
    ax.plot(results["sources"][name]["finetune_curve"], label=name)
  if config.task == "rooms":
    labels = ("MATRPO epoch", "return / largest return", "downstream: the goal")
  else:
    labels = (
      "REINFORCE epoch",
      "team success",
      "downstream: both agents in the far room",
    )
  ax.set(xlabel=labels[0], ylabel=labels[1], title=labels[2])
  ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "finetune.png"), dpi=120)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
