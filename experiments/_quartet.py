"""Shared pieces of the Quartet experiment binaries (quartet_llm, quartet_scaling).

Not an experiment: both binaries train the same byte-level Llama under the same
methods, data and optimizer, so that code lives once, here.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import numpy as np
import optax

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


def model_config(config, method: str, model=None) -> models.LlamaConfig:
  """The Llama of `config` under `method`; `model` (sizes) overrides config.model."""
  if method not in METHODS:
    raise ValueError(f"unknown method {method!r}; one of {sorted(METHODS)}")
  linear, forward, backward = METHODS[method]
  m = config.model if model is None else model
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


def make_task(config, method: str, data: dict, model=None) -> train_lib.Task:
  model = models.Llama(model_config(config, method, model))
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


def make_optimizer(
  config, learning_rate: float | None = None, constant: bool = False
) -> optax.GradientTransformation:
  """AdamW with clipping; cosine to 10 % of the peak, or constant after warmup.

  The constant schedule lets one run be read at several token counts D (the
  scaling sweep); the cosine one is the paper's for a single budget.
  """
  o, steps = config.optim, config.train.num_steps
  lr = o.learning_rate if learning_rate is None else learning_rate
  warmup = max(1, int(o.warmup_fraction * steps))
  if constant:
    schedule = optax.warmup_constant_schedule(0.0, lr, warmup)
  else:
    schedule = optax.warmup_cosine_decay_schedule(
      0.0,
      lr,
      warmup_steps=warmup,
      decay_steps=max(2, steps),
      end_value=0.1 * lr,
    )
  return optax.chain(
    optax.clip_by_global_norm(o.grad_clip),
    optax.adamw(schedule, b1=o.b1, b2=o.b2, weight_decay=o.weight_decay),
  )
