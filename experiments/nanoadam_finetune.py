"""NanoAdam fine-tuning: pretrain on digits 0-4, fine-tune on 5-9.

Pretrains an MLP on digits 0-4 with Adam, then fine-tunes on 5-9 with full
Adam, NanoAdam (Adam on each layer's smallest-magnitude weights) and the
equal-density random and largest-magnitude masks, each method's (lr, seed)
grid as one `lib.train.run_sweep`. A seed fixes the minibatch order (paired
comparisons) and the random mask; a run whose loss was ever non-finite is
diverged (scored at chance, never selected); each method's lr is selected by
`config.finetune.lr_selection`, never on test accuracy: "validation" (the
final new-task error on `val_fraction` of the 5-9 training images, held out
of fine-tuning; the test sets are the same either way) or "train_loss" (the
final training loss on every 5-9 training image: the protocol until
2026-12-06). Reports new-task accuracy, forgetting, drift, paired differences
against every baseline, and Spearman(|w|, |g|).

Run: python -m experiments.nanoadam_finetune \
  --config configs/nanoadam_finetune.py:quick --workdir runs/nanoadam_finetune

References: Zhou, Jacobs, Gadhikar, Burkholz, "Pay Attention to Small
Weights", NeurIPS 2025.
"""

import functools
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import stats as stats_lib
from lib.data import digits
from lib.optim import nanoadam as nanoadam_lib

# Method name -> NanoAdam mask criterion (None: dense Adam).
METHODS = {
  "adam": None,
  "nanoadam": "smallest",
  "random": "random",
  "largest": "largest",
}
CHANCE = 0.2  # task-incremental accuracy of a guess among 5 classes
TASKS = {"a": range(5), "b": range(5, 10)}  # pretrain on a, fine-tune on b


HEADS = ("shared", "multi")


def finetune_data(config) -> dict:
  """The digits as tasks a (0-4) and b (5-9), `digits.class_tasks`; with
  `config.finetune.lr_selection` "validation", `val_fraction` of task b's
  training images move to "x_b_val", "y_b_val" (`digits.holdout`)."""
  data = digits.class_tasks(
    TASKS, test_fraction=config.data.test_fraction, seed=config.data.split_seed
  )
  c = config.finetune
  if c.lr_selection == "validation":
    kept, held = digits.holdout(
      np.arange(len(data["y_b_train"])),
      fraction=c.val_fraction,
      seed=config.data.split_seed,
    )
    for v in "xy":
      train = data[f"{v}_b_train"]
      data[f"{v}_b_train"], data[f"{v}_b_val"] = train[kept], train[held]
  return data


def _xent(model, params, x, y, task, head):
  """Cross-entropy of task `task`'s labels y: over all 10 logits (`head`
  "shared"), or over the task's own 5 ("multi", a head per task: the other
  task's logits get no gradient)."""
  logits = model.apply(params, x)
  if head == "multi":
    lo = TASKS[task][0]
    logits, y = logits[:, lo : lo + len(TASKS[task])], y - lo
  return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def _accuracy(model, params, d, task, lo, part="test"):  # The task's test set.
  x, y = d[f"x_{task}_{part}"], d[f"y_{task}_{part}"]
  return nanoadam_lib.task_accuracy(model.apply(params, x), y, lo)


def _batch(d, task, key, batch_size):  # From the task's training set.
  x, y = d[f"x_{task}_train"], d[f"y_{task}_train"]
  idx = jax.random.randint(key, (batch_size,), 0, x.shape[0])
  return {"x": x[idx], "y": y[idx]}


def pretrain(config, model, data, workdir):
  """Adam on task a: (params, task-a test accuracy)."""
  c = config.pretrain
  task = train_lib.Task(
    init_fn=lambda key: model.init(key, jnp.zeros((1, 64))),
    loss_fn=lambda p, b, key: (
      _xent(model, p, b["x"], b["y"], "a", config.head),
      {},
    ),
    batch_fn=lambda d, key, step: _batch(d, "a", key, c.batch_size),
    data=data,
    eval_fn=lambda p, d: {"acc_a": _accuracy(model, p, d, "a", 0)},
  )
  state, history = train_lib.fit(
    task,
    optax.adam(c.lr),
    workdir=os.path.join(workdir, "pretrain"),
    config=c.train,
    name="pretrain",
  )
  acc = [r["acc_a"] for r in history if "acc_a" in r][-1]
  return jax.device_get(state.params), float(acc)


def make_optimizer(method, lr, config, seed=0):
  """The optimizer of `method` at learning rate `lr` (may be traced)."""
  n = config.nanoadam
  train_lib.check_one_of(method, tuple(METHODS), "config.methods")
  if METHODS[method] is None:
    return optax.adam(lr)
  exclude = (lambda path, p: p.ndim == 1) if n.exclude_biases else None
  return nanoadam_lib.nanoadam(
    lr,
    density=n.density,
    mask_interval=n.mask_interval,
    final_density=n.final_density or None,
    density_interval=n.density_interval,
    total_steps=max(config.finetune.train.num_steps, 1),
    criterion=METHODS[method],
    moments_on_change=n.moments_on_change,
    exclude=exclude,
    seed=seed,
  )


def check_config(config) -> None:
  """Every method name and option, before data preparation (one-line errors)."""
  c = config.finetune
  errors.check(
    len(config.methods) > 0 and len(set(config.methods)) == len(config.methods),
    errors.ConfigError,
    f"config.methods={tuple(config.methods)!r} must be non-empty, no repeats",
  )
  for method in config.methods:
    make_optimizer(method, 1e-3, config)  # Bad names / NanoAdam options.
  train_lib.check_one_of(config.head, HEADS, "config.head")
  _checks.lr_selection(c, "config.finetune")
  lrs = tuple(c.lrs)
  errors.check(
    len(lrs) > 0
    and all(isinstance(v, int | float) and 0 < v < math.inf for v in lrs),
    errors.ConfigError,
    f"config.finetune.lrs={lrs!r} must be positive numbers",
  )
  errors.check(
    isinstance(c.seeds, int) and c.seeds >= 1,
    errors.ConfigError,
    f"config.finetune.seeds={c.seeds!r} must be an integer >= 1",
  )
  train_lib.sweep_grid(lr=lrs, seed=range(c.seeds))  # Repeated lrs.
  _checks.fraction(config.data.test_fraction, "config.data.test_fraction")
  _checks.number(config.pretrain.lr, "config.pretrain.lr", above=0)
  _checks.integers(config.model.hidden, "config.model.hidden")
  _checks.number(config.stable_margin, "config.stable_margin", at_least=0)
  _checks.fraction(config.interval_level, "config.interval_level")


@functools.cache
def evaluator(model, head):
  """Jitted (stacked params, data) -> final metrics per run: one program for
  every method's sweep (their params have the same shapes)."""

  def one(params, d):
    x, y = d["x_b_train"], d["y_b_train"]
    out = {
      "train_loss": _xent(model, params, x, y, "b", head),
      "new_acc": _accuracy(model, params, d, "b", 5),
      "old_acc": _accuracy(model, params, d, "a", 0),
      **nanoadam_lib.drift(params, d["params0"]),
    }
    if "x_b_val" in d:
      out["val_error"] = 1.0 - _accuracy(model, params, d, "b", 5, "val")
    return out

  return jax.jit(jax.vmap(one, in_axes=(0, None)))


def finetune_sweep(config, model, params0, data, method, workdir):
  """All (lr, seed) runs of one method: arrays of shape (lrs, seeds)."""
  c = config.finetune

  def tx_of(setting):  # The random mask differs per seed and config.seed.
    seed = setting["seed"] + c.seeds * config.seed
    return make_optimizer(method, setting["lr"], config, seed)

  def init_one(key, setting):
    del key
    # Opaque: XLA would otherwise constant-fold the initial top-k of the
    # closed-over params0 (a 16k-entry sort, ~5 s of compile per method).
    p0 = jax.lax.optimization_barrier(params0)
    return {"params": p0, "opt": tx_of(setting).init(p0)}

  def batch_fn(d, key, step):  # One minibatch per seed, shared by all lrs.
    del step

    def one(s):
      return _batch(d, "b", jax.random.fold_in(key, s), c.batch_size)

    return jax.vmap(one)(jnp.arange(c.seeds))

  def step_one(member, batch, key, step, setting):
    del key  # The batch holds this step's randomness.
    x, y = batch["x"][setting["seed"]], batch["y"][setting["seed"]]
    params = member["params"]
    xent = lambda q: _xent(model, q, x, y, "b", config.head)  # noqa: E731
    loss, g = jax.value_and_grad(xent)(params)
    opt = nanoadam_lib.with_step(member["opt"], step)  # Shared: see its doc.
    updates, opt = tx_of(setting).update(g, opt, params)
    new = {"params": optax.apply_updates(params, updates), "opt": opt}
    return new, {"loss": loss}

  result = train_lib.run_sweep(
    init_one,
    step_one,
    train_lib.sweep_grid(lr=tuple(c.lrs), seed=range(c.seeds)),  # lr-major
    workdir=os.path.join(workdir, "finetune", method),
    config=c.train,
    data=data,
    batch_fn=batch_fn,
    name=method,
    freeze_diverged=False,  # A diverged run trains on (scored at chance).
  )
  evaluate = evaluator(model, config.head)
  final = evaluate(result.state["params"], {**data, "params0": params0})
  shape = result.settings.shape
  out = {k: np.asarray(v, np.float64).reshape(shape) for k, v in final.items()}
  out["diverged"] = result.diverged | ~np.isfinite(out["train_loss"])
  for k in ("new_acc", "old_acc"):  # A diverged run counts as chance.
    out[k] = np.where(out["diverged"] | ~np.isfinite(out[k]), CHANCE, out[k])
  opt = jax.eval_shape(make_optimizer(method, 1e-3, config).init, params0)
  out["state_floats"] = nanoadam_lib.state_floats(opt)  # One run's.
  return out


def summarize_method(config, s, old_acc_pre) -> dict:
  lrs = np.asarray(config.finetune.lrs, np.float64)
  new, old = s["new_acc"].mean(1), s["old_acc"].mean(1)
  forget = old_acc_pre - old
  metric = _checks.LR_SELECTION[config.finetune.lr_selection]
  means, _ = stats_lib.mean_over_seeds(s[metric], diverged=s["diverged"])
  best = train_lib.select_best(means)
  seed = [  # The lr selected on each seed's own metric.
    train_lib.select_best(v_k, diverged=bad_k)
    for v_k, bad_k in zip(s[metric].T, s["diverged"].T)
  ]
  top = int(np.argmax(new))
  ok = np.flatnonzero(new >= new[top] - config.stable_margin)
  by_lr = {
    "train_loss": s["train_loss"].mean(1),
    "new_acc": new,
    "old_acc": old,
  }
  if "val_error" in s:
    by_lr["val_error"] = s["val_error"].mean(1)
  out = {
    "selected_lr": None if best is None else float(lrs[best]),
    "selected_index": best,
    "finite_fraction": 0.0 if best is None else 1.0,
    "num_diverged": int(s["diverged"].sum()),
    "diverged_by_lr": s["diverged"].sum(1).tolist(),
    "selected_lr_by_seed": [None if b is None else float(lrs[b]) for b in seed],
    # Test-selected numbers: optimistic, for the figure and context only.
    "max_new_acc_over_lrs": float(new[top]),
    "max_good_lr": float(lrs[ok.max()]),
    "mean_forgetting": float(forget.mean()),
    "state_floats": int(s["state_floats"]),
    **{f"{k}_by_lr": v.tolist() for k, v in by_lr.items()},
    "forgetting_by_lr": forget.tolist(),
  }
  if best is not None:
    at = dict(by_lr, forgetting=forget)
    at.update(drift=s["drift"].mean(1), frac_changed=s["frac_changed"].mean(1))
    out.update({k: float(v[best]) for k, v in at.items()})
    out["new_acc_by_seed"] = s["new_acc"][best].tolist()
    out["forgetting_by_seed"] = (old_acc_pre - s["old_acc"][best]).tolist()
  return out


def _against(summary, baselines, usable, compare) -> dict | None:
  """NanoAdam vs each present baseline (`compare`), by `against_every`;
  `usable(method)` is False for a method that diverged at every lr."""
  nano = summary.get("nanoadam")
  present = [b for b in baselines if b in summary]
  if nano is None or not present:
    return None
  if not usable(nano):  # NanoAdam diverged at every lr: the claim fails.
    return {"point": math.nan, "nanoadam_diverged": True}
  per = {
    b: {**compare(nano, summary[b]), "diverged": False}
    if usable(summary[b])
    else {"diverged": True}
    for b in present
  }
  return stats_lib.against_every(per)


def paired_vs(summary, baselines, key, sign, level) -> dict | None:
  """sign * (nano - baseline) on `key` per seed, at the selected lrs (sign -1:
  lower is better): mean and Student-t interval against every baseline."""

  def diff(nano, b):
    a, b = nano[f"{key}_by_seed"], b[f"{key}_by_seed"]
    return stats_lib.paired_difference(a, b, level, sign)

  usable = lambda m: m["selected_lr"] is not None  # noqa: E731
  return _against(summary, baselines, usable, diff)


def lr_ratio_vs(summary, baselines) -> dict | None:
  """NanoAdam's selected lr over each baseline's, per seed (log-paired)."""

  def ratio(nano, b):
    a, b = nano["selected_lr_by_seed"], b["selected_lr_by_seed"]
    return nanoadam_lib.lr_ratio(a, b)

  usable = lambda m: None not in m["selected_lr_by_seed"]  # noqa: E731
  return _against(summary, baselines, usable, ratio)


def correlations(model, params0, key, data, head) -> dict:
  """Spearman(|w|, |g|) at the start of fine-tuning (pretrained weights, task
  b) and at the start of training from scratch (init from `key`, task a)."""
  grad = jax.grad(_xent, argnums=1)

  def both(params0, key, d):  # One program.
    init = model.init(key, jnp.zeros((1, 64)))
    g_b = grad(model, params0, d["x_b_train"], d["y_b_train"], "b", head)
    g_a = grad(model, init, d["x_a_train"], d["y_a_train"], "a", head)
    return (params0, g_b), (init, g_a)

  start, scratch = jax.jit(both)(params0, key, data)
  return {
    "spearman_finetune_start": nanoadam_lib.weight_gradient_spearman(*start),
    "spearman_scratch_start": nanoadam_lib.weight_gradient_spearman(*scratch),
  }


def summarize(config, sweeps, old_acc_pre) -> dict:
  out = {m: summarize_method(config, s, old_acc_pre) for m, s in sweeps.items()}
  if "nanoadam" not in out:
    return out
  level = config.interval_level
  everyone = [m for m in ("adam", "random", "largest") if m in out]
  masks = [m for m in ("random", "largest") if m in out]
  comparisons = {
    "new_acc_vs_all": paired_vs(out, everyone, "new_acc", 1.0, level),
    "new_acc_vs_masks": paired_vs(out, masks, "new_acc", 1.0, level),
    # Baseline forgetting minus NanoAdam's: > 0 means NanoAdam forgets less.
    "forgetting_vs_all": paired_vs(out, everyone, "forgetting", -1.0, level),
    "lr_ratio_vs_all": lr_ratio_vs(out, everyone),
  }
  out.update({k: v for k, v in comparisons.items() if v is not None})
  if "adam" in out:
    a, nano = out["adam"], out["nanoadam"]
    # The paper's "at the same learning rate" reading (every lr of the grid,
    # including those where NanoAdam barely moves): context, not a claim.
    same = np.subtract(a["forgetting_by_lr"], nano["forgetting_by_lr"])
    out["adam_minus_nano_forgetting_mean_over_lrs"] = float(same.mean())
    out["nano_state_fraction_of_adam"] = (
      nano["state_floats"] / a["state_floats"]
    )
  return out


def _figure(path, config, summary, old_acc_pre):
  from experiments._plot import plt

  lrs = np.asarray(config.finetune.lrs)
  metric = _checks.LR_SELECTION[config.finetune.lr_selection]
  panels = {
    "new_acc": "new-task (5-9) test accuracy",
    "forgetting": f"forgetting on 0-4 (pre {old_acc_pre:.3f})",
    metric: {
      "train_loss": "final training loss on 5-9",
      "val_error": "validation error on 5-9",
    }[metric]
    + " (selects the lr: *)",
  }
  fig, axes = plt.subplots(1, 3, figsize=(14, 4))
  for ax, (k, label) in zip(axes, panels.items()):
    for method in config.methods:
      s, i = summary[method], summary[method]["selected_index"]
      (line,) = ax.plot(lrs, s[f"{k}_by_lr"], "o-", label=method)
      if i is not None:  # The selected lr.
        ax.plot(lrs[i], s[f"{k}_by_lr"][i], "*", ms=14, color=line.get_color())
    ax.set(xlabel="learning rate", ylabel=label, xscale="log")
    ax.set_yscale("log" if k == "train_loss" else "linear")
    ax.legend(fontsize=8)
  fig.suptitle(
    "Fine-tuning digits 0-4 -> 5-9, masked methods at density "
    f"{config.nanoadam.density:g} (mean of {config.finetune.seeds} seeds; "
    "diverged runs at chance)"
  )
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def run(config, workdir) -> dict:
  check_config(config)  # Bad methods or options fail before any write.
  train_lib.prepare_run(workdir, config)
  model = models.MLP(tuple(config.model.hidden), num_outputs=10)
  data = finetune_data(config)
  sweep = train_lib.Sweep(1 + len(config.methods), name="nanoadam_finetune")
  with sweep.run("pretrain"):
    params0, old_acc_pre = pretrain(config, model, data, workdir)
  logging.info("pretrained: task-A accuracy %.4f", old_acc_pre)

  sweeps = {}
  for method in config.methods:
    with sweep.run(f"finetune/{method}"):
      s = finetune_sweep(config, model, params0, data, method, workdir)
    sweeps[method] = s
    new, bad = np.round(s["new_acc"].mean(1), 4), s["diverged"].sum(1)
    logging.info(
      "%s: new-task acc by lr %s; diverged by lr %s", method, new, bad
    )
  summary = summarize(config, sweeps, old_acc_pre)
  scratch = rng.stream(rng.root_key(config.seed), "scratch")
  summary.update(correlations(model, params0, scratch, data, config.head))
  summary["old_acc_pretrained"] = old_acc_pre
  summary["lr_selection"] = _checks.LR_SELECTION[config.finetune.lr_selection]
  summary["split_sizes"] = {
    k[2:]: int(len(v)) for k, v in data.items() if k.startswith("y_")
  }
  if train_lib.is_main_process():
    path = os.path.join(workdir, "finetune.png")
    train_lib.draw_figure(_figure, path, config, summary, old_acc_pre)
  summary["figures"] = ["finetune.png"]
  return train_lib.write_results(workdir, summary)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
