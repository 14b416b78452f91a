"""Quartet (NeurIPS 2025): MXFP4 training of a tiny Llama vs a high-precision baseline.

Trains the same byte-level Llama with every method in `config.methods` over
`config.seeds` seeds (vmapped: seed s of every method has the same init and
data order) and reports validation losses and their paired gaps to the bf16
baseline: mean over seeds of (method - bf16) with a Student-t interval
(`config.interval_level`). The paper's Quartet gap is +0.08 nats at D/N 25
(C4, 30M-200M), with the forward quantizer (QuEST) causing most of it
(+0.066) and the SR backward little (+0.015).

Run: python -m experiments.quartet_llm --config configs/quartet_llm.py:quick \
  --workdir runs/quartet_llm
"""

import os

import jax
import numpy as np
from absl import logging

from experiments import _cli
from experiments import _quartet
from lib import models
from lib import train as train_lib
from lib.core import errors


def loss_figure(path: str, histories: dict) -> None:
  """Train loss per method: mean over seeds, shaded min..max."""
  from experiments._plot import plt

  fig, ax = plt.subplots(figsize=(6, 4))
  for method, hist in histories.items():
    by_step = {}
    for h in (h for h in hist if "loss" in h):
      by_step.setdefault(h["step"], []).append(h["loss"])
    steps = sorted(by_step)
    v = np.array([by_step[s] for s in steps], np.float64)
    (line,) = ax.plot(steps, v.mean(1), label=method)
    ax.fill_between(
      steps, v.min(1), v.max(1), color=line.get_color(), alpha=0.2
    )
  ax.set_xlabel("step")
  ax.set_ylabel("train loss (nats / byte), mean over seeds")
  ax.set_title("Quartet MXFP4 vs high-precision training")
  ax.legend()
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def check_config(config) -> None:
  _quartet.check_config(config)
  _quartet.check_model(config)
  errors.check(
    "bf16" in config.methods,
    errors.ConfigError,
    f"config.methods {tuple(config.methods)} must include 'bf16' (the "
    "comparator of every gap)",
  )
  level = config.interval_level
  errors.check(
    isinstance(level, float) and 0.0 < level < 1.0,
    errors.ConfigError,
    f"config.interval_level={level!r} must be a float in (0, 1)",
  )


def run(config, workdir) -> dict:
  """Trains every method over every seed; returns val losses and paired gaps."""
  check_config(config)
  data = _quartet.load_data(config)  # a bad corpus: before the workdir
  train_lib.prepare_run(workdir, config)
  logging.info("devices: %s", jax.devices())
  methods = list(config.methods)
  sweep = train_lib.Sweep(len(methods), name="quartet_llm")
  val_loss, histories = {}, {}
  for method in methods:
    with sweep.run(f"{method} ({config.seeds} seeds)"):
      r = _quartet.train_method(
        config, method, data, workdir=os.path.join(workdir, method), name=method
      )
    histories[method] = r["history"]
    val_loss[method] = r["val_loss"][config.train.num_steps]
    logging.info("%s: val loss per seed %s", method, val_loss[method])
  figure = os.path.join(workdir, "loss_curves.png")
  train_lib.draw_figure(loss_figure, figure, histories)
  tokens = config.train.num_steps * config.data.batch_size * config.data.seq_len
  n = models.non_embedding_params(_quartet.model_config(config, "bf16"))

  def per_method(f):
    return {m: f(m) for m in methods}

  def last_train_loss(m):
    last = max(h["step"] for h in histories[m])
    rows = [h for h in histories[m] if h["step"] == last and "loss" in h]
    return float(np.mean([h["loss"] for h in rows])) if rows else float("nan")

  results = {
    "seeds": config.seeds,
    "val_loss": per_method(lambda m: float(np.mean(val_loss[m]))),
    "val_loss_per_seed": per_method(lambda m: val_loss[m].tolist()),
    "finite_fraction": per_method(
      lambda m: float(np.mean(np.isfinite(val_loss[m])))
    ),
    "final_train_loss": per_method(last_train_loss),
    "non_embedding_params": n,
    "tokens": tokens,
    "tokens_per_param": tokens / n,
    "figure": figure,
  }

  level = config.interval_level
  # Paired over seeds: method - bf16 per seed, mean with a t interval.
  results["gap"] = {
    m: _quartet.paired_interval(val_loss[m], val_loss["bf16"], level)
    for m in methods
    if m != "bf16"
  }
  if "quest_fwd_only" in methods and "sr_bwd_only" in methods:
    # The paper: the forward quantizer causes most of Quartet's gap. Per
    # seed, gap(fwd) - gap(bwd) = L(fwd) - L(bwd); bf16 must be finite too.
    ok = np.isfinite(val_loss["bf16"])
    fwd = np.where(ok, val_loss["quest_fwd_only"], np.nan)
    bwd = np.where(ok, val_loss["sr_bwd_only"], np.nan)
    results["fwd_minus_bwd_gap"] = _quartet.paired_interval(fwd, bwd, level)
  for m, g in results["gap"].items():
    logging.info(
      "gap %s - bf16: %+.4f [%+.4f, %+.4f] (%d seeds)",
      m,
      g["mean"],
      g["lo"],
      g["hi"],
      g["n"],
    )
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
