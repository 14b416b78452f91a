"""Compact memory for continual logistic regression (Jung et al., NeurIPS 2025).

"How to Train Your Compact Memory" (arXiv 2511.09167): a K-prior whose memory
is fitted by PPCA-EM to the Hessian of the past data beats experience replay
at small memory (Split-ImageNet: 60 % vs 30 % at 0.3 % memory; batch 77.6 %).
CPU reproduction (spec section 2): four moons (the official notebook) and
class-incremental Split-digits (the Split-CIFAR script), memory per task
swept; accuracy over all classes after the last task. The methods are
`lib.continual.learner`. Per dataset three `lib.train.run_sweep`s of
full-batch Adam, each ONE vmapped program: replay and the random K-priors
(method x memory x seed; memories padded with weight-0 slots), the compact
memory (memory x seed; alone in running the PPCA-EM), batch (seeds). Task
boundaries happen inside the jitted step (`lax.cond`); checkpoints fall on
them. The compact memory's distance from the PPCA-EM fixed point at the last
boundary, before and after the EM, is measured in the evaluation.

Run: python -m experiments.compact_memory --config configs/compact_memory.py:quick \
  --workdir runs/compact_memory
"""

import functools
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

SEQUENTIAL = continual.METHODS  # the order of the sequential sweeps
COMPACT = continual.learner.COMPACT  # alone in running the PPCA-EM
NO_EM = continual.learner.REPLAY  # ends tasks as every other method
# Methods whose task boundary is their own, each in a sweep (and workdir) of
# its own: method -> (its static method id at the boundary, workdir name).
# They come last in SEQUENTIAL, so the sweeps' states concatenate in its order.
OWN_ENDING = {
  "random_kprior_weighted": (
    continual.learner.RANDOM_KPRIOR_WEIGHTED,
    "weighted",
  ),
  "compact": (COMPACT, "compact"),
}
METHODS = ("batch", *SEQUENTIAL)
DATASETS = ("moons", "digits", "file")
INITS = ("random", "top_beta")
# Four moons' model: "binary" (the notebook's: one sigmoid weight vector,
# theta [d, 1]) or "softmax" (ours until 2026-12-05: a 2-class softmax).
MOONS_MODELS = ("binary", "softmax")
STATS = ("mean", "lo", "hi")
WHEN = ("start", "end")  # the memory before and after the EM
GAP_KEYS = [f"{w}_{k}" for w in WHEN for k in continual.FixedPointGap._fields]
SPREAD = {"mean": np.mean, "min": np.min, "max": np.max}
# results key -> the baseline the compact memory is paired with
VERSUS = {
  "compact_minus_replay": "replay",
  "compact_minus_random": "random_kprior",
  "compact_minus_random_anchored": "random_kprior_anchored",
  "compact_minus_random_weighted": "random_kprior_weighted",
}


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.phased(config.train, "config.steps_per_task (per dataset)")
  _checks.names(config.datasets, DATASETS, "config.datasets")
  _checks.names(config.methods, METHODS, "config.methods")
  for key in ("seeds", "moons.seeds", "digits.classes_per_task"):
    _checks.integer(config[key], f"config.{key}")
  _checks.integer(config.data_seed, "config.data_seed", minimum=0)
  _checks.number(config.delta, "config.delta", above=0)
  if not set(SEQUENTIAL) & set(config.methods):
    raise errors.ConfigError(
      f"config.methods names no continual method {SEQUENTIAL}"
    )
  for key, steps in (
    ("steps_per_task", config.steps_per_task),
    ("moons.steps_per_task", config.moons.steps_per_task),
  ):
    _checks.integer(steps, f"config.{key}")
    _checks.multiple_of(steps, config.train.log_every, f"config.{key}")
  for key, low in (("em_iters", 0), ("moons.em_iters", 0), ("moons.n", 8)):
    _checks.integer(config[key], f"config.{key}", minimum=low)
  _checks.integer(config.moons.degree, "config.moons.degree")
  for key, bounds in (
    ("em_noise", dict(above=0)),
    ("em_jitter", dict(at_least=0)),
    ("softmax_eps", dict(above=0, below=0.5)),
    ("moons.noise", dict(at_least=0)),
  ):
    _checks.number(config[key], f"config.{key}", **bounds)
  for name in ("moons", "digits"):
    c = config[name]
    _checks.number(c.lr, f"config.{name}.lr", above=0)
    _checks.integer(c.loss_batch, f"config.{name}.loss_batch", minimum=0)
    _checks.integers(c.memory_sizes, f"config.{name}.memory_sizes")
    _checks.one_of(c.compact_init, INITS, f"config.{name}.compact_init")
    _checks.one_of(
      c.beta_clamp, continual.BETA_CLAMPS, f"config.{name}.beta_clamp"
    )
    _checks.one_of(c.em_style, continual.EM_STYLES, f"config.{name}.em_style")
  _checks.one_of(config.moons.model, MOONS_MODELS, "config.moons.model")
  _checks.integer(config.moons.batch_steps, "config.moons.batch_steps")
  _checks.number(config.moons.batch_lr, "config.moons.batch_lr", above=0)
  _checks.fraction(config.digits.test_fraction, "config.digits.test_fraction")
  if config.feature_file and "file" not in config.datasets:
    raise errors.ConfigError(
      f"config.feature_file={config.feature_file!r} is set but "
      f"config.datasets={tuple(config.datasets)} has no 'file', so it would "
      "not be read: add it, e.g. \"--config.datasets=('file',)\""
    )
  if "file" in config.datasets:
    if not config.feature_file:
      raise errors.ConfigError(
        'config.datasets holds "file" but config.feature_file is empty'
      )
    _checks.integers(config.file_memory_sizes, "config.file_memory_sizes")
    _checks.number(config.file_lr, "config.file_lr", above=0)
    _checks.fraction(config.file_test_fraction, "config.file_test_fraction")


def load_dataset(config, name: str):
  """(Tasks, settings) of one dataset, checked (a one-line error)."""
  d, m = config.digits, config.moons
  # The feature file (CLIP-like features) follows the Split-CIFAR script.
  spec = dict(init="random", steps=config.steps_per_task, seeds=config.seeds)
  spec.update(em_iters=config.em_iters, clamp=d.beta_clamp, style=d.em_style)
  spec.update(batch_size=d.loss_batch)  # the data term's divisor
  if name == "moons":
    tasks = continual.four_moons(
      n=m.n, noise=m.noise, degree=m.degree, seed=config.data_seed
    )
    spec.update(lr=m.lr, sizes=m.memory_sizes, init=m.compact_init)
    spec.update(steps=m.steps_per_task, em_iters=m.em_iters, clamp=m.beta_clamp)
    spec.update(seeds=m.seeds, batch_size=m.loss_batch)  # the demo's own
    spec.update(style=m.em_style)
    spec.update(batch_steps=m.batch_steps, batch_lr=m.batch_lr)  # joint model
    spec.update(classes=1 if m.model == "binary" else tasks.num_classes)
  elif name == "digits":
    split = dict(test_fraction=d.test_fraction, seed=config.data_seed)
    tasks = continual.split_digits(classes_per_task=d.classes_per_task, **split)
    spec.update(lr=d.lr, sizes=d.memory_sizes, init=d.compact_init)
  else:
    split = dict(test_fraction=config.file_test_fraction, seed=config.data_seed)
    tasks = continual.load_feature_file(config.feature_file, **split)
    spec.update(lr=config.file_lr, sizes=config.file_memory_sizes)
  what, key = name, f"config.{name}.memory_sizes"
  if name == "file":
    what, key = config.feature_file, "config.file_memory_sizes"
  continual.check_tasks(tasks, spec["sizes"], what, key)
  spec.setdefault("classes", tasks.num_classes)  # theta's columns
  return tasks, spec


def train_dataset(config, tasks, spec, workdir, name, keep_history=False):
  """((state, {eval: final}, diverged), batch sweep or None); the members
  [R] in the order method (as `SEQUENTIAL`) x memory x seed; any diverged.

  Step `step` trains task t = step // steps_per_task; at a task boundary each
  member ends the task (`continual.end_task`), its memory from the same
  class-balanced picks for every method of a seed.
  """
  sizes, steps = tuple(spec["sizes"]), spec["steps"]
  kmax = max(sizes)
  x, y, m = continual.pad_tasks(tasks)
  n_tasks, _, d = x.shape
  tx = optax.adam(spec["lr"])
  data = dict(x=x, y=y, m=m, sizes=np.asarray(sizes, np.int32))
  data["picks"] = continual.balanced_picks(
    tasks.y_train, sizes, spec["seeds"], config.train.seed
  )
  data["test"] = (np.asarray(tasks.x_test, float), np.int32(tasks.y_test))
  data["all"] = (x.reshape(-1, d), y.reshape(-1), m.reshape(-1))  # batch
  em = dict(iters=spec["em_iters"], noise=config.em_noise, clamp=spec["clamp"])
  em.update(style=spec["style"])
  em.update(eps=config.softmax_eps, jitter=config.em_jitter)
  em.update(top_beta=spec["init"] == "top_beta")
  task = lambda data, t: (data["x"][t], data["y"][t], data["m"][t])

  def init_one(key, setting):
    root = rng_lib.root_key(config.train.seed)
    key = rng_lib.stream(root, "theta", setting["seed"])
    theta = continual.init_theta(key, d, spec["classes"])
    learner = continual.init_learner(theta, tx, (n_tasks - 1) * kmax)
    hist = {}
    if keep_history:  # for the figure: theta after each task, memory in use
      hist = dict(theta=theta, memory=learner.memory, em_steps=jnp.zeros(()))
      hist = jax.tree.map(lambda a: jnp.zeros((n_tasks, *a.shape)), hist)
    return {"learner": learner, "hist": hist}

  def end_task(member, data, t, setting, method):
    size, hist = setting["memory"], member["hist"]
    picks = data["picks"][t, jnp.argmax(data["sizes"] == size), setting["seed"]]
    pick_w = (jnp.arange(kmax) < size).astype(jnp.float64)
    args = (*task(data, t), picks, pick_w, method, t * kmax)
    learner = continual.end_task(member["learner"], tx, *args, **em)
    if keep_history:
      now = dict(theta=learner.theta, memory=learner.memory)
      now.update(em_steps=learner.trace.em_steps)
      hist = jax.tree.map(lambda h, v: h.at[t].set(v), hist, now)
    return {"learner": learner, "hist": hist}

  def step_one(member, data, key, step, setting, ends):  # ends: see sweep
    t = step // steps
    end = lambda mb: end_task(mb, data, t - 1, setting, ends)
    new_task = (step > 0) & (step % steps == 0)
    member = jax.lax.cond(new_task, end, lambda mb: mb, member)
    args = (*task(data, t), setting["method"], config.delta, t == 0)
    args += (spec["batch_size"],)
    learner, loss, grad = continual.learner_step(member["learner"], tx, *args)
    metrics = dict(loss=loss, grad_norm=jnp.sqrt(jnp.sum(grad**2)))
    return {**member, "learner": learner}, {**metrics, "task": t.astype(float)}

  # The joint model: tasks x steps at the tasks' lr, unless the dataset sets
  # its own (four moons: the notebook's 20,001 Adam steps at 0.05).
  tx_batch = optax.adam(spec.get("batch_lr", spec["lr"]))

  def batch_step(learner, data, key, step, setting):
    args = (*data["all"], config.delta)
    learner, loss, grad = continual.batch_step(learner, tx_batch, *args)
    return learner, dict(loss=loss, grad_norm=jnp.sqrt(jnp.sum(grad**2)))

  def eval_one(member, data, setting, ends=None):
    """Test accuracy; a compact member's also its EM's fixed-point gap."""
    learner = member["learner"] if isinstance(member, dict) else member
    out = {"test_acc": continual.accuracy(learner.theta, *data["test"])}
    if ends != COMPACT:  # batch, or no EM
      return out
    scatter, rows = learner.trace.scatter, learner.trace.rows
    gap = jax.vmap(continual.fixed_point_gap, (None, 0, None))
    gap = gap(scatter, rows, config.em_noise)
    for name, v in zip(continual.FixedPointGap._fields, gap):
      out.update({f"{when}_{name}": v[i] for i, when in enumerate(WHEN)})
    return out

  # A checkpoint at every task boundary.
  train_config = train_lib.phase_config(
    config.train, n_tasks * steps, checkpoint_every=steps
  )
  common = dict(config=train_config, data=data, eval_one=eval_one, name=name)
  seeds = range(spec["seeds"])

  def sweep(methods, where):
    """(state, {eval: final}, diverged) of methods x memory x seed."""
    # How the sweep's task boundaries end (a static method id): the EM, the
    # weighted points, or the raw unit-weight points of the rest.
    ends = OWN_ENDING[methods[0]][0] if methods[0] in OWN_ENDING else NO_EM
    ids = [SEQUENTIAL.index(mt) for mt in methods]
    names = [f"{m}/m{k}/seed{s}" for m in methods for k in sizes for s in seeds]
    members = train_lib.sweep_grid(names, method=ids, memory=sizes, seed=seeds)
    step, ev = (functools.partial(f, ends=ends) for f in (step_one, eval_one))
    at = dict(common, workdir=os.path.join(workdir, where), eval_one=ev)
    res = train_lib.run_sweep(init_one, step, members, **at)
    evals = {k: np.asarray(v[-1]) for k, v in res.evals.items()}
    return jax.device_get(res.state), evals, res.diverged.any()

  parts = [([m for m in SEQUENTIAL if m not in OWN_ENDING], "sequential")]
  parts += [([m], where) for m, (_, where) in OWN_ENDING.items()]
  parts = [([mt for mt in ms if mt in config.methods], w) for ms, w in parts]
  states, evals, diverged = zip(*(sweep(*p) for p in parts if p[0]))
  state = jax.tree.map(lambda *a: np.concatenate(a), *states)
  keys = evals[-1]  # the compact memory's also hold the EM's fixed-point gap
  evals = {k: np.concatenate([e[k] for e in evals if k in e]) for k in keys}
  if "batch" not in config.methods:
    return (state, evals, any(diverged)), None
  seeds = train_lib.sweep_stack([f"batch/seed{s}" for s in seeds], seed=seeds)
  init = lambda key, setting: init_one(key, setting)["learner"]
  where = os.path.join(workdir, "batch")
  total = spec.get("batch_steps", n_tasks * steps)
  every = dict(checkpoint_every=min(steps, total))
  at = dict(common, config=train_lib.phase_config(config.train, total, **every))
  batch = train_lib.run_sweep(init, batch_step, seeds, workdir=where, **at)
  return (state, evals, any(diverged) or batch.diverged.any()), batch


def run_dataset(config, name, workdir, loaded) -> tuple[dict, dict]:
  tasks, spec = loaded
  sizes = tuple(spec["sizes"])
  d = tasks.x_train[0].shape[1]
  logging.info(
    "%s: %d tasks, %d training points, d=%d, %d classes",
    *(name, tasks.num_tasks, tasks.num_train, d, tasks.num_classes),
  )
  # The memory after the last task holds K per task for T - 1 tasks; we
  # report it relative to the data it summarises: K (T - 1) / N(tasks 1..T-1).
  seen = tasks.num_train - len(tasks.y_train[-1])
  pct = {f"m{k}": 100.0 * k * (tasks.num_tasks - 1) / seen for k in sizes}
  out = {"num_train": tasks.num_train, "memory_pct": pct}
  (state, evals, diverged), batch = train_dataset(
    config, tasks, spec, os.path.join(workdir, name), name, name == "moons"
  )
  methods = [mt for mt in SEQUENTIAL if mt in config.methods]
  # Host copies, shaped [method, size, seed, ...]: summaries are numpy only.
  shape = (len(methods), len(sizes), spec["seeds"])
  state = jax.tree.map(lambda a: a.reshape(shape + a.shape[1:]), state)
  acc = dict(zip(methods, evals["test_acc"].reshape(shape)))
  learner = state["learner"]
  out["finite"] = bool(not diverged and np.isfinite(learner.theta).all())
  if batch is not None:
    out["batch"] = stats.band(batch_acc := batch.final("test_acc"))
  for method, a in acc.items():
    out[method] = {f"m{k}": stats.band(a[j]) for j, k in enumerate(sizes)}

  def paired(a, b):  # per seed, [size, seed] arrays
    return {f"m{k}": stats.band(a[j] - b[j]) for j, k in enumerate(sizes)}

  if "compact" in acc:
    for key, other in VERSUS.items():
      if other in acc:
        out[key] = paired(acc["compact"], acc[other])
    if batch is not None:
      out["batch_minus_compact"] = paired(
        np.tile(batch_acc, (len(sizes), 1)), acc["compact"]
      )
  # The smallest memory, under fixed keys for the claims.
  k0 = f"m{min(sizes)}"
  out["smallest"] = {"size": min(sizes), "memory_pct": out["memory_pct"][k0]}
  for key in (*VERSUS, "batch_minus_compact"):
    if key in out:
      out["smallest"][key] = out[key][k0]
  if "compact" in acc:
    # The compact memories' distance from the EM fixed point at the last
    # task boundary, before and after the EM (`continual.fixed_point_gap`;
    # the largest principal angle in degrees), over seeds.
    gap = out["em_fixed_point"] = {f"m{k}": {} for k in sizes}
    for key in GAP_KEYS:
      v = evals[key].reshape(shape[1:])
      if key.endswith("max_angle"):
        key, v = f"{key}_deg", np.degrees(v)
      for j, k in enumerate(sizes):
        gap[f"m{k}"][key] = {q: float(f(v[j])) for q, f in SPREAD.items()}
  summary = {
    m: {k: round(v["mean"], 4) for k, v in out[m].items()} for m in acc
  }
  logging.info("%s accuracy (mean over seeds): %s", name, summary)
  if state["hist"] and "compact" in acc:
    # EM steps run at each task boundary (the notebook's early stop), seeds
    ran = state["hist"]["em_steps"][methods.index("compact")][..., :-1]
    out["em_steps"] = {
      f"m{k}": ran[j].astype(int).tolist() for j, k in enumerate(sizes)
    }
  if state["hist"]:
    state["hist"]["theta"][..., -1, :, :] = learner.theta
  return out, dict(tasks=tasks, sizes=sizes, methods=methods, state=state)


STYLES = dict(zip(SEQUENTIAL, zip(("red", "orange", "brown", "blue"), "osD^")))


def accuracy_figure(path, results) -> None:
  from experiments._plot import plt

  fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4))
  for ax, (name, r) in zip(np.atleast_1d(axes), results.items()):
    keys = list(r["memory_pct"])
    pct = [r["memory_pct"][k] for k in keys]
    for method, (color, marker) in STYLES.items():
      if method in r:
        band = {q: np.array([r[method][k][q] for k in keys]) for q in STATS}
        color = f"tab:{color}"
        ax.plot(pct, band["mean"], marker=marker, color=color, label=method)
        if np.all(np.isfinite(band["lo"])):
          ax.fill_between(pct, band["lo"], band["hi"], color=color, alpha=0.15)
    if "batch" in r:
      ax.axhline(r["batch"]["mean"], color="k", ls="--", label="batch")
    ax.set(xscale="log", title=name, xlabel="memory (% of training data)")
    ax.set_ylabel("accuracy, all classes, after last task")
    ax.legend(fontsize=8)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


def boundary_figure(path, traces) -> None:
  """Four-moons boundaries after each task (seed 0, smallest memory).

  Replay / random K-prior memory points are drawn where they are; a compact
  memory vector u (in feature space) is drawn at
  (u_x1 / u_1, u_x2 / u_1), its own 2-D reading through the constant and the
  linear features (ours; the paper's figure convention is not stated).
  """
  from experiments._plot import plt

  tasks, hist, sizes = traces["tasks"], traces["state"]["hist"], traces["sizes"]
  k0 = min(sizes)
  pts = np.concatenate(tasks.raw_train)
  lo, hi = pts.min(0) - 0.3, pts.max(0) + 0.3
  g1, g2 = np.meshgrid(
    np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 150)
  )
  degree = int(round(np.sqrt(2 * tasks.x_train[0].shape[1]))) - 1
  feats = continual.data.moons_features(
    np.stack([g1.ravel(), g2.ravel()], -1), degree=degree
  )
  rows, n_t = traces["methods"], tasks.num_tasks
  fig, axes = plt.subplots(
    len(rows), n_t, figsize=(3.2 * n_t, 2.8 * len(rows)), squeeze=False
  )
  for row, method in enumerate(rows):
    i = (row, sizes.index(k0), 0)  # seed 0
    for t, ax in enumerate(axes[row]):
      for p, y in zip(tasks.raw_train[: t + 1], tasks.y_train):
        ax.scatter(*p.T, c=y, s=3, cmap="coolwarm", alpha=0.3)
      z = continual.logits(hist["theta"][i][t], feats)  # binary or softmax
      score = np.asarray(z[:, 1] - z[:, 0])
      ax.contour(g1, g2, score.reshape(g1.shape), levels=[0.0], colors="k")
      if t > 0:  # the memory used while training task t
        u, w = (a[i][t - 1] for a in hist["memory"])
        xy = u[w > 0][:, 1:3] / u[w > 0][:, :1]  # raw points: u_1 = 1
        ax.scatter(*xy.T, marker="*", s=120, c="gold", edgecolors="k", zorder=3)
      ax.set(xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), xticks=[], yticks=[])
      if row == 0:
        ax.set_title(f"after task {t + 1}")
      if t == 0:
        ax.set_ylabel(f"{method} ({k0}/task)")
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=100)


def run(config, workdir) -> dict:
  check_config(config)
  # Every dataset (a user's file above all) is read and checked before the
  # workdir is written (a bad file must not leave a config.json behind) and
  # before any trains.
  loaded = {name: load_dataset(config, name) for name in config.datasets}
  train_lib.prepare_run(workdir, config)
  results, traces = {}, {}
  with jax.enable_x64(True):  # the official code runs in float64
    sweep = train_lib.Sweep(len(config.datasets), name="compact_memory")
    for name in config.datasets:
      with sweep.run(name):
        results[name], traces[name] = run_dataset(
          config, name, workdir, loaded[name]
        )
  train_lib.write_results(workdir, results)
  figure = os.path.join(workdir, "accuracy_vs_memory.png")
  train_lib.draw_figure(accuracy_figure, figure, results)
  if "moons" in traces:
    figure = os.path.join(workdir, "moons_boundaries.png")
    train_lib.draw_figure(boundary_figure, figure, traces["moons"])
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
