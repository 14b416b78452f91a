"""Shared pieces of the Quartet experiment binaries (quartet_llm, quartet_scaling).

Not an experiment: both binaries train the same byte-level Llama under the same
methods, data and optimizer, so that code lives once, here.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib import models
from lib import optim as optim_lib
from lib import train as train_lib
from lib.core import errors
from lib.core import rng
from lib.core import stats as stats_lib
from lib.data import text
from pallas_kernels.mxfp4 import ops

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


IMPLEMENTATIONS = tuple("" if i is None else i for i in ops.IMPLEMENTATIONS)
# config.optim.schedule: the official OneCycleLR, or ours (linear warmup from 0).
SCHEDULES = ("one_cycle", "linear_warmup")
# config.optim.weight_decay_mask: the official groups (block linears), or all.
DECAY_MASKS = ("linear", "all")


def check_config(config) -> None:
  """Validates what both binaries share, before any data or training.

  Raises:
    ConfigError: one line naming the key and the known values.
  """
  methods = tuple(config.methods)
  errors.check(len(methods) > 0, errors.ConfigError, "config.methods is empty")
  for m in methods:
    train_lib.check_one_of(m, METHODS, "config.methods")
  errors.check(
    len(set(methods)) == len(methods),
    errors.ConfigError,
    f"config.methods {methods} names a method twice",
  )
  train_lib.check_one_of(
    config.implementation, IMPLEMENTATIONS, "config.implementation"
  )
  train_lib.check_one_of(
    config.data.sampling, text.WINDOW_SAMPLINGS, "config.data.sampling"
  )
  train_lib.check_one_of(
    config.residual_init, models.RESIDUAL_INITS, "config.residual_init"
  )
  train_lib.check_one_of(
    config.compute_dtype, models.COMPUTE_DTYPES, "config.compute_dtype"
  )
  train_lib.check_one_of(
    config.optim.schedule, SCHEDULES, "config.optim.schedule"
  )
  train_lib.check_one_of(
    config.optim.weight_decay_mask,
    DECAY_MASKS,
    "config.optim.weight_decay_mask",
  )
  seeds = config.seeds
  errors.check(
    isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1,
    errors.ConfigError,
    f"config.seeds={seeds!r} must be an integer >= 1",
  )
  group = config.seeds_per_call
  errors.check(
    isinstance(group, int) and not isinstance(group, bool) and group >= 0,
    errors.ConfigError,
    f"config.seeds_per_call={group!r} must be an integer >= 0 (0: all)",
  )


def check_model(config, model=None, where: str = "config.model") -> None:
  """MXFP4 groups and head split of one model size, before any training."""
  m = config.model if model is None else model
  for key in ("d_model", "mlp_hidden"):
    errors.check(
      m[key] > 0 and m[key] % 32 == 0,
      errors.ConfigError,
      f"{where}.{key}={m[key]} must be a positive multiple of 32 (the MXFP4 "
      "group)",
    )
  model_config(config, "bf16", model)  # heads: ConfigError naming them


def model_config(config, method: str, model=None) -> models.LlamaConfig:
  """The Llama of `config` under `method`; `model` (sizes) overrides config.model."""
  train_lib.check_one_of(method, METHODS, "config.methods")
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
    residual_init=config.residual_init,
    compute_dtype=config.compute_dtype,
  )


def load_data(config) -> dict:
  """Device-ready data: the train byte stream and fixed validation windows.

  A corpus too short for one window of seq_len + 1 tokens in either split
  is a one-line ConfigError naming the corpus and the keys to change (the
  binaries call this before the workdir is written).
  """
  d = config.data
  tokens = text.load_corpus(d.path, d.max_bytes)
  train, val = text.train_val_split(tokens, d.val_fraction)
  corpus = repr(d.path) if d.path else "the stdlib corpus"
  # Training draws windows of seq_len + 1 at random starts (at least two
  # starts), or a batch of whole windows an epoch ("epoch": the offset
  # drops one window, `text.epoch_window_count`); validation takes them from
  # its start.
  train_need = d.seq_len + 2
  if d.sampling == "epoch":
    train_need = (d.batch_size + 2) * d.seq_len + 1
  for split, part, need in (
    ("training", train, train_need),
    ("validation", val, d.seq_len + 1),
  ):
    if len(part) < need:
      raise errors.ConfigError(
        f"config.data.path={corpus}: its {split} split holds {len(part)} "
        f"of its {len(tokens)} tokens, fewer than the {need} that "
        f"config.data.seq_len={d.seq_len} needs (data.batch_size="
        f"{d.batch_size}, data.sampling={d.sampling!r}); use a longer "
        "corpus, a smaller data.seq_len or data.batch_size, or another "
        "data.val_fraction"
      )
  return {
    "train": train,
    "val": text.eval_windows(val, d.seq_len, d.eval_windows),
  }


def train_seeds(
  config,
  method: str,
  data: dict,
  *,
  workdir: str,
  seed_ids,
  model=None,
  learning_rate: float | None = None,
  constant: bool = False,
  length_input: bool = False,
  name: str = "",
) -> dict:
  """Trains one Llama per seed in `seed_ids`, vmapped, through lib.train.train.

  Seed s draws its init, its batches and its quantizer randomness from
  fold_in(stream, s), independent of the method: seed s of every method
  starts from the same parameters and sees the same batches, so per-seed
  differences between methods are paired. `length_input`: the one-cycle
  schedule reads the run's length as an input of the compiled step, not a
  constant, so runs of other lengths share its program (and the persistent
  compilation cache's entry); the learning rates are the same, bit for bit,
  but the compiled update may round differently from the constant-length
  program's.

  Returns:
    {"history": the metric rows (a `run` column "<name>/seed<s>"),
     "val_loss": {step: [len(seed_ids)] validation losses} at every evaluated
     step (NaN where a seed diverged; divergence is recorded, not an error)}.
  """
  llama = models.Llama(model_config(config, method, model))
  tx = make_optimizer(config, learning_rate, constant)
  d = config.data
  seed_ids = tuple(int(s) for s in seed_ids)

  def loss_fn(params, batch, key):
    logits = llama.apply(params, batch[:, :-1], rngs={"quant": key})
    return models.next_token_loss(logits, batch[:, 1:]), {}

  train_step = train_lib.make_train_step(loss_fn, tx)
  if length_input:
    # The lengths travel with the data, an argument of the compiled chunk
    # (sweep settings are baked into it as constants).
    lengths = one_cycle_lengths(config, config.train.num_steps)
    data = {**data, "schedule_lengths": np.asarray(lengths, np.int32)}

  def seed_key(key, setting):
    return jax.random.fold_in(key, setting["seed"].astype(jnp.uint32))

  def init_one(key, setting):
    params = llama.init(
      seed_key(key, setting), np.zeros((1, d.seq_len), np.int32)
    )
    return train_lib.create_state(params, tx)

  order_root = train_lib.order_key(config.train)

  def batch_one(data, key, step, setting):
    tokens = windows(data, key, step, setting)
    if length_input:
      return {"tokens": tokens, "schedule_lengths": data["schedule_lengths"]}
    return tokens

  def windows(data, key, step, setting):
    if d.sampling == "epoch":
      return text.epoch_windows(
        data["train"],
        seed_key(order_root, setting),
        step,
        d.batch_size,
        d.seq_len,
      )
    return text.sample_windows(
      data["train"], seed_key(key, setting), d.batch_size, d.seq_len
    )

  def step_one(state, batch, key, step, setting):
    del step
    step_fn = train_step
    if length_input:
      total, warmup = batch["schedule_lengths"]
      step_fn = train_lib.make_train_step(
        loss_fn,
        make_optimizer(config, learning_rate, constant, (total, warmup)),
      )
      batch = batch["tokens"]
    return step_fn(state, batch, seed_key(rng.stream(key, "loss"), setting))

  def eval_one(state, data, setting):
    # Validation uses the model as trained: MXFP4 forward for quantized runs.
    del setting
    logits = llama.apply(state.params, data["val"][:, :-1])
    return {"val_loss": models.next_token_loss(logits, data["val"][:, 1:])}

  result = train_lib.run_sweep(
    init_one,
    step_one,
    train_lib.sweep_stack(
      names=[f"seed{s}" for s in seed_ids], seed=np.asarray(seed_ids)
    ),
    workdir=workdir,
    config=config.train,
    data=data,
    batch_one=batch_one,
    eval_one=eval_one,
    name=name,
    watch=(),  # a diverged seed is an outcome: its val_loss is NaN
    freeze_diverged=False,
  )
  val = dict(zip(result.steps.tolist(), result.evals["val_loss"]))
  return {"history": result.rows, "val_loss": val}


def seed_groups(config) -> list[tuple[int, ...]]:
  """Seeds 0..config.seeds-1 in groups of config.seeds_per_call (0: one group)."""
  ids = tuple(range(config.seeds))
  k = config.seeds_per_call or len(ids)
  return [ids[i : i + k] for i in range(0, len(ids), k)]


def train_method(config, method, data, *, workdir, name, **kw) -> dict:
  """`train_seeds` over every seed group; val_loss {step: [seeds]} joined."""
  groups = seed_groups(config)
  out = {"history": [], "val_loss": {}}
  for ids in groups:
    sub = workdir if len(groups) == 1 else f"{workdir}/seeds{ids[0]}-{ids[-1]}"
    r = train_seeds(
      config, method, data, workdir=sub, seed_ids=ids, name=name, **kw
    )
    out["history"] += r["history"]
    for step, v in r["val_loss"].items():
      out["val_loss"].setdefault(step, []).extend(v.tolist())
  out["val_loss"] = {s: np.asarray(v) for s, v in out["val_loss"].items()}
  return out


def paired_interval(a, b, level: float = 0.95) -> dict:
  """Mean of the per-seed differences a - b with a Student-t interval.

  a, b: per-seed values of two methods (paired by seed). A seed on which
  `b` (the comparator) is not finite is dropped and counted in
  `comparator_finite`; a seed on which `a` is not finite while `b` is makes
  the difference +inf (a diverged run is worse than any finite one).

  Returns:
    {"mean", "lo", "hi", "sd", "n", "per_seed", "level",
     "comparator_finite" (fraction of seeds where b is finite)}; with one
    usable seed, lo/hi are -inf/+inf (no interval from one seed).
  """
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  keep = np.isfinite(b)
  diff = np.where(np.isfinite(a), a - b, np.inf)[keep]
  out = {
    "per_seed": diff.tolist(),
    "n": int(diff.size),
    "level": level,
    "comparator_finite": float(keep.mean()) if keep.size else 0.0,
  }
  if diff.size == 0:
    return {
      **out,
      "mean": math.nan,
      "lo": math.nan,
      "hi": math.nan,
      "sd": math.nan,
    }
  mean, lo, hi = stats_lib.mean_interval(diff, level)
  if math.isnan(lo):  # One seed, or a diverged one: no interval.
    return {
      **out,
      "mean": mean,
      "lo": -math.inf,
      "hi": math.inf,
      "sd": math.nan,
    }
  sd = float(np.std(diff, ddof=1))
  return {**out, "mean": mean, "lo": lo, "hi": hi, "sd": sd}


def one_cycle_lengths(config, steps: int) -> tuple[int, int]:
  """(total, warmup) of `optim_lib.one_cycle_schedule` for a run of `steps`."""
  warmup = max(1, int(config.optim.warmup_fraction * steps))
  return max(2, steps), min(warmup, max(1, steps - 1))


def make_optimizer(
  config,
  learning_rate: float | None = None,
  constant: bool = False,
  lengths=None,
) -> optax.GradientTransformation:
  """AdamW with clipping, the official trainer's (IST-DASLab/Quartet src/main.py).

  config.optim.schedule "one_cycle" (official): torch OneCycleLR (div_factor
  100, final_div_factor 0.1), a cosine warmup from lr/100 to lr over
  warmup_fraction of the steps, then a cosine decay to lr/10; with
  `constant` the lr stays at the peak after the warmup (one run read at
  several token counts D, the scaling sweep [ours]; the official sweep runs
  one cosine per D). "linear_warmup" [ours]: a linear warmup from 0, then the
  same cosine to lr/10 (or constant).
  config.optim.weight_decay_mask "linear" (official, src/models/base.py):
  decay only the kernels of the block linears (`models.weight_decay_mask`);
  "all" [ours]: every parameter, embedding, norms and head included.
  `lengths`: the one-cycle (total, warmup) as traced integers, for a run
  whose length is an argument of its compiled step (`one_cycle_lengths`);
  None: from config.train.num_steps.
  """
  o, steps = config.optim, config.train.num_steps
  lr = o.learning_rate if learning_rate is None else learning_rate
  warmup = max(1, int(o.warmup_fraction * steps))
  if o.schedule == "one_cycle":
    total, warm = (
      one_cycle_lengths(config, steps) if lengths is None else lengths
    )
    schedule = optim_lib.one_cycle_schedule(lr, total, warm, decay=not constant)
  elif lengths is not None:
    raise ValueError("traced schedule lengths need optim.schedule 'one_cycle'")
  elif constant:
    schedule = optax.warmup_constant_schedule(0.0, lr, warmup)
  else:
    schedule = optax.warmup_cosine_decay_schedule(
      0.0,
      lr,
      warmup_steps=warmup,
      decay_steps=max(2, steps),
      end_value=0.1 * lr,
    )
  mask = models.weight_decay_mask if o.weight_decay_mask == "linear" else None
  return optax.chain(
    optax.clip_by_global_norm(o.grad_clip),
    optax.adamw(
      schedule, b1=o.b1, b2=o.b2, weight_decay=o.weight_decay, mask=mask
    ),
  )
