"""Quartet (NeurIPS 2025): MXFP4 training of a tiny Llama vs a high-precision baseline.

Trains the same byte-level Llama with every method in `config.methods` (same
seed, data order and init) and reports validation losses and their gaps to the
baseline: the paper's Quartet gap is +0.08 nats at D/N 25 (C4, 30M-200M), with
the forward quantizer (QuEST) causing most of it (+0.066) and the SR backward
little (+0.015).

Run: python -m experiments.quartet_llm --config configs/quartet_llm.py:quick \
  --workdir runs/quartet_llm
"""

import os

import jax
from absl import logging

from experiments import _cli
from experiments import _quartet
from lib import models
from lib import train as train_lib


def loss_figure(path: str, histories: dict) -> None:
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(6, 4))
  for method, hist in histories.items():
    steps = [h["step"] for h in hist]
    ax.plot(steps, [h["loss"] for h in hist], label=method)
  ax.set_xlabel("step")
  ax.set_ylabel("train loss (nats / byte)")
  ax.set_title("Quartet MXFP4 vs high-precision training")
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def run(config, workdir) -> dict:
  """Trains every method; returns val losses, gaps to bf16 and the figure."""
  logging.info("devices: %s", jax.devices())
  data = _quartet.load_data(config)
  tx = _quartet.make_optimizer(config)
  val_loss, histories = {}, {}
  for method in config.methods:
    task = _quartet.make_task(config, method, data)
    _, history = train_lib.fit(
      task,
      tx,
      workdir=os.path.join(workdir, method),
      config=config.train,
      name=f"{method}: ",
    )
    histories[method] = history
    val_loss[method] = history[-1]["val_loss"]
    logging.info("%s: val loss %.4f", method, val_loss[method])
  figure = os.path.join(workdir, "loss_curves.png")
  loss_figure(figure, histories)
  tokens = config.train.num_steps * config.data.batch_size * config.data.seq_len
  n = models.non_embedding_params(_quartet.model_config(config, "bf16"))
  results = {
    "val_loss": val_loss,
    "min_train_loss": {
      m: min(r["loss"] for r in h) for m, h in histories.items()
    },
    "final_train_loss": {m: h[-1]["loss"] for m, h in histories.items()},
    "non_embedding_params": n,
    "tokens": tokens,
    "tokens_per_param": tokens / n,
    "figure": figure,
  }
  if "bf16" in val_loss:
    gap = {m: v - val_loss["bf16"] for m, v in val_loss.items() if m != "bf16"}
    results["gap"] = gap
    if "quest_fwd_only" in gap and "sr_bwd_only" in gap:
      # The paper: the forward quantizer causes most of Quartet's gap.
      results["fwd_minus_bwd_gap"] = gap["quest_fwd_only"] - gap["sr_bwd_only"]
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run)
