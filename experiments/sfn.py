"""Stethoscope for Networks on a tiny Llama (Shao & Wu, NeurIPS 2025).

"Who Reasons in the Large Language Models?" (arXiv 2505.20993) argues that
the reasoning of a fine-tuned LLM lives mainly in o_proj, the attention
output projection, and probes it with four tools (`lib.interp`). The paper's
models are Qwen2.5 and DeepSeek-R1-Distill (1.5B-32B) on AIME; ours is the
tiny-model protocol of the spec (extended_papers.md section 8):

- A: the project's Llama with separate q/k/v/o and gate/up/down projections,
  trained from scratch on a grammar ("conversation") mixed with direct-answer
  addition (`lib.interp.tasks`): fluent, answers without reasoning.
- B: A fine-tuned on addition with a scratchpad ("reasoning traces") mixed
  with grammar, every module trainable.
- Delta: per-module, per-layer l2 and relative change B - A, relative-change
  histograms and their bimodality coefficient.
- Merge: A with one module (all layers) or a group copied from B, norms kept
  from A; scored by reasoning accuracy (level IV: right answer with every
  scratchpad step right), answer accuracy, response length and grammar
  perplexity.
- Freeze: A fine-tuned like B with only {o}, {q, k, v} or {MLP} trainable
  (each plus the embedding, head and norms, "what is needed for fluency";
  the run "io" trains only those), at B's step budget.
- Destruction: one module of one layer of B zeroed.

Every model is a stack of `config.seeds` independently initialised runs,
trained by `lib.train.run_sweep` (resumable): A in one sweep, B and every
Freeze run in a second (runs x seeds, one compiled program); claims are
reported with t intervals over seeds. Whether o_proj matters most in a tiny
model is an outcome, not an assumption: the claims report yes or no.

Run: python -m experiments.sfn --config configs/sfn.py:quick --workdir runs/sfn
"""

import os
from functools import partial
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import interp
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import losses
from lib.core import stats
from lib.interp import scoring
from lib.interp import tasks

POOLS = ("grammar_train", "grammar_val", "addition_train", "test_problems")
SINGLE = interp.GROUPS["linears"]  # each projection of a block, on its own
# Multi-module merges: the paper's groups, and (beyond the paper, which keeps
# A's norms) what the embedding, head and norms of B carry with and without o.
MERGE_GROUPS = {
  "attn": ("attn",),
  "mlp": ("mlp",),
  "linears": ("linears",),
  "io": ("embed", "head", "norm"),
  "o+io": ("o", "embed", "head", "norm"),
}


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.phased(
    config.train, "config.pretrain.steps and config.finetune.steps"
  )
  _checks.integer(config.digits, "config.digits")
  _checks.integer(config.seeds, "config.seeds")
  for key in ("d_model", "n_layers", "n_heads", "mlp_hidden"):
    _checks.integer(config.model[key], f"config.model.{key}")
  if config.model.d_model % config.model.n_heads:
    raise errors.ConfigError(
      f"config.model.d_model={config.model.d_model} is not a multiple of "
      f"config.model.n_heads={config.model.n_heads}"
    )
  for key in POOLS + ("generate_problems",):
    _checks.integer(config.data[key], f"config.data.{key}")
  if config.data.generate_problems > config.data.test_problems:
    raise errors.ConfigError(
      f"config.data.generate_problems={config.data.generate_problems} exceeds "
      f"config.data.test_problems={config.data.test_problems}"
    )
  _checks.integer(config.batch_size, "config.batch_size", minimum=2)
  _checks.number(config.delta_trim, "config.delta_trim", at_least=0, below=0.5)
  for phase in ("pretrain", "finetune"):
    c = config[phase]
    _checks.integer(c.steps, f"config.{phase}.steps")
    _checks.number(c.lr, f"config.{phase}.lr", above=0)
    _checks.number(c.weight_decay, f"config.{phase}.weight_decay", at_least=0)
    _checks.fraction(c.addition_fraction, f"config.{phase}.addition_fraction")
    _checks.multiple_of(
      c.steps, config.train.log_every, f"config.{phase}.steps"
    )
  named = {f"freeze_sets.{k}": v for k, v in config.freeze_sets.items()}
  for key, modules in {**named, "freeze_also": config.freeze_also}.items():
    try:
      interp.expand(modules, interp.DEFAULT_PATTERNS)
    except errors.ConfigError as e:
      raise errors.ConfigError(f"config.{key}: {e}") from None


def model_config(config) -> models.LlamaConfig:
  return models.LlamaConfig(
    vocab_size=tasks.VOCAB_SIZE,
    max_len=tasks.sequence_length(config.digits),
    linear="dense",
    split_projections=True,
    **config.model,
  )


def make_data(config) -> dict:
  """The protocol's host pools (`lib.interp.tasks.protocol_data`)."""
  pools = {k: config.data[k] for k in POOLS}
  return tasks.protocol_data(config.digits, config.data_seed, **pools)


class Tools:
  """`lib.interp.scoring` jitted over the seed axis of stacked parameters."""

  def __init__(self, config, data):
    self.config, self.data = config, data
    self.llama = models.Llama(model_config(config))
    apply, total = self.llama.apply, tasks.sequence_length(config.digits)
    seeds = lambda f, *axes: jax.jit(jax.vmap(f, in_axes=(0, *axes)))
    generate = partial(scoring.greedy_generate, apply, total_len=total)
    self.generate = seeds(generate, None)
    self.perplexity = seeds(partial(scoring.perplexity, apply), None, None)
    self.exact_match = seeds(partial(scoring.exact_match, apply), None, None)

  def evaluate(self, params, generate: bool = True) -> dict:
    """Per seed: reasoning accuracy (level IV), the teacher-forced loss on the
    reasoning traces (nats per answer token: graded where accuracy sits at
    0), grammar ppl; with `generate`, the grades of greedy decoding on the
    first `config.data.generate_problems` problems."""
    d, k = self.data, self.config.data.generate_problems
    out = {
      "reasoning_accuracy": np.asarray(self.exact_match(params, *d["test"])),
      "reasoning_nll": np.log(np.asarray(self.perplexity(params, *d["test"]))),
      "grammar_ppl": np.asarray(self.perplexity(params, *d["val"])),
    }
    if generate:
      cont = self.generate(params, d["test_prompts"][:k])
      ops = d["test_operands"][:k]
      out.update(scoring.graded(cont, ops, self.config.digits))
    return out


def train_phase(config, tools, phase: str, workdir, start=None, masks=None):
  """Trains runs x seeds as one `lib.train.run_sweep`: {run: params [S, ...]}.

  pretrain (start None): run "A", a fresh model per seed. finetune: every
  run of `masks` (name -> bool tree of the parameters it trains,
  `interp.freeze_where`) starts from each seed's A, on the same batches.
  """
  c, seeds, llama = config[phase], config.seeds, tools.llama
  kind = "direct" if phase == "pretrain" else "scratch"
  pools = {"add": tools.data[kind], "grammar": tools.data["grammar"]}
  n_add = int(round(c.addition_fraction * config.batch_size))
  sizes = {"add": n_add, "grammar": config.batch_size - n_add}
  schedule = optax.warmup_cosine_decay_schedule(
    0.0, c.lr, max(1, c.steps // 20), c.steps, c.lr * 0.1
  )
  tx = optax.adamw(schedule, weight_decay=c.weight_decay)
  seq = np.zeros((1, tasks.sequence_length(config.digits) - 1), np.int32)
  runs = ("A",) if masks is None else tuple(masks)
  table = None  # per leaf: [runs] whether each run trains it
  if masks is not None:
    table = jax.tree.map(lambda *m: np.array(m), *masks.values())

  def loss_fn(p, batch, key):
    logits = llama.apply(p, batch[0][:, :-1])
    return losses.masked_cross_entropy(logits, batch[0][:, 1:], batch[1]), {}

  def init_one(key, s):
    if start is None:
      params = llama.init(jax.random.fold_in(key, s["seed"]), seq)
    else:
      params = jax.tree.map(lambda x: jnp.asarray(x)[s["seed"]], start)
    return train_lib.create_state(params, tx)

  def batch_fn(pools, key, step):  # [S, batch, ...]: seed s's from fold_in
    def one(k):
      parts = []
      for (name, n), kk in zip(sizes.items(), jax.random.split(k)):
        tok, mask = pools[name]
        idx = jax.random.randint(kk, (n,), 0, tok.shape[0])
        parts += [(tok[idx], mask[idx])] if n else []
      return tuple(jnp.concatenate(x) for x in zip(*parts))

    seed_keys = jax.vmap(partial(jax.random.fold_in, key))(jnp.arange(seeds))
    return jax.vmap(one)(seed_keys)

  def step_one(state, batch, key, step, s):
    batch = jax.tree.map(lambda x: x[s["seed"]], batch)
    trained = jax.tree.map(lambda m: jnp.asarray(m)[s["run"]], table)
    t = tx if masks is None else interp.freeze_where(tx, trained)
    return train_lib.make_train_step(loss_fn, t)(state, batch, key)

  settings = train_lib.sweep_stack(
    names=[f"{r}/seed{i}" for r in runs for i in range(seeds)],
    run=np.repeat(np.arange(len(runs)), seeds),
    seed=np.tile(np.arange(seeds), len(runs)),
  )
  result = train_lib.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=workdir,
    config=train_lib.phase_config(config.train, c.steps),
    data=pools,
    batch_fn=batch_fn,
    name=f"sfn/{os.path.basename(workdir)}",
    freeze_diverged=False,  # a diverged run's NaN ppl clears `finite`
  )
  per_run = lambda x: np.asarray(x).reshape((len(runs), seeds) + x.shape[1:])
  params = jax.tree.map(per_run, result.state.params)
  split = {r: jax.tree.map(itemgetter(i), params) for i, r in enumerate(runs)}
  return split


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  tools = Tools(config, make_data(config))
  sweep = train_lib.Sweep(2, name="sfn")
  with sweep.run("A: grammar + direct addition"):
    a = train_phase(config, tools, "pretrain", f"{workdir}/model_a")["A"]
  masks = {"B": jax.tree.map(lambda _: True, a)}
  for name, modules in config.freeze_sets.items():
    trained = tuple(modules) + tuple(config.freeze_also)
    masks[f"freeze_{name}"] = interp.select(a, trained)
  with sweep.run("B and every freeze run: A fine-tuned on scratchpad addition"):
    tuned = train_phase(
      config, tools, "finetune", f"{workdir}/finetune", a, masks
    )
  b = tuned["B"]
  ev = {"A": tools.evaluate(a), "B": tools.evaluate(b)}
  for name, modules in {**{m: (m,) for m in SINGLE}, **MERGE_GROUPS}.items():
    ev[f"merge_{name}"] = tools.evaluate(interp.merge(a, b, modules))
  frozen = [k[len("freeze_") :] for k in tuned if k != "B"]
  ev.update({k: tools.evaluate(v) for k, v in tuned.items() if k != "B"})
  destruction = {
    f"{m}/layer{i}": scoring.bands(
      tools.evaluate(interp.destroy(b, (m,), layers=(i,)), generate=False)
    )
    for m in SINGLE
    for i in range(config.model.n_layers)
  }
  summary = {k: scoring.bands(v) for k, v in ev.items()}
  acc = {k: v["reasoning_accuracy"] for k, v in ev.items()}
  nll = {k: v["reasoning_nll"] for k, v in ev.items()}
  others = [f"merge_{m}" for m in SINGLE if m != "o"]

  def vs_each(ours, rest, score, sign=1.0):  # paired by seed, each of rest
    return stats.against_each(
      score[ours], {k: score[k] for k in rest}, sign=sign
    )

  results = {
    "models": summary,
    "delta": interp.delta_report(
      a, b, SINGLE, focus="o", trim=config.delta_trim
    ),
    "destruction": destruction,
    "merge_o_minus_a": stats.band(acc["merge_o"] - acc["A"]),
    "merge_o_vs_other_merges": vs_each("merge_o", others, acc),
    # Graded (teacher-forced loss on B's traces, nats per answer token,
    # lower is better): how far a model moved towards B's reasoning where
    # level IV is at its floor.
    "merge_o_nll_gain_over_a": stats.band(nll["A"] - nll["merge_o"]),
    "merge_o_nll_vs_other_merges": vs_each("merge_o", others, nll, -1.0),
    "b_minus_a": stats.band(acc["B"] - acc["A"]),
  }
  if "o" in frozen:
    if len(frozen) > 1:
      rest = [f"freeze_{k}" for k in frozen if k != "o"]
      results["freeze_o_vs_other_freezes"] = vs_each("freeze_o", rest, acc)
      results["freeze_o_nll_vs_other_freezes"] = vs_each(
        "freeze_o", rest, nll, -1.0
      )
    gain = acc["B"] - acc["A"]
    results["freeze_o_recovered_fraction"] = stats.band(
      (acc["freeze_o"] - acc["A"]) / np.where(gain > 0, gain, np.nan)
    )
  # A diverged run (it trains on, `freeze_diverged=False`) has NaN parameters.
  results["finite"] = bool(
    all(np.all(np.isfinite(v["grammar_ppl"])) for v in ev.values())
  )
  results["setting"] = {
    "digits": config.digits,
    "seeds": config.seeds,
    "model": dict(config.model),
    "pretrain_steps": config.pretrain.steps,
    "finetune_steps": config.finetune.steps,
    "parameters": int(sum(np.prod(x.shape[1:]) for x in jax.tree.leaves(a))),
  }
  for k, v in summary.items():
    means = {m: round(x["mean"], 3) for m, x in v.items() if m != "levels"}
    logging.info("%-16s %s", k, means)
  results["destruction_table"] = {
    k: [
      round(v["reasoning_accuracy"]["mean"], 4),
      round(v["grammar_ppl"]["mean"], 3),
    ]
    for k, v in results["destruction"].items()
  }
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figures, workdir, config, results, a, b)
  return results


def figures(workdir, config, results, a, b) -> None:
  from experiments._plot import plt

  def save(fig, name):
    fig.tight_layout()
    train_lib.save_figure(fig, os.path.join(workdir, name), dpi=120)

  layers, x = config.model.n_layers, np.arange(len(SINGLE))
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
  width = 0.8 / layers
  for ax, key, label in zip(
    axes, ("delta", "relative"), ("|W_B - W_A|", "|W_B - W_A| / |W_A|")
  ):
    for li in range(layers):
      vals = [results["delta"]["per_layer"][m][key][li] for m in SINGLE]
      ax.bar(x + li * width, vals, width, label=f"layer {li}")
    ax.set_xticks(x + 0.4 - width / 2, SINGLE)
    ax.set(ylabel=label, title=f"Delta per module ({label})")
    ax.legend(fontsize=7)
  save(fig, "delta_norms.png")

  pa, pb = (jax.tree.map(lambda x: np.asarray(x)[0], t) for t in (a, b))
  fig, axes = plt.subplots(1, len(SINGLE), figsize=(2.3 * len(SINGLE), 2.6))
  for ax, m in zip(axes, SINGLE):
    r = interp.trim_tails(interp.relative_changes(pa, pb, m), config.delta_trim)
    ax.hist(r, bins=60, color="C0")
    bc = results["delta"]["bimodality"][m]["seeds"][0]
    ax.set(title=f"{m} (BC {bc:.2f})", xlabel="relative change", yticks=[])
  fig.suptitle(
    f"seed 0, {100 * config.delta_trim:g} % of each tail dropped", fontsize=9
  )
  save(fig, "relative_change_hist.png")

  fig, axes = plt.subplots(2, 2, figsize=(11, 6.4))
  merged = [f"merge_{m}" for m in SINGLE + tuple(MERGE_GROUPS)]
  frozen = [f"freeze_{k}" for k in config.freeze_sets]
  panels = (
    ("reasoning_accuracy", "reasoning accuracy (level IV)", "C2"),
    ("reasoning_nll", "loss on B's traces (nats/token)", "C4"),
  )
  for row, (metric, label, color) in zip(axes, panels):
    for ax, keys, title in zip(row, (merged, frozen), ("Merge", "Freeze")):
      keys, at = ["A", "B"] + keys, range(len(keys) + 2)
      band = [results["models"][k][metric] for k in keys]
      mean = np.array([v["mean"] for v in band])
      err = [mean - [v["lo"] for v in band], [v["hi"] for v in band] - mean]
      ax.bar(at, mean, yerr=np.nan_to_num(err), color=color)
      ax.set_xticks(at, [k.split("_", 1)[-1] for k in keys], rotation=45)
      ax.set(ylabel=label, title=title)
      if metric == "reasoning_accuracy":
        ppl = [results["models"][k]["grammar_ppl"]["mean"] for k in keys]
        twin = ax.twinx()
        twin.plot(at, ppl, "ko", ms=4)
        twin.set_ylabel("grammar perplexity (dots)")
  save(fig, "merge_freeze.png")

  d = results["destruction"]
  grid = [
    [d[f"{m}/layer{li}"]["reasoning_accuracy"]["mean"] for li in range(layers)]
    for m in SINGLE
  ]
  fig, ax = plt.subplots(figsize=(3 + layers, 3.4))
  im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
  ax.set_yticks(range(len(SINGLE)), SINGLE)
  ax.set_xticks(range(layers), [f"layer {li}" for li in range(layers)])
  ax.set_title("B's reasoning accuracy, one module zeroed")
  fig.colorbar(im)
  save(fig, "destruction.png")


if __name__ == "__main__":
  _cli.main(run, check=check_config)
