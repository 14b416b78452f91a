"""Adam is more resistant to simplicity bias than GD (Vasudeva et al., NeurIPS 2025).

Trains the two-layer ReLU network with fixed balanced outer weights on the Gaussian
clusters of Eq. (1) with full-batch GD, Adam (beta1 = beta2 = 0.9999) and signGD, then reads
off what the paper predicts: GD's boundary is the linear rule sign(x1); Adam's bends towards
the piecewise-linear Bayes boundary (slopes +-1/omega) and is more accurate. A second task,
patch-coloured digits, measures worst-group accuracy of SGD vs Adam under a spurious feature.

Run: python -m experiments.simplicity_bias --config configs/simplicity_bias.py:quick \
  --workdir runs/simplicity_bias
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
from lib import data as data_lib
from lib import optim as optim_lib
from lib import train as train_lib
from lib.core import rng
from lib.core import stats
from lib.models import two_layer

OPTIMIZERS = ("gd", "adam", "signgd")


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.names(config.optimizers, OPTIMIZERS, "config.optimizers")
  d, o = config.data, config.optim
  _checks.integer(d.n, "config.data.n")
  _checks.integer(d.n_test, "config.data.n_test")
  _checks.integer(d.d, "config.data.d", minimum=2)
  for key in ("mu", "omega", "sx", "sy"):
    _checks.number(d[key], f"config.data.{key}", above=0)
  _checks.number(d.sz, "config.data.sz", at_least=0)
  _checks.integer(config.model.m, "config.model.m", minimum=2)
  _checks.integer(config.gap_seeds, "config.gap_seeds")
  _checks.number(config.model.alpha, "config.model.alpha", above=0)
  for key in ("gd_lr", "adam_lr", "adam_eps"):
    _checks.number(o[key], f"config.optim.{key}", above=0)
  for key in ("adam_b1", "adam_b2"):
    _checks.number(o[key], f"config.optim.{key}", at_least=0, below=1)
  _checks.number(config.signgd_lr, "config.signgd_lr", above=0)
  _checks.number(config.boundary_x2, "config.boundary_x2")
  sc = config.spurious
  if sc.enabled:
    _checks.fraction(
      sc.train_correlation, "config.spurious.train_correlation", closed=True
    )
    _checks.fraction(sc.test_fraction, "config.spurious.test_fraction")
    _checks.number(sc.patch_value, "config.spurious.patch_value")
    _checks.integer(sc.width, "config.spurious.width", minimum=2)
    _checks.number(sc.alpha, "config.spurious.alpha", above=0)
    _checks.number(sc.sgd_lr, "config.spurious.sgd_lr", above=0)
    _checks.number(sc.adam_lr, "config.spurious.adam_lr", above=0)
    _checks.integer(sc.num_steps, "config.spurious.num_steps")
    _checks.integer(sc.seeds, "config.spurious.seeds")
    _checks.one_of(sc.vary_split, (True, False), "config.spurious.vary_split")


def make_optimizer(name: str, config) -> optax.GradientTransformation:
  _checks.one_of(name, OPTIMIZERS, "optimizer")
  o = config.optim
  if name == "gd":
    return optax.sgd(o.gd_lr)
  if name == "adam":
    return optax.adam(o.adam_lr, b1=o.adam_b1, b2=o.adam_b2, eps=o.adam_eps)
  return optim_lib.sign_gd(config.signgd_lr)


def cluster_data(config, seed: int | None = None) -> dict:
  """Train and test sets of Eq. (1), drawn from `seed` (the config's)."""
  d = config.data
  root = rng.root_key(config.train.seed if seed is None else seed)
  sample = functools.partial(
    data_lib.sample_gaussian_clusters,
    mu=d.mu,
    omega=d.omega,
    sx=d.sx,
    sy=d.sy,
    d=d.d,
    sz=d.sz,
  )

  @jax.jit  # one program (eagerly, each of its ~50 ops compiles alone)
  def draw(root):
    x, y = sample(rng.stream(root, "train_data"), d.n)
    x_test, y_test = sample(rng.stream(root, "test_data"), d.n_test)
    return {"x": x, "y": y, "x_test": x_test, "y_test": y_test}

  return draw(root)


def cluster_task(config, data) -> train_lib.Task:
  a = two_layer.outer_weights(config.model.m)

  def init_fn(key):
    return two_layer.init_two_layer(
      key, d=config.data.d, m=config.model.m, alpha=config.model.alpha
    )

  def loss_fn(params, batch, key):
    del key
    logits = two_layer.two_layer_relu(params["W"], a, batch["x"])
    return two_layer.logistic_loss(logits, batch["y"]), {
      "train_acc": jnp.mean(jnp.sign(logits) == batch["y"])
    }

  def batch_fn(data, key, step):
    del key, step
    return {"x": data["x"], "y": data["y"]}

  def eval_fn(params, data):
    pred = jnp.sign(two_layer.two_layer_relu(params["W"], a, data["x_test"]))
    return {
      "test_acc": jnp.mean(pred == data["y_test"]),
      "agree_sign_x1": jnp.mean(pred == jnp.sign(data["x_test"][:, 0])),
      "neuron_mass": two_layer.neuron_mass(params["W"]),
    }

  return train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)


def analytic_accuracies(config, data) -> dict:
  """Monte-Carlo accuracies of the fixed predictors on the test set (spec A.3)."""
  d = config.data
  x, y = data["x_test"], data["y_test"]

  @jax.jit
  def accuracies(x, y):
    bayes = data_lib.bayes_logodds(x, mu=d.mu, omega=d.omega, sy=d.sy)
    acc = lambda score: jnp.mean(jnp.sign(score) == y)
    return {
      "bayes": acc(bayes),
      "linear_sign_x1": acc(x[:, 0]),
      "signgd_rule": acc(3 * x[:, 0] + jnp.abs(x[:, 1])),
      "bayes_piecewise": acc(d.omega * x[:, 0] + jnp.abs(x[:, 1])),
    }

  return {k: float(v) for k, v in accuracies(x, y).items()}


def boundary_figure(path, config, data, weights: dict) -> None:
  from experiments._plot import plt

  d = config.data
  grid = jnp.linspace(-0.8, 0.8, 321)
  g1, g2 = jnp.meshgrid(grid, grid)
  pts = jnp.stack([g1.ravel(), g2.ravel()], -1)
  pts = jnp.pad(pts, ((0, 0), (0, d.d - 2)))
  a = two_layer.outer_weights(config.model.m)
  panels = {
    name.upper(): two_layer.two_layer_relu(W, a, pts)
    for name, W in weights.items()
  }
  panels["Bayes"] = data_lib.bayes_logodds(pts, mu=d.mu, omega=d.omega, sy=d.sy)
  x, y = np.asarray(data["x"][:1500]), np.asarray(data["y"][:1500])
  fig, axes = plt.subplots(
    1, len(panels), figsize=(4 * len(panels), 4), sharey=True
  )
  for ax, (title, score) in zip(axes, panels.items()):
    ax.scatter(x[:, 0], x[:, 1], c=y, s=3, cmap="coolwarm", alpha=0.5)
    ax.contour(
      g1, g2, np.asarray(score).reshape(g1.shape), levels=[0.0], colors="k"
    )
    ax.axvline(0.0, color="grey", lw=0.5, ls=":")
    ax.set_title(f"{title} decision boundary")
    ax.set_xlabel("x1")
  axes[0].set_ylabel("x2")
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


def run_clusters(config, workdir) -> tuple[dict, functools.partial]:
  """Trains each optimizer on the clusters; (results, the boundary figure).

  The figure comes back undrawn (`draw(path)`), to be drawn after
  results.json is written.
  """
  data = cluster_data(config)
  results = {"analytic": analytic_accuracies(config, data)}
  weights = {}
  a = two_layer.outer_weights(config.model.m)

  @jax.jit  # one program for every optimizer's weights
  def crossings(W):
    f = lambda p: two_layer.two_layer_relu(
      W, a, jnp.pad(p, ((0, 0), (0, config.data.d - 2)))
    )
    return (
      two_layer.boundary_crossing(f, config.boundary_x2),
      two_layer.boundary_crossing(f, -config.boundary_x2),
    )

  for name in config.optimizers:
    state, history = train_lib.fit(
      cluster_task(config, data),
      make_optimizer(name, config),
      workdir=os.path.join(workdir, name),
      config=config.train,
      name=name,
    )
    W = state.params["W"]
    weights[name] = W
    x1_pos, x1_neg = crossings(W)
    # num_steps=0 leaves one evaluation row of the initial model, no loss.
    final = history[-1] if history else {}
    nan = float("nan")
    results[name] = {
      "train_loss": final.get("loss", nan),
      "test_acc": final.get("test_acc", nan),
      "agree_sign_x1": final.get("agree_sign_x1", nan),
      "neuron_mass": final.get("neuron_mass", nan),
      "boundary_x1_pos": float(x1_pos),
      "boundary_x1_neg": float(x1_neg),
    }
    logging.info("%s: %s", name, results[name])
  if "gd" in results and "adam" in results:
    # This run's own gap; "acc_gap" is the mean over seeds (run_accuracy_gap).
    results["acc_gap_seed0"] = (
      results["adam"]["test_acc"] - results["gd"]["test_acc"]
    )
  draw = functools.partial(
    boundary_figure,
    config=config,
    data=data,
    weights={k: v for k, v in weights.items() if k in ("gd", "adam")},
  )
  return results, draw


def spurious_task(sc, data) -> train_lib.Task:
  d = data["x_train"].shape[
    -1
  ]  # features (the last axis, stacked per seed or not)
  a = two_layer.outer_weights(sc.width)

  def init_fn(key):
    return two_layer.init_two_layer(key, d=d, m=sc.width, alpha=sc.alpha)

  def loss_fn(params, batch, key):
    del key
    logits = two_layer.two_layer_relu(params["W"], a, batch["x"])
    return two_layer.logistic_loss(logits, batch["y"]), {}

  def batch_fn(data, key, step):
    del step
    idx = jax.random.randint(key, (sc.batch_size,), 0, data["x_train"].shape[0])
    return {"x": data["x_train"][idx], "y": data["y_train"][idx]}

  def eval_fn(params, data):
    correct = (
      jnp.sign(two_layer.two_layer_relu(params["W"], a, data["x_test"]))
      == data["y_test"]
    )
    groups = data["group_test"]
    per_group = jnp.stack(
      [
        jnp.sum(jnp.where(groups == g, correct, False))
        / jnp.maximum(jnp.sum(groups == g), 1)
        for g in range(4)
      ]
    )
    return {
      "test_acc": jnp.mean(correct),
      "worst_group_acc": jnp.min(per_group),
    }

  return train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)


def _seeds(task, tx, seeds, train_config, workdir, name):
  """`fit(task, tx)` at each of `seeds` on its own data set (task.data is
  stacked per seed), one program: member i is the run `fit` would do alone
  with train seed seeds[i] on data[i]."""
  return train_lib.fit_seeds(
    task,
    tx,
    seeds,
    per_seed_data=True,
    workdir=os.path.join(workdir, name),
    config=train_config,
    name=name,
    watch=(),
    freeze_diverged=False,
  )


def run_accuracy_gap(config, workdir) -> dict:
  """Adam minus GD test accuracy over `config.gap_seeds` seeds, paired.

  Seed i draws its own train and test sets (`cluster_data` at train seed
  config.train.seed + i) and its own init; seed 0 is the main run's. Before
  2026-12-07 the gap was the main run's alone, one seed and no band.
  """
  seeds = config.train.seed + np.arange(config.gap_seeds)
  draws = [cluster_data(config, int(s)) for s in seeds]
  task = cluster_task(config, jax.tree.map(lambda *v: jnp.stack(v), *draws))
  train_cfg = train_lib.phase_config(
    config.train,
    config.train.num_steps,
    checkpoint_every=config.train.num_steps,
    eval_every=0,
  )
  acc = {}
  for name in ("gd", "adam"):
    result = _seeds(
      task,
      make_optimizer(name, config),
      seeds,
      train_cfg,
      workdir,
      f"gap/{name}",
    )
    acc[name] = np.asarray(result.final("test_acc"), np.float64)
  gap = stats.paired_difference(acc["adam"], acc["gd"])
  return {
    "acc_gap": gap["point"],
    "acc_gap_lo": gap["lo"],
    "acc_gap_hi": gap["hi"],
    "acc_gap_by_seed": gap["by_seed"],
    "test_acc_by_seed": {k: v.tolist() for k, v in acc.items()},
  }


def spurious_data(config) -> dict:
  """Each seed's train/test split and patch colours, stacked on axis 0.

  Seed i draws its split with data seed config.train.seed + i: the worst
  group holds 17-32 test images, so the split, not the init, is most of
  the noise a band over seeds must hold. `spurious.vary_split=False`
  (one split for every seed, the reports' before 2026-12-07) keeps the
  config's split alone.
  """
  sc = config.spurious
  splits = [
    data_lib.make_patch_digits(
      train_correlation=sc.train_correlation,
      test_fraction=sc.test_fraction,
      patch_value=sc.patch_value,
      seed=config.train.seed + (i if sc.vary_split else 0),
    )
    for i in range(sc.seeds)
  ]
  return {k: np.stack([s[k] for s in splits]) for k in splits[0]}


def run_spurious(config, workdir) -> dict:
  sc = config.spurious
  data = spurious_data(config)
  opts = {"sgd": optax.sgd(sc.sgd_lr), "adam": optax.adam(sc.adam_lr)}
  train_cfg = train_lib.phase_config(
    config.train,
    sc.num_steps,
    log_every=min(sc.num_steps, 500),
    checkpoint_every=sc.num_steps,
    eval_every=0,
  )
  task = spurious_task(sc, data)
  seeds = config.train.seed + np.arange(sc.seeds)
  results, worst = {}, {}
  for name, tx in opts.items():
    result = _seeds(task, tx, seeds, train_cfg, workdir, f"spurious/{name}")
    loss = result.logged("loss")[1][-1]
    worst[name] = np.asarray(result.final("worst_group_acc"), np.float64)
    results[name] = {
      "loss": float(np.mean(loss)),
      "test_acc": float(np.mean(result.final("test_acc"))),
      "worst_group_acc": float(np.mean(worst[name])),
      "worst_group_acc_by_seed": worst[name].tolist(),
    }
  # Adam minus SGD, paired by seed (same split, init and batch order).
  gap = stats.paired_difference(worst["adam"], worst["sgd"])
  results["worst_group_gap"] = gap["point"]
  results["worst_group_gap_lo"] = gap["lo"]
  results["worst_group_gap_hi"] = gap["hi"]
  results["worst_group_gap_by_seed"] = gap["by_seed"]
  return results


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  results, boundaries = run_clusters(config, workdir)
  if "gd" in results and "adam" in results:
    results.update(run_accuracy_gap(config, workdir))
  if config.spurious.enabled:
    results["spurious"] = run_spurious(config, workdir)
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(boundaries, os.path.join(workdir, "boundaries.png"))
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
