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
import numpy as np
import optax
from absl import logging

from experiments import _cli
from lib import models
from lib import train as train_lib
from lib.data import text

# method -> (linear, forward, backward) of `models.LlamaConfig`. The baseline
# uses the same QuartetDense modules with quantization off, so every method
# starts from bitwise the same parameters and sees the same batches.
METHODS = {
  "bf16": ("quartet", "bf16", "bf16"),
  "quartet": ("quartet", "quest", "sr"),
  "quest_fwd_only": ("quartet", "quest", "bf16"),
  "sr_bwd_only": ("quartet", "bf16", "sr"),
  "rtn_bwd": ("quartet", "quest", "rtn"),
  "absmax_fwd": ("quartet", "absmax", "sr"),
  "absmax_rtn": ("quartet", "absmax", "rtn"),  # absmax RTN everywhere
}


def model_config(config, method: str) -> models.LlamaConfig:
  if method not in METHODS:
    raise ValueError(f"unknown method {method!r}; one of {sorted(METHODS)}")
  linear, forward, backward = METHODS[method]
  m = config.model
  return models.LlamaConfig(
    vocab_size=text.VOCAB_SIZE,
    d_model=m.d_model,
    n_layers=m.n_layers,
    n_heads=m.n_heads,
    mlp_hidden=m.mlp_hidden,
    max_len=config.data.seq_len,
    linear=linear,
    forward=forward,
    backward=backward,
    rerotate=config.rerotate,
    implementation=config.implementation or None,
  )


def load_data(config) -> dict:
  """Device-ready data: the train byte stream and fixed validation windows."""
  d = config.data
  tokens = text.load_corpus(d.path, d.max_bytes)
  train, val = text.train_val_split(tokens, d.val_fraction)
  return {
    "train": train,
    "val": text.eval_windows(val, d.seq_len, d.eval_windows),
  }


def make_task(config, method: str, data: dict) -> train_lib.Task:
  model = models.Llama(model_config(config, method))
  d = config.data

  def init_fn(key):
    return model.init(key, np.zeros((1, d.seq_len), np.int32))

  def loss_fn(params, batch, key):
    logits = model.apply(params, batch[:, :-1], rngs={"quant": key})
    return models.next_token_loss(logits, batch[:, 1:]), {}

  def batch_fn(data, key, step):
    del step
    return text.sample_windows(data["train"], key, d.batch_size, d.seq_len)

  def eval_fn(params, data):
    # Validation uses the model as trained: MXFP4 forward for quantized runs.
    logits = model.apply(params, data["val"][:, :-1])
    return {"val_loss": models.next_token_loss(logits, data["val"][:, 1:])}

  return train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)


def make_optimizer(config) -> optax.GradientTransformation:
  o, steps = config.optim, config.train.num_steps
  schedule = optax.warmup_cosine_decay_schedule(
    0.0,
    o.learning_rate,
    warmup_steps=max(1, int(o.warmup_fraction * steps)),
    decay_steps=max(2, steps),
    end_value=0.1 * o.learning_rate,
  )
  return optax.chain(
    optax.clip_by_global_norm(o.grad_clip),
    optax.adamw(schedule, b1=o.b1, b2=o.b2, weight_decay=o.weight_decay),
  )


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
  data = load_data(config)
  tx = make_optimizer(config)
  val_loss, histories = {}, {}
  for method in config.methods:
    task = make_task(config, method, data)
    _, history = train_lib.train(
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
  n = models.non_embedding_params(model_config(config, "bf16"))
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
