"""NanoAdam fine-tuning: pretrain on digits 0-4, fine-tune on 5-9.

Pretrains an MLP (64-128-128-10) on classes 0-4 of scikit-learn's digits with
Adam (`lib.train.train`), then fine-tunes on classes 5-9 with full Adam,
NanoAdam (Adam on the per-layer smallest-magnitude weights), and the two
equal-density ablations (random mask, largest-magnitude mask), sweeping the
learning rate. Reports new-task (5-9) accuracy, old-task (0-4) accuracy and
forgetting (task-incremental: argmax within the task's classes), parameter
drift, and the Spearman correlation of |w| and |g| at the start of fine-tuning
vs at the start of training from scratch (the paper's motivating "star").

The fine-tuning sweep runs its own jitted scan, vmapped over (lr, seed), one
compile per method: `lib.train.train` runs one optimizer per call.

Run: python -m experiments.nanoadam_finetune \
  --config configs/nanoadam_finetune.py:quick --workdir runs/nanoadam_finetune

References: Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small
Weights", NeurIPS 2025.
"""

import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _cli
from lib import train as train_lib
from lib.core import rng
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.optim import nanoadam as nanoadam_lib


class MLP(nn.Module):
  hidden: tuple[int, ...]

  @nn.compact
  def __call__(self, x):
    for h in self.hidden:
      x = nn.relu(nn.Dense(h)(x))
    return nn.Dense(10)(x)


def digit_tasks(config) -> dict:
  images, labels = load_digits()
  x = images.reshape(len(images), -1) / 16.0
  train, test = split_indices(
    len(x), test_fraction=config.data.test_fraction, seed=config.data.split_seed
  )
  out = {}
  for name, classes in (("a", (0, 1, 2, 3, 4)), ("b", (5, 6, 7, 8, 9))):
    for part, idx in (("train", train), ("test", test)):
      sel = idx[np.isin(labels[idx], classes)]
      out[f"x_{name}_{part}"] = x[sel].astype(np.float32)
      out[f"y_{name}_{part}"] = labels[sel].astype(np.int32)
  return out


def _xent(model, params, x, y):
  logits = model.apply(params, x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def task_accuracy(model, params, x, y, lo):
  """Accuracy with argmax restricted to the task's five classes [lo, lo+5)."""
  logits = model.apply(params, x)[:, lo : lo + 5]
  return jnp.mean(jnp.argmax(logits, -1) + lo == y)


def _batch(x, y, key, batch_size):
  idx = jax.random.randint(key, (batch_size,), 0, x.shape[0])
  return x[idx], y[idx]


def pretrain(config, model, data, workdir):
  c = config.pretrain

  def init_fn(key):
    return model.init(key, jnp.zeros((1, 64)))

  def loss_fn(params, batch, key):
    del key
    return _xent(model, params, batch["x"], batch["y"]), {}

  def batch_fn(d, key, step):
    del step
    x, y = _batch(d["x_a_train"], d["y_a_train"], key, c.batch_size)
    return {"x": x, "y": y}

  def eval_fn(params, d):
    return {
      "acc_a": task_accuracy(model, params, d["x_a_test"], d["y_a_test"], 0)
    }

  task = train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)
  state, history = train_lib.fit(
    task,
    optax.adam(c.lr),
    workdir=os.path.join(workdir, "pretrain"),
    config=c.train,
    name="pretrain",
  )
  return jax.device_get(state.params), history[-1]


def make_optimizer(method, lr, config):
  n = config.nanoadam
  if method == "adam":
    return optax.adam(lr)
  criterion = {"nanoadam": "smallest", "random": "random", "largest": "largest"}
  if method not in criterion:
    raise ValueError(f"unknown method {method!r} in config.methods")
  exclude = (lambda path, p: p.ndim == 1) if n.exclude_biases else None
  return nanoadam_lib.nanoadam(
    lr,
    density=n.density,
    mask_interval=n.mask_interval,
    final_density=n.final_density or None,
    density_interval=n.density_interval,
    total_steps=config.finetune.num_steps,
    criterion=criterion[method],
    moments_on_change=n.moments_on_change,
    exclude=exclude,
    seed=config.seed,
  )


def finetune_sweep(config, model, params0, data, method):
  """All (lr, seed) runs of one method, vmapped: arrays of shape (lrs, seeds)."""
  c = config.finetune
  root = rng.stream(rng.root_key(config.seed), "finetune")

  def one(lr, seed, params0, data):
    xb, yb = data["x_b_train"], data["y_b_train"]
    tx = make_optimizer(method, lr, config)
    key = jax.random.fold_in(root, seed)

    def step(carry, t):
      p, s = carry
      x, y = _batch(xb, yb, jax.random.fold_in(key, t), c.batch_size)
      loss, g = jax.value_and_grad(lambda q: _xent(model, q, x, y))(p)
      u, s = tx.update(g, s, p)
      return (optax.apply_updates(p, u), s), loss

    (p, s), losses = jax.lax.scan(
      step, (params0, tx.init(params0)), jnp.arange(c.num_steps)
    )
    finite = jnp.all(jnp.isfinite(losses))
    diff = jax.tree.map(lambda a, b: a - b, p, params0)
    return {
      "new_acc": task_accuracy(model, p, data["x_b_test"], data["y_b_test"], 5),
      "old_acc": task_accuracy(model, p, data["x_a_test"], data["y_a_test"], 0),
      "drift": jnp.sqrt(sum(jnp.sum(d**2) for d in jax.tree.leaves(diff))),
      "frac_changed": sum(jnp.sum(d != 0) for d in jax.tree.leaves(diff))
      / sum(d.size for d in jax.tree.leaves(diff)),
      "final_loss": jnp.where(finite, jnp.mean(losses[-10:]), jnp.inf),
      "state_floats": sum(
        x.size
        for x in jax.tree.leaves(s)
        if jnp.issubdtype(x.dtype, jnp.floating)
      ),
    }

  lrs = jnp.asarray(c.lrs, jnp.float32)
  seeds = jnp.arange(c.seeds)
  fn = jax.vmap(
    jax.vmap(one, in_axes=(None, 0, None, None)), in_axes=(0, None, None, None)
  )
  # params0 and data are arguments, not closed-over constants: XLA would
  # otherwise constant-fold the initial top-k selection (slow).
  data = jax.tree.map(jnp.asarray, data)
  out = jax.device_get(jax.jit(fn)(lrs, seeds, params0, data))
  # A diverged run (non-finite loss) counts as chance accuracy on both tasks.
  bad = ~np.isfinite(out["final_loss"])
  for k in ("new_acc", "old_acc"):
    out[k] = np.where(bad | ~np.isfinite(out[k]), 0.2, out[k])
  return out


def _spearman(a, b):
  ra = np.argsort(np.argsort(a)).astype(np.float64)
  rb = np.argsort(np.argsort(b)).astype(np.float64)
  return float(np.corrcoef(ra, rb)[0, 1])


def weight_grad_correlation(model, params, x, y):
  """Spearman(|w|, |g|) over all weight matrices (biases excluded)."""
  g = jax.grad(lambda p: _xent(model, p, x, y))(params)
  pw = [np.abs(np.ravel(v)) for v in jax.tree.leaves(params) if v.ndim == 2]
  gw = [np.abs(np.ravel(v)) for v in jax.tree.leaves(g) if v.ndim == 2]
  return _spearman(np.concatenate(pw), np.concatenate(gw))


def summarize(config, sweeps, old_acc_pre) -> dict:
  lrs = np.asarray(config.finetune.lrs)
  out = {}
  for method, s in sweeps.items():
    new = s["new_acc"].mean(1)
    old = s["old_acc"].mean(1)
    forget = old_acc_pre - old
    best = int(np.argmax(new))
    ok = np.flatnonzero(new >= new[best] - config.stable_margin)
    out[method] = {
      "best_new_acc": float(new[best]),
      "best_lr": float(lrs[best]),
      "old_acc_at_best": float(old[best]),
      "forgetting_at_best": float(forget[best]),
      "drift_at_best": float(s["drift"].mean(1)[best]),
      "frac_changed_at_best": float(s["frac_changed"].mean(1)[best]),
      "max_good_lr": float(lrs[ok.max()]),
      "mean_forgetting": float(forget.mean()),
      "state_floats": int(np.asarray(s["state_floats"]).ravel()[0]),
      "new_acc_by_lr": [float(v) for v in new],
      "forgetting_by_lr": [float(v) for v in forget],
    }
  if "nanoadam" in out:
    nano = out["nanoadam"]
    for other in ("largest", "random", "adam"):
      if other in out:
        o = out[other]
        out[f"nano_minus_{other}_best_new_acc"] = (
          nano["best_new_acc"] - o["best_new_acc"]
        )
        out[f"{other}_minus_nano_forgetting_at_best"] = (
          o["forgetting_at_best"] - nano["forgetting_at_best"]
        )
    if "adam" in out:
      a = out["adam"]
      out["nano_best_lr_over_adam_best_lr"] = nano["best_lr"] / a["best_lr"]
      out["nano_max_good_lr_over_adam_best_lr"] = (
        nano["max_good_lr"] / a["best_lr"]
      )
      same = np.asarray(a["forgetting_by_lr"]) - np.asarray(
        nano["forgetting_by_lr"]
      )
      out["adam_minus_nano_forgetting_mean_over_lrs"] = float(same.mean())
      out["nano_state_fraction_of_adam"] = (
        nano["state_floats"] / a["state_floats"]
      )
  return out


def _figure(path, config, summary, old_acc_pre):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  lrs = np.asarray(config.finetune.lrs)
  fig, axes = plt.subplots(1, 2, figsize=(10, 4))
  for method in config.methods:
    s = summary[method]
    axes[0].semilogx(lrs, s["new_acc_by_lr"], "o-", label=method)
    axes[1].semilogx(lrs, s["forgetting_by_lr"], "o-", label=method)
  axes[0].set_ylabel("new-task (5-9) test accuracy")
  axes[1].set_ylabel(f"forgetting on 0-4 (pre {old_acc_pre:.3f})")
  for ax in axes:
    ax.set_xlabel("learning rate")
    ax.legend(fontsize=8)
  d = config.nanoadam.density
  fig.suptitle(
    f"Fine-tuning digits 0-4 -> 5-9, masked methods at density {d:g}"
  )
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def run(config, workdir) -> dict:
  train_lib.prepare_run(workdir, config)
  for method in config.methods:  # Bad optimizer settings fail before training.
    make_optimizer(method, 1e-3, config)
  model = MLP(tuple(config.model.hidden))
  data = digit_tasks(config)
  params0, pre = pretrain(config, model, data, workdir)
  old_acc_pre = float(pre["acc_a"])
  logging.info("pretrained: task-A accuracy %.4f", old_acc_pre)

  sweeps = {}
  writer = train_lib.MetricWriter(workdir)
  for i, method in enumerate(config.methods):
    sweeps[method] = finetune_sweep(config, model, params0, data, method)
    writer.write(
      i,
      {
        "method": method,
        "new_acc": sweeps[method]["new_acc"].mean(1),
        "old_acc": sweeps[method]["old_acc"].mean(1),
      },
    )
    logging.info(
      "%s new-task acc by lr: %s", method, sweeps[method]["new_acc"].mean(1)
    )
  summary = summarize(config, sweeps, old_acc_pre)
  init = model.init(
    rng.stream(rng.root_key(config.seed), "scratch"), jnp.zeros((1, 64))
  )
  summary["spearman_finetune_start"] = weight_grad_correlation(
    model, params0, data["x_b_train"], data["y_b_train"]
  )
  summary["spearman_scratch_start"] = weight_grad_correlation(
    model, init, data["x_a_train"], data["y_a_train"]
  )
  summary["old_acc_pretrained"] = old_acc_pre
  _figure(os.path.join(workdir, "finetune.png"), config, summary, old_acc_pre)
  summary["figures"] = ["finetune.png"]
  return train_lib.write_results(workdir, summary)


if __name__ == "__main__":
  _cli.main(run)
