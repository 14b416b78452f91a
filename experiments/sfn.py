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

Every model is a stack of `config.seeds` independently initialised runs
(vmapped, one `lib.train.train` per phase, resumable); claims are reported
with t intervals over seeds. Whether o_proj matters most in a tiny model is an
outcome, not an assumption: the claims report yes or no.

Run: python -m experiments.sfn --config configs/sfn.py:quick --workdir runs/sfn
"""

import os

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
from lib.core import rng
from lib.core import stats
from lib.interp import tasks

SINGLE = ("q", "k", "v", "o", "gate", "up", "down")
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
  _checks.integer(config.digits, "config.digits")
  _checks.integer(config.seeds, "config.seeds")
  for key in ("d_model", "n_layers", "n_heads", "mlp_hidden"):
    _checks.integer(config.model[key], f"config.model.{key}")
  if config.model.d_model % config.model.n_heads:
    raise errors.ConfigError(
      f"config.model.d_model={config.model.d_model} is not a multiple of "
      f"config.model.n_heads={config.model.n_heads}"
    )
  for key in (
    "grammar_train",
    "grammar_val",
    "addition_train",
    "test_problems",
    "generate_problems",
  ):
    _checks.integer(config.data[key], f"config.data.{key}")
  if config.data.generate_problems > config.data.test_problems:
    raise errors.ConfigError(
      f"config.data.generate_problems={config.data.generate_problems} exceeds "
      f"config.data.test_problems={config.data.test_problems}"
    )
  _checks.integer(config.batch_size, "config.batch_size", minimum=2)
  for phase in ("pretrain", "finetune"):
    c = config[phase]
    _checks.integer(c.steps, f"config.{phase}.steps")
    _checks.number(c.lr, f"config.{phase}.lr", above=0)
    _checks.fraction(c.addition_fraction, f"config.{phase}.addition_fraction")
    _checks.multiple_of(
      c.steps, config.train.log_every, f"config.{phase}.steps"
    )
  for name, modules in config.freeze_sets.items():
    try:
      interp.expand(modules, interp.DEFAULT_PATTERNS)
    except errors.ConfigError as e:
      raise errors.ConfigError(f"config.freeze_sets.{name}: {e}") from None
  try:
    interp.expand(config.freeze_also, interp.DEFAULT_PATTERNS)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"config.freeze_also: {e}") from None


def model_config(config) -> models.LlamaConfig:
  m = config.model
  return models.LlamaConfig(
    vocab_size=tasks.VOCAB_SIZE,
    d_model=m.d_model,
    n_layers=m.n_layers,
    n_heads=m.n_heads,
    mlp_hidden=m.mlp_hidden,
    max_len=tasks.sequence_length(config.digits),
    linear="dense",
    split_projections=True,
  )


def make_data(config) -> dict:
  """Host pools: grammar, direct and scratchpad addition, held-out sets."""
  d, n = config.data, config.digits
  seq_len = tasks.sequence_length(n) - 1
  s = config.data_seed
  g_tok, g_mask = tasks.grammar_sentences(d.grammar_train, seq_len, s)
  gv_tok, gv_mask = tasks.grammar_sentences(d.grammar_val, seq_len, s + 1)
  ops = tasks.addition_operands(d.addition_train, n, s + 2)
  direct = tasks.addition_examples(ops, n, seq_len, scratchpad=False)
  scratch = tasks.addition_examples(ops, n, seq_len, scratchpad=True)
  test_ops = tasks.addition_operands(d.test_problems, n, s + 3)
  return {
    "test": tasks.addition_examples(test_ops, n, seq_len, scratchpad=True),
    "grammar": (g_tok, g_mask),
    "direct": direct,
    "scratch": scratch,
    "val": (gv_tok, gv_mask),
    "test_prompts": tasks.prompts(test_ops, n),
    "test_operands": test_ops,
  }


def _masked_ce(logits, targets, mask):
  logp = jax.nn.log_softmax(logits, axis=-1)
  nll = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
  return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1.0)


class Tools:
  """The jitted model functions every phase and tool shares (compiled once)."""

  def __init__(self, config, data):
    self.config = config
    self.llama = models.Llama(model_config(config))
    self.total_len = tasks.sequence_length(config.digits)
    self.data = data
    llama, total = self.llama, self.total_len

    def generate(params, prompts):
      n, p = prompts.shape
      buf = jnp.zeros((n, total), jnp.int32).at[:, :p].set(prompts)

      def body(t, buf):
        logits = llama.apply(params, buf)
        nxt = jnp.argmax(
          jax.lax.dynamic_index_in_dim(logits, t - 1, 1, keepdims=False), -1
        )
        return jax.lax.dynamic_update_index_in_dim(
          buf, nxt.astype(jnp.int32), t, 1
        )

      return jax.lax.fori_loop(p, total, body, buf)[:, p:]

    def perplexity(params, tokens, mask):
      logits = llama.apply(params, tokens[:, :-1])
      return jnp.exp(_masked_ce(logits, tokens[:, 1:], mask))

    def exact_match(params, tokens, mask):
      # Greedy decoding reproduces the gold continuation iff every gold token
      # is the argmax given the gold prefix (induction over positions), so
      # this one forward pass is exactly the level-IV rate of generation.
      pred = jnp.argmax(llama.apply(params, tokens[:, :-1]), -1)
      ok = (pred == tokens[:, 1:]) | (mask == 0)
      return jnp.mean(jnp.all(ok, axis=-1))

    # Over the seed axis of stacked parameters.
    self.generate = jax.jit(jax.vmap(generate, in_axes=(0, None)))
    self.perplexity = jax.jit(jax.vmap(perplexity, in_axes=(0, None, None)))
    self.exact_match = jax.jit(jax.vmap(exact_match, in_axes=(0, None, None)))

  def evaluate(self, params, generate: bool = True) -> dict:
    """Per seed: reasoning accuracy, grammar ppl; with `generate`, the level
    fractions, answer accuracy and response length of greedy decoding on the
    first `config.data.generate_problems` test problems."""
    d = self.data
    out = {
      "reasoning_accuracy": np.asarray(self.exact_match(params, *d["test"])),
      "grammar_ppl": np.asarray(self.perplexity(params, *d["val"])),
    }
    if generate:
      k = self.config.data.generate_problems
      ops = d["test_operands"][:k]
      cont = np.asarray(self.generate(params, d["test_prompts"][:k]))
      graded = [tasks.grade(c, ops, self.config.digits) for c in cont]
      levels = np.stack([g[0] for g in graded])
      out.update(
        answer_accuracy=(levels >= 3).mean(1),
        level_iv_generated=(levels == 4).mean(1),
        levels=np.stack([(levels == i).mean(1) for i in (1, 2, 3, 4)], 1),
        response_length=np.stack([g[1] for g in graded]).mean(1),
      )
    return out


def train_phase(config, tools, phase: str, init_params, trainable, workdir):
  """One stack of seeds trained through lib.train.train; returns params [S, ...].

  init_params: None (fresh init per seed) or stacked parameters to start from.
  trainable: module names for `lib.interp.freeze`, or None (everything).
  """
  c = config[phase]
  llama = tools.llama
  seq_len = tools.total_len - 1
  data = tools.data
  kind = "direct" if phase == "pretrain" else "scratch"
  pools = {
    "add": data[kind],
    "grammar": data["grammar"],
  }
  n_add = int(round(c.addition_fraction * config.batch_size))
  n_gram = config.batch_size - n_add
  schedule = optax.warmup_cosine_decay_schedule(
    0.0, c.lr, max(1, c.steps // 20), c.steps, c.lr * 0.1
  )
  tx = optax.adamw(schedule, weight_decay=c.weight_decay)
  seeds = config.seeds

  def fresh(key):
    return llama.init(key, np.zeros((1, seq_len), np.int32))

  if trainable is not None:
    tx = interp.freeze(
      tx, jax.eval_shape(fresh, rng.root_key(config.train.seed)), trainable
    )
  train_step = train_lib.make_train_step(
    lambda p, batch, key: (
      _masked_ce(llama.apply(p, batch[0][:, :-1]), batch[0][:, 1:], batch[1]),
      {},
    ),
    tx,
  )

  def init_fn(key):
    if init_params is None:
      params = jax.vmap(fresh)(jax.random.split(key, seeds))
    else:
      params = init_params
    return jax.vmap(lambda p: train_lib.create_state(p, tx))(params)

  def batch_fn(pools, key, step):
    del step

    def one(k):
      k_add, k_gram = jax.random.split(k)
      parts = []
      for name, n, kk in (("add", n_add, k_add), ("grammar", n_gram, k_gram)):
        if n == 0:
          continue
        tok, mask = pools[name]
        idx = jax.random.randint(kk, (n,), 0, tok.shape[0])
        parts.append((tok[idx], mask[idx]))
      return (
        jnp.concatenate([p[0] for p in parts]),
        jnp.concatenate([p[1] for p in parts]),
      )

    return jax.vmap(one)(jax.random.split(key, seeds))

  def step_fn(state, batch, key, step):
    del step
    keys = jax.random.split(rng.stream(key, "loss"), seeds)
    return jax.vmap(train_step)(state, batch, keys)

  cfg = train_lib.phase_config(config.train, c.steps)
  state, _ = train_lib.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=cfg,
    data=pools,
    batch_fn=batch_fn,
    name=f"sfn/{os.path.basename(workdir)}",
    runs=tuple(f"seed{s}" for s in range(seeds)),
  )
  return state.params


def _unstack(params, s):
  return jax.tree.map(lambda x: np.asarray(x[s]), params)


def delta_stats(config, a, b) -> dict:
  """Per seed delta norms and bimodality; seed means and bands per module."""
  per_seed = []
  for s in range(config.seeds):
    pa, pb = _unstack(a, s), _unstack(b, s)
    norms = interp.delta_norms(pa, pb)
    bc = {
      m: interp.bimodality_coefficient(interp.relative_changes(pa, pb, m))
      for m in SINGLE
    }
    per_seed.append((norms, bc))
  out = {"relative": {}, "delta": {}, "bimodality": {}, "per_layer": {}}
  for m in SINGLE:
    out["relative"][m] = stats.band(
      [n["_total"][m]["relative"] for n, _ in per_seed]
    )
    out["delta"][m] = stats.band([n["_total"][m]["delta"] for n, _ in per_seed])
    out["bimodality"][m] = stats.band([bc[m] for _, bc in per_seed])
    out["per_layer"][m] = {
      "delta": np.mean([n[m]["delta"] for n, _ in per_seed], 0).tolist(),
      "relative": np.mean([n[m]["relative"] for n, _ in per_seed], 0).tolist(),
    }
  rel = np.array(
    [[n["_total"][m]["relative"] for m in SINGLE] for n, _ in per_seed]
  )
  io = SINGLE.index("o")
  others = np.delete(rel, io, axis=1)
  out["o_minus_max_other_relative"] = stats.band(rel[:, io] - others.max(1))
  out["o_rank_relative"] = [
    int(1 + np.sum(r > r[io])) for r in rel
  ]  # 1 = largest, per seed
  bcs = np.array([[bc[m] for m in SINGLE] for _, bc in per_seed])
  out["o_bimodality_minus_uniform"] = stats.band(bcs[:, io] - 5.0 / 9.0)
  return out


def _summary(ev: dict) -> dict:
  out = {
    k: stats.band(ev[k])
    for k in (
      "reasoning_accuracy",
      "grammar_ppl",
      "answer_accuracy",
      "level_iv_generated",
      "response_length",
    )
    if k in ev
  }
  if "levels" in ev:
    out["levels"] = {
      lv: float(ev["levels"][:, i].mean()) for i, lv in enumerate(tasks.LEVELS)
    }
  return out


def _diff(x, y, key="reasoning_accuracy"):
  return stats.band(np.asarray(x[key]) - np.asarray(y[key]))


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  data = make_data(config)
  tools = Tools(config, data)
  phases = 2 + len(config.freeze_sets)
  sweep = train_lib.Sweep(phases, name="sfn")
  with sweep.run("A: grammar + direct addition"):
    a = train_phase(
      config, tools, "pretrain", None, None, os.path.join(workdir, "model_a")
    )
  with sweep.run("B: A fine-tuned on scratchpad addition"):
    b = train_phase(
      config, tools, "finetune", a, None, os.path.join(workdir, "model_b")
    )
  frozen = {}
  for name, modules in config.freeze_sets.items():
    with sweep.run(f"freeze: train only {name}"):
      frozen[name] = train_phase(
        config,
        tools,
        "finetune",
        a,
        tuple(modules) + tuple(config.freeze_also),
        os.path.join(workdir, f"freeze_{name}"),
      )

  ev = {"A": tools.evaluate(a), "B": tools.evaluate(b)}
  for m in SINGLE:
    ev[f"merge_{m}"] = tools.evaluate(interp.merge(a, b, (m,)))
  for name, modules in MERGE_GROUPS.items():
    ev[f"merge_{name}"] = tools.evaluate(interp.merge(a, b, modules))
  for name, params in frozen.items():
    ev[f"freeze_{name}"] = tools.evaluate(params)
  destruction = {}
  for m in SINGLE:
    for layer in range(config.model.n_layers):
      e = tools.evaluate(
        interp.destroy(b, (m,), layers=(layer,)), generate=False
      )
      destruction[f"{m}/layer{layer}"] = e
  deltas = delta_stats(config, a, b)

  summary = {k: _summary(v) for k, v in ev.items()}
  merge_acc = np.array([ev[f"merge_{m}"]["reasoning_accuracy"] for m in SINGLE])
  io = SINGLE.index("o")
  results = {
    "models": summary,
    "delta": deltas,
    "destruction": {k: _summary(v) for k, v in destruction.items()},
    "merge_o_minus_a": _diff(ev["merge_o"], ev["A"]),
    "merge_o_minus_best_other": stats.band(
      merge_acc[io] - np.delete(merge_acc, io, axis=0).max(0)
    ),
    "b_minus_a": _diff(ev["B"], ev["A"]),
  }
  if "o" in frozen:
    others = [k for k in frozen if k != "o"]
    if others:
      best = np.max(
        [ev[f"freeze_{k}"]["reasoning_accuracy"] for k in others], 0
      )
      results["freeze_o_minus_best_other"] = stats.band(
        ev["freeze_o"]["reasoning_accuracy"] - best
      )
    gain = ev["B"]["reasoning_accuracy"] - ev["A"]["reasoning_accuracy"]
    results["freeze_o_recovered_fraction"] = stats.band(
      (ev["freeze_o"]["reasoning_accuracy"] - ev["A"]["reasoning_accuracy"])
      / np.where(gain > 0, gain, np.nan)
    )
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
    logging.info(
      "%-16s reasoning %.3f  answer %.3f  length %.1f  ppl %.2f",
      k,
      v["reasoning_accuracy"]["mean"],
      v["answer_accuracy"]["mean"],
      v["response_length"]["mean"],
      v["grammar_ppl"]["mean"],
    )
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

  layers = config.model.n_layers
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
  width = 0.8 / layers
  x = np.arange(len(SINGLE))
  for li in range(layers):
    for ax, key in zip(axes, ("delta", "relative")):
      vals = [results["delta"]["per_layer"][m][key][li] for m in SINGLE]
      ax.bar(x + li * width, vals, width, label=f"layer {li}")
  for ax, label in zip(axes, ("|W_B - W_A|", "|W_B - W_A| / |W_A|")):
    ax.set_xticks(x + 0.4 - width / 2, SINGLE)
    ax.set(ylabel=label, title=f"Delta per module ({label})")
    ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "delta_norms.png"), dpi=120)

  pa, pb = _unstack(a, 0), _unstack(b, 0)
  fig, axes = plt.subplots(1, len(SINGLE), figsize=(2.3 * len(SINGLE), 2.6))
  for ax, m in zip(axes, SINGLE):
    r = interp.relative_changes(pa, pb, m)
    lo, hi = np.percentile(r, [1, 99])
    ax.hist(np.clip(r, lo, hi), bins=60, color="C0")
    bc = results["delta"]["bimodality"][m]["mean"]
    ax.set(title=f"{m} (BC {bc:.2f})", xlabel="relative change")
    ax.set_yticks([])
  fig.tight_layout()
  train_lib.save_figure(
    fig, os.path.join(workdir, "relative_change_hist.png"), dpi=120
  )

  models_ = results["models"]
  fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
  for ax, keys, title in (
    (
      axes[0],
      ["A", "B"] + [f"merge_{m}" for m in SINGLE + tuple(MERGE_GROUPS)],
      "Merge",
    ),
    (
      axes[1],
      ["A", "B"] + [f"freeze_{k}" for k in config.freeze_sets],
      "Freeze",
    ),
  ):
    acc = [models_[k]["reasoning_accuracy"] for k in keys]
    mean = [v["mean"] for v in acc]
    err = np.array([[v["mean"] - v["lo"], v["hi"] - v["mean"]] for v in acc]).T
    ax.bar(range(len(keys)), mean, yerr=np.nan_to_num(err), color="C2")
    ax.set_xticks(
      range(len(keys)), [k.split("_", 1)[-1] for k in keys], rotation=45
    )
    ax.set(ylabel="reasoning accuracy (level IV)", title=title)
    ax2 = ax.twinx()
    ax2.plot(
      range(len(keys)),
      [models_[k]["grammar_ppl"]["mean"] for k in keys],
      "ko",
      ms=4,
    )
    ax2.set_ylabel("grammar perplexity (dots)")
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "merge_freeze.png"), dpi=120)

  d = results["destruction"]
  grid = np.array(
    [
      [
        d[f"{m}/layer{li}"]["reasoning_accuracy"]["mean"]
        for li in range(layers)
      ]
      for m in SINGLE
    ]
  )
  fig, ax = plt.subplots(figsize=(3 + layers, 3.4))
  im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
  ax.set_yticks(range(len(SINGLE)), SINGLE)
  ax.set_xticks(range(layers), [f"layer {li}" for li in range(layers)])
  ax.set_title("B's reasoning accuracy, one module zeroed")
  fig.colorbar(im)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "destruction.png"), dpi=120)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
