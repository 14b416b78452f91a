"""Compact memory for continual logistic regression (Jung et al., NeurIPS 2025).

"How to Train Your Compact Memory" (Jung, Lee, Chen, Moellenhoff, Li, Lee,
Khan; NeurIPS 2025, arXiv 2511.09167): a K-prior whose memory is fitted by
PPCA-EM to the Hessian of the past data (Hessian matching) beats experience
replay at small memory (Split-ImageNet: 60 % vs 30 % at 0.3 % memory; 74 % at
2 %; batch 77.6 %). The CPU reproduction (spec section 2): four moons (poly-5
features, 4 tasks) and class-incremental Split-digits (5 tasks x 2 classes),
memory per task swept; methods batch (joint training), replay, K-prior with
random points (the official baseline, L2 towards 0, and ours, L2 towards the
previous task's weights) and compact memory; accuracy over all classes after
the last task against memory as % of the training data. Each dataset follows
its official script: four moons the notebook (top-beta EM start, only the
memory's beta clamped, 14 vectors per task among the sizes), Split-digits the
Split-CIFAR script (random EM start, p clamped for every row). At every task
boundary the compact memory's distance from the PPCA-EM fixed point (Hessian
matching) is measured, before and after the EM (`em_fixed_point`).

Each dataset is one `lib.train.train` run of full-batch Adam: every method,
memory size and seed is a run in one vmapped stack (memories of different
sizes padded with weight-0 slots, which contribute nothing). A task boundary
happens inside the jitted step (`lax.cond`): the memory update is a plain
PPCA-EM of `em_iters` iterations (`lib.continual.refine`), theta_old is set and
Adam restarts. Checkpoints fall on task boundaries; a rerun resumes bitwise.

Run: python -m experiments.compact_memory --config configs/compact_memory.py:quick \
  --workdir runs/compact_memory
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import continual
from lib import train as train_lib
from lib.core import errors
from lib.core import rng as rng_lib
from lib.core import stats

METHODS = (
  "batch",
  "replay",
  "random_kprior",
  "random_kprior_anchored",
  "compact",
)
# The sequential methods, in the order of the vmapped stack (compact last).
SEQUENTIAL = ("replay", "random_kprior", "random_kprior_anchored", "compact")
DATASETS = ("moons", "digits", "file")
INITS = ("random", "top_beta")


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.names(config.datasets, DATASETS, "config.datasets")
  _checks.names(config.methods, METHODS, "config.methods")
  _checks.integer(config.seeds, "config.seeds")
  _checks.integer(config.data_seed, "config.data_seed", minimum=0)
  _checks.number(config.delta, "config.delta", above=0)
  if not set(SEQUENTIAL) & set(config.methods):
    raise errors.ConfigError(
      f"config.methods names no continual method {SEQUENTIAL}"
    )
  _checks.integer(config.steps_per_task, "config.steps_per_task")
  _checks.multiple_of(
    config.steps_per_task, config.train.log_every, "config.steps_per_task"
  )
  _checks.integer(config.moons.steps_per_task, "config.moons.steps_per_task")
  _checks.multiple_of(
    config.moons.steps_per_task,
    config.train.log_every,
    "config.moons.steps_per_task",
  )
  _checks.integer(config.em_iters, "config.em_iters", minimum=0)
  _checks.number(config.em_noise, "config.em_noise", above=0)
  _checks.number(config.em_jitter, "config.em_jitter", at_least=0)
  _checks.number(config.softmax_eps, "config.softmax_eps", above=0, below=0.5)
  for name in ("moons", "digits"):
    c = config[name]
    _checks.number(c.lr, f"config.{name}.lr", above=0)
    _checks.integers(c.memory_sizes, f"config.{name}.memory_sizes")
    _checks.one_of(c.compact_init, INITS, f"config.{name}.compact_init")
    _checks.one_of(
      c.beta_clamp, continual.BETA_CLAMPS, f"config.{name}.beta_clamp"
    )
  _checks.integer(config.moons.n, "config.moons.n", minimum=8)
  _checks.integer(config.moons.em_iters, "config.moons.em_iters", minimum=0)
  _checks.integer(config.moons.degree, "config.moons.degree")
  _checks.number(config.moons.noise, "config.moons.noise", at_least=0)
  _checks.integer(
    config.digits.classes_per_task, "config.digits.classes_per_task"
  )
  _checks.fraction(config.digits.test_fraction, "config.digits.test_fraction")
  if "file" in config.datasets:
    if not config.feature_file:
      raise errors.ConfigError(
        'config.datasets holds "file" but config.feature_file is empty'
      )
    _checks.integers(config.file_memory_sizes, "config.file_memory_sizes")
    _checks.number(config.file_lr, "config.file_lr", above=0)
    _checks.fraction(config.file_test_fraction, "config.file_test_fraction")


def load_dataset(config, name: str):
  """(Tasks, settings) of one dataset: lr, memory sizes, compact init."""
  if name == "moons":
    m = config.moons
    tasks = continual.four_moons(
      n=m.n, noise=m.noise, degree=m.degree, seed=config.data_seed
    )
    return tasks, dict(
      lr=m.lr,
      sizes=m.memory_sizes,
      init=m.compact_init,
      steps=m.steps_per_task,
      em_iters=m.em_iters,
      clamp=m.beta_clamp,
    )
  if name == "digits":
    d = config.digits
    tasks = continual.split_digits(
      classes_per_task=d.classes_per_task,
      test_fraction=d.test_fraction,
      seed=config.data_seed,
    )
    return tasks, dict(
      lr=d.lr,
      sizes=d.memory_sizes,
      init=d.compact_init,
      steps=config.steps_per_task,
      em_iters=config.em_iters,
      clamp=d.beta_clamp,
    )
  tasks = continual.load_feature_file(
    config.feature_file,
    test_fraction=config.file_test_fraction,
    seed=config.data_seed,
  )
  return tasks, dict(
    lr=config.file_lr,
    sizes=config.file_memory_sizes,
    init="random",
    steps=config.steps_per_task,
    em_iters=config.em_iters,
    clamp=config.digits.beta_clamp,  # CLIP-like features: the CIFAR script's
  )


def _train_config(config, num_tasks: int, steps: int):
  # A checkpoint at every task boundary.
  return train_lib.phase_config(
    config.train, num_tasks * steps, checkpoint_every=steps
  )


def _init_theta(config, d: int, c: int):
  """Per-seed start [S, d, C], torch Linear's default U(-1/sqrt(d), 1/sqrt(d))."""
  root = rng_lib.root_key(config.train.seed)
  keys = jnp.stack(
    [rng_lib.stream(root, "theta", s) for s in range(config.seeds)]
  )
  bound = 1.0 / np.sqrt(d)
  return jax.vmap(
    lambda k: jax.random.uniform(
      k, (d, c), jnp.float64, minval=-bound, maxval=bound
    )
  )(keys)


def _pad_tasks(tasks):
  """Tasks as fixed shapes: x [T, Nmax, d], y [T, Nmax], valid mask [T, Nmax]."""
  nmax = max(len(y) for y in tasks.y_train)
  d = tasks.x_train[0].shape[1]
  t = tasks.num_tasks
  x = np.zeros((t, nmax, d))
  y = np.zeros((t, nmax), np.int32)
  m = np.zeros((t, nmax))
  for i, (xi, yi) in enumerate(zip(tasks.x_train, tasks.y_train)):
    x[i, : len(yi)], y[i, : len(yi)], m[i, : len(yi)] = xi, yi, 1.0
  return x, y, m


def _ce(theta, x, y, mask):
  """Masked sum of CE(y, softmax(x theta)) (padding rows have mask 0)."""
  logp = jax.nn.log_softmax(x @ theta, axis=-1)
  return -jnp.sum(mask * jnp.take_along_axis(logp, y[:, None], -1)[:, 0])


def _combos(config, methods, sizes):
  seq = [m for m in SEQUENTIAL if m in methods]
  return [(m, k, s) for m in seq for k in sizes for s in range(config.seeds)]


def train_dataset(
  config, tasks, spec, workdir, keep_history: bool = False
) -> dict:
  """All methods of one dataset in one `lib.train.train` run.

  The state stacks the sequential runs (method x memory size x seed) and the
  batch runs (seeds). Step `step` trains task t = step // steps_per_task; at
  a task boundary (inside the jitted step, `lax.cond`) the sequential runs
  rebuild their memory from the finished task (replay / random K-prior: the
  selected raw points; compact: PPCA-EM), set theta_old and restart Adam, as
  the official scripts do. The random K-prior's L2 term pulls towards 0 (the
  official baseline), the anchored one's towards theta_old. Memory slots are laid out per task, padded to the
  largest size with weight-0 slots, so shapes never change.
  """
  sizes = tuple(spec["sizes"])
  kmax = max(sizes)
  combos = _combos(config, config.methods, sizes)
  r = len(combos)
  n_compact = sum(m == "compact" for m, _, _ in combos)
  x_all, y_all, m_all = _pad_tasks(tasks)
  n_tasks, nmax, d = x_all.shape
  c = tasks.num_classes
  slots = max(n_tasks - 1, 1) * kmax
  steps = spec["steps"]
  delta = config.delta
  n_task = m_all.sum(1)  # [T]
  n_total = float(n_task.sum())
  seed_theta = _init_theta(config, d, c)
  method_id = np.array([SEQUENTIAL.index(m) for m, _, _ in combos], np.int32)
  top_beta = np.array(
    [m == "compact" and spec["init"] == "top_beta" for m, _, _ in combos]
  )
  # Host-side class-balanced random picks per (task, run), seeded per
  # (train seed, run seed, task, size): same points for every method.
  idx = np.zeros((max(n_tasks - 1, 1), r, kmax), np.int32)
  kmask = np.zeros((max(n_tasks - 1, 1), r, kmax))
  for t in range(n_tasks - 1):
    for i, (_, k, s) in enumerate(combos):
      rng = np.random.default_rng([config.train.seed, s, t, k])
      picked = continual.select_balanced(rng, tasks.y_train[t], k)
      idx[t, i, :k], kmask[t, i, :k] = picked, 1.0
  tx = optax.adam(spec["lr"])
  em_hp = (config.em_noise, config.softmax_eps, config.em_jitter)
  clamp = spec["clamp"]

  def init_fn(key):
    del key
    theta = jnp.stack([seed_theta[s] for _, _, s in combos]).reshape(r, d, c)
    zeros_mem = jnp.zeros((r, slots, d))
    hist = {}
    if keep_history:  # snapshots for the figures: theta, memory in use
      hist = {
        "theta_hist": jnp.zeros((n_tasks, r, d, c)),
        "mem_hist": jnp.zeros((max(n_tasks - 1, 1), r, slots, d)),
        "w_hist": jnp.zeros((max(n_tasks - 1, 1), r, slots)),
      }
    return {
      "theta": theta,
      "opt": tx.init(theta),
      "theta_old": jnp.zeros_like(theta),
      "mem_u": zeros_mem,
      "mem_w": jnp.zeros((r, slots)),
      "mem_y": jnp.zeros((r, slots), jnp.int32),
      "batch_theta": seed_theta,
      "batch_opt": tx.init(seed_theta),
      # At the latest task boundary, per compact run: the scatter X^T X of
      # the observed rows and the memory's tilde rows before and after the
      # EM (its distance from the fixed point is measured after training,
      # outside the step).
      "fp_scatter": jnp.zeros((n_compact, d, d)),
      "fp_cols": jnp.zeros((n_compact, 2, slots, d)),
      **hist,
    }

  def boundary(state, data, t_done):
    """After task t_done: new memory, theta_old, a fresh Adam."""
    x, y, m = data["x"][t_done], data["y"][t_done], data["m"][t_done]
    theta = state["theta"]
    sel = data["idx"][t_done]  # [R, kmax]
    mask = data["kmask"][t_done]  # [R, kmax]

    def top(theta_r, k_mask):
      b = jnp.where(m > 0, continual.beta(theta_r, x, 0.0), -jnp.inf)
      return jax.lax.top_k(b, kmax)[1], k_mask

    sel = jnp.where(
      data["top_beta"][:, None], jax.vmap(top)(theta, mask)[0], sel
    )
    init_u = x[sel]  # [R, kmax, d]
    start = t_done * kmax
    put = lambda a, v: jax.lax.dynamic_update_slice_in_dim(a, v, start, 1)
    raw_u = put(state["mem_u"], init_u)
    raw_w = put(state["mem_w"], mask)
    mem_y = put(state["mem_y"], y[sel])
    # Compact: EM over all slots (old + new; unfilled slots have weight 0 and
    # stay 0), observing the task's data (padding rows masked) + old memory.
    x_obs = x * m[:, None]

    def em(theta_r, u_old, w_old, u_all, w_all):
      noise, eps, jitter = em_hp
      obs = continual.observed_rows(
        theta_r, x_obs, continual.Memory(u_old, w_old), eps, clamp
      )
      new = continual.refine(
        theta_r,
        obs,
        continual.Memory(u_all, w_all),
        iters=spec["em_iters"],
        noise=noise,
        eps=eps,
        jitter=jitter,
        clamp=clamp,
      )

      def tilde(mem):  # rows sqrt(w beta(u)) u
        b = continual.memory_beta(theta_r, mem.u, eps, clamp)
        return jnp.sqrt(mem.w * b)[:, None] * mem.u

      cols = jnp.stack([tilde(continual.Memory(u_all, w_all)), tilde(new)])
      return new, (obs.T @ obs, cols)

    mem_u, mem_w = raw_u, raw_w
    fp = {"fp_scatter": state["fp_scatter"], "fp_cols": state["fp_cols"]}
    if n_compact:  # EM only on the compact runs (the last block of combos)
      c0 = r - n_compact
      (em_u, em_w), (scatter, cols) = jax.vmap(em)(
        theta[c0:],
        state["mem_u"][c0:],
        state["mem_w"][c0:],
        raw_u[c0:],
        raw_w[c0:],
      )
      mem_u = mem_u.at[c0:].set(em_u)
      mem_w = mem_w.at[c0:].set(em_w)
      fp = {"fp_scatter": scatter, "fp_cols": cols}
    hist = {}
    if keep_history:
      hist = {
        "theta_hist": state["theta_hist"].at[t_done].set(theta),
        "mem_hist": state["mem_hist"].at[t_done].set(mem_u),
        "w_hist": state["w_hist"].at[t_done].set(mem_w),
      }
    return {
      **state,
      "theta_old": theta,
      "opt": tx.init(theta),
      "mem_u": mem_u,
      "mem_w": mem_w,
      "mem_y": mem_y,
      **fp,
      **hist,
    }

  def seq_loss(theta, pr, x, y, m, n, first):
    ce = _ce(theta, x, y, m) / n
    # Replay (code): L2 on the first task only, then the replayed CE.
    logp = jax.nn.log_softmax(pr["mem_u"] @ theta, axis=-1)
    mem_ce = -jnp.take_along_axis(logp, pr["mem_y"][:, None], -1)[:, 0]
    replay = (
      jnp.where(first, 0.5 * delta * jnp.sum(theta**2), 0.0)
      + jnp.sum(pr["mem_w"] * mem_ce)
    ) / n
    # The official random-points baseline (id 1) pulls its L2 term to 0.
    center = jnp.where(pr["method"] == 1, 0.0, pr["theta_old"])
    kp = (
      continual.kprior(
        theta,
        pr["theta_old"],
        continual.Memory(pr["mem_u"], pr["mem_w"]),
        delta,
        center=center,
      )
      / n
    )
    return ce + jnp.where(pr["method"] == 0, replay, kp)

  def batch_loss(theta, data):
    ce = _ce(
      theta,
      data["x"].reshape(-1, d),
      data["y"].reshape(-1),
      data["m"].reshape(-1),
    )
    return (ce + 0.5 * delta * jnp.sum(theta**2)) / n_total

  def step_fn(state, data, key, step):
    del key
    t = step // steps
    state = jax.lax.cond(
      (step > 0) & (step % steps == 0),
      lambda s: boundary(s, data, t - 1),
      lambda s: s,
      state,
    )
    x, y, m = data["x"][t], data["y"][t], data["m"][t]
    n = data["n_task"][t]
    per_run = {
      "theta_old": state["theta_old"],
      "mem_u": state["mem_u"],
      "mem_w": state["mem_w"],
      "mem_y": state["mem_y"],
      "method": data["method"],
    }
    loss, grad = jax.vmap(
      jax.value_and_grad(lambda th, pr: seq_loss(th, pr, x, y, m, n, t == 0))
    )(state["theta"], per_run)
    updates, opt = tx.update(grad, state["opt"], state["theta"])
    theta = optax.apply_updates(state["theta"], updates)
    b_loss, b_grad = jax.vmap(jax.value_and_grad(batch_loss), (0, None))(
      state["batch_theta"], data
    )
    b_updates, b_opt = tx.update(
      b_grad, state["batch_opt"], state["batch_theta"]
    )
    state = {
      **state,
      "theta": theta,
      "opt": opt,
      "batch_theta": optax.apply_updates(state["batch_theta"], b_updates),
      "batch_opt": b_opt,
    }
    gn = lambda g: jnp.sqrt(jnp.sum(g**2, axis=(1, 2)))
    return state, {
      "loss": jnp.concatenate([loss, b_loss]),
      "grad_norm": jnp.concatenate([gn(grad), gn(b_grad)]),
      "task": jnp.broadcast_to(t, (r + config.seeds,)).astype(jnp.float64),
    }

  def eval_fn(state, data):
    acc = jax.vmap(continual.accuracy, in_axes=(0, None, None))
    return {
      "test_acc": jnp.concatenate(
        [
          acc(state["theta"], data["x_test"], data["y_test"]),
          acc(state["batch_theta"], data["x_test"], data["y_test"]),
        ]
      )
    }

  data = {
    "x": x_all,
    "y": y_all,
    "m": m_all,
    "n_task": n_task,
    "idx": idx,
    "kmask": kmask,
    "top_beta": top_beta,
    "method": method_id,
    "x_test": np.asarray(tasks.x_test, np.float64),
    "y_test": np.asarray(tasks.y_test, np.int32),
  }
  runs = [f"{m}/m{k}/seed{s}" for m, k, s in combos]
  runs += [f"batch/seed{s}" for s in range(config.seeds)]
  state, _ = train_lib.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=_train_config(config, n_tasks, steps),
    data=data,
    eval_fn=eval_fn,
    name=os.path.basename(workdir),
    runs=runs,
  )
  state = jax.tree.map(np.array, state)
  if keep_history:
    state["theta_hist"][-1] = state["theta"]
  acc = lambda th: np.asarray(
    jax.vmap(continual.accuracy, in_axes=(0, None, None))(
      jnp.asarray(th), jnp.asarray(tasks.x_test), jnp.asarray(tasks.y_test)
    )
  )
  return {
    "combos": combos,
    "acc": acc(state["theta"]) if r else np.zeros(0),
    "batch_acc": acc(state["batch_theta"]),
    "state": state,
    "idx": idx,
    "kmask": kmask,
    "fp_scatter": state["fp_scatter"],
    "fp_cols": state["fp_cols"],
    "finite": bool(np.all(np.isfinite(state["theta"])))
    and bool(np.all(np.isfinite(state["batch_theta"]))),
  }


def load_checked(config, name: str):
  """`load_dataset`, then what the run needs of its tasks (a one-line error)."""
  tasks, spec = load_dataset(config, name)
  file = name == "file"
  continual.check_tasks(
    tasks,
    spec["sizes"],
    config.feature_file if file else name,
    "config.file_memory_sizes" if file else f"config.{name}.memory_sizes",
  )
  return tasks, spec


def run_dataset(config, name, workdir, loaded=None) -> tuple[dict, dict]:
  tasks, spec = loaded or load_checked(config, name)
  sizes = tuple(spec["sizes"])
  logging.info(
    "%s: %d tasks, %d training points, d=%d, %d classes",
    name,
    tasks.num_tasks,
    tasks.num_train,
    tasks.x_train[0].shape[1],
    tasks.num_classes,
  )
  # The memory after the last task holds K per task for T - 1 tasks; we
  # report it relative to the data it summarises: K (T - 1) / N(tasks 1..T-1).
  seen = tasks.num_train - len(tasks.y_train[-1])
  out = {
    "num_train": tasks.num_train,
    "memory_pct": {
      f"m{k}": 100.0 * k * (tasks.num_tasks - 1) / seen for k in sizes
    },
  }
  res = train_dataset(
    config,
    tasks,
    spec,
    os.path.join(workdir, name),
    keep_history=name == "moons",
  )
  out["finite"] = res["finite"]
  if "batch" in config.methods:
    out["batch"] = stats.band(res["batch_acc"])
  per_method = {}
  for i, (m, k, s) in enumerate(res["combos"]):
    per_method.setdefault(m, {}).setdefault(k, {})[s] = float(res["acc"][i])
  for m, by_k in per_method.items():
    out[m] = {
      f"m{k}": stats.band([by_s[s] for s in sorted(by_s)])
      for k, by_s in by_k.items()
    }

  def paired(a, b):
    return {
      f"m{k}": stats.band(
        [per_method[a][k][s] - per_method[b][k][s] for s in range(config.seeds)]
      )
      for k in sizes
    }

  if "compact" in per_method:
    if "replay" in per_method:
      out["compact_minus_replay"] = paired("compact", "replay")
    if "random_kprior" in per_method:
      out["compact_minus_random"] = paired("compact", "random_kprior")
    if "random_kprior_anchored" in per_method:
      out["compact_minus_random_anchored"] = paired(
        "compact", "random_kprior_anchored"
      )
    if "batch" in out:
      out["batch_minus_compact"] = {
        f"m{k}": stats.band(
          [
            out["batch"]["seeds"][s] - per_method["compact"][k][s]
            for s in range(config.seeds)
          ]
        )
        for k in sizes
      }
  # The smallest memory, under fixed keys for the claims.
  k0 = f"m{min(sizes)}"
  out["smallest"] = {"size": min(sizes), "memory_pct": out["memory_pct"][k0]}
  for key in (
    "compact_minus_replay",
    "compact_minus_random",
    "compact_minus_random_anchored",
    "batch_minus_compact",
  ):
    if key in out:
      out["smallest"][key] = out[key][k0]
  if "compact" in per_method and tasks.num_tasks > 1:
    out["em_fixed_point"] = _fixed_point_summary(res, sizes, config.em_noise)
  summary = {
    m: {k: round(v["mean"], 4) for k, v in out[m].items()} for m in per_method
  }
  logging.info("%s accuracy (mean over seeds): %s", name, summary)
  return out, {"tasks": tasks, "sizes": sizes, **res}


def _fixed_point_summary(res, sizes, noise) -> dict:
  """The compact memories' distance from the EM fixed point, per size.

  At the last task boundary (the memory the last task trains with), before
  and after the EM: largest principal angle (degrees) to the top-K scatter
  eigenvectors, scale trace(W^T W) / trace(Lambda_K - sigma^2)_+ and the
  relative Frobenius error (`lib.continual.fixed_point_gap`); mean, min and
  max over seeds.
  """
  measure = jax.jit(
    jax.vmap(jax.vmap(continual.fixed_point_gap, (None, 0, None)), (0, 0, None))
  )
  # [compact runs, (start, end), (angle, scale, rel_error)]
  gap = np.stack(measure(res["fp_scatter"], res["fp_cols"], noise), -1)
  compact = [(k, s) for m, k, s in res["combos"] if m == "compact"]
  out = {}
  for k in sizes:
    rows = np.stack([gap[i] for i, (kk, _) in enumerate(compact) if kk == k])
    entry = {}
    for j, when in enumerate(("start", "end")):
      angle = np.degrees(rows[:, j, 0])
      for name, v in (
        ("max_angle_deg", angle),
        ("scale", rows[:, j, 1]),
        ("rel_error", rows[:, j, 2]),
      ):
        entry[f"{when}_{name}"] = {
          "mean": float(np.mean(v)),
          "min": float(np.min(v)),
          "max": float(np.max(v)),
        }
    out[f"m{k}"] = entry
  return out


def accuracy_figure(path, results) -> None:
  from experiments._plot import plt

  names = list(results)
  fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4))
  axes = np.atleast_1d(axes)
  styles = {
    "replay": ("tab:red", "o"),
    "random_kprior": ("tab:orange", "s"),
    "random_kprior_anchored": ("tab:brown", "D"),
    "compact": ("tab:blue", "^"),
  }
  for ax, name in zip(axes, names):
    r = results[name]
    keys = list(r["memory_pct"])
    pct = [r["memory_pct"][k] for k in keys]
    for method, (color, marker) in styles.items():
      if method not in r:
        continue
      mean = np.array([r[method][k]["mean"] for k in keys])
      lo = np.array([r[method][k]["lo"] for k in keys])
      hi = np.array([r[method][k]["hi"] for k in keys])
      ax.plot(pct, mean, marker=marker, color=color, label=method)
      if np.all(np.isfinite(lo)):
        ax.fill_between(pct, lo, hi, color=color, alpha=0.15)
    if "batch" in r:
      ax.axhline(r["batch"]["mean"], color="k", ls="--", label="batch")
    ax.set_xscale("log")
    ax.set_xlabel("memory (% of training data)")
    ax.set_ylabel("accuracy, all classes, after last task")
    ax.set_title(name)
    ax.legend(fontsize=8)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


def boundary_figure(path, traces) -> None:
  """Four-moons boundaries after each task (seed 0, smallest memory).

  Replay / random K-prior memory points are drawn where they are; a compact
  memory vector u (unit norm in feature space) is drawn at
  (u_x1 / u_1, u_x2 / u_1), its own 2-D reading through the constant and the
  linear features (ours; the paper's figure convention is not stated).
  """
  from experiments._plot import plt

  tasks, k0 = traces["tasks"], min(traces["sizes"])
  combos, st = traces["combos"], traces["state"]
  rows = [
    (m, combos.index((m, k0, 0))) for m in SEQUENTIAL if (m, k0, 0) in combos
  ]
  pts = np.concatenate(tasks.raw_train)
  lo, hi = pts.min(0) - 0.3, pts.max(0) + 0.3
  g1, g2 = np.meshgrid(
    np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 150)
  )
  grid = np.stack([g1.ravel(), g2.ravel()], -1)
  degree = int(round(np.sqrt(2 * tasks.x_train[0].shape[1]))) - 1
  feats = continual.data.moons_features(grid, degree=degree)
  n_t = tasks.num_tasks
  fig, axes = plt.subplots(
    len(rows), n_t, figsize=(3.2 * n_t, 2.8 * len(rows)), squeeze=False
  )
  for row, (method, i) in enumerate(rows):
    for t in range(n_t):
      ax = axes[row, t]
      for s in range(t + 1):
        p = tasks.raw_train[s]
        ax.scatter(
          p[:, 0], p[:, 1], c=tasks.y_train[s], s=3, cmap="coolwarm", alpha=0.3
        )
      score = feats @ st["theta_hist"][t][i]
      ax.contour(
        g1,
        g2,
        (score[:, 1] - score[:, 0]).reshape(g1.shape),
        levels=[0.0],
        colors="k",
      )
      if t > 0:  # the memory used while training task t
        if method == "compact":
          u, w = st["mem_hist"][t - 1][i], st["w_hist"][t - 1][i]
          u = u[w > 0]
          xy = u[:, 1:3] / u[:, :1]
        else:
          xy = np.concatenate(
            [
              tasks.raw_train[j][traces["idx"][j, i][traces["kmask"][j, i] > 0]]
              for j in range(t)
            ]
          )
        ax.scatter(
          xy[:, 0],
          xy[:, 1],
          marker="*",
          s=120,
          c="gold",
          edgecolors="k",
          zorder=3,
        )
      ax.set_xlim(lo[0], hi[0])
      ax.set_ylim(lo[1], hi[1])
      ax.set_xticks([])
      ax.set_yticks([])
      if row == 0:
        ax.set_title(f"after task {t + 1}")
      if t == 0:
        ax.set_ylabel(f"{method} ({k0}/task)")
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=100)


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  results = {}
  traces = {}
  # Every dataset (a user's file above all) is checked before any trains.
  loaded = {name: load_checked(config, name) for name in config.datasets}
  with jax.enable_x64(True):  # the official code runs in float64
    sweep = train_lib.Sweep(len(config.datasets), name="compact_memory")
    for name in config.datasets:
      with sweep.run(name):
        results[name], traces[name] = run_dataset(
          config, name, workdir, loaded[name]
        )
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(
    accuracy_figure, os.path.join(workdir, "accuracy_vs_memory.png"), results
  )
  if "moons" in traces:
    train_lib.draw_figure(
      boundary_figure,
      os.path.join(workdir, "moons_boundaries.png"),
      traces["moons"],
    )
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
