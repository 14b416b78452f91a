"""Scoring a causal language model on the SfN tasks (`lib.interp.tasks`).

Shao & Wu ("Who Reasons in the Large Language Models?", NeurIPS 2025, arXiv
2505.20993) grade a model's answers in four levels (I: no usable answer ...
IV: right answer with every reasoning step right) and watch its fluency. For
the tiny-model protocol (spec: extended_papers.md section 8):

- `exact_match`: the level-IV rate in ONE teacher-forced forward pass. Greedy
  decoding reproduces the gold continuation iff at every gold position the
  gold token is the argmax given the gold prefix (induction over positions),
  so this equals the level-IV fraction of greedy generation.
- `greedy_generate`: the continuation itself, graded on the host by `graded`
  (levels I-IV, answer accuracy, response length).
- `perplexity`: exp of the masked token cross-entropy (fluency on grammar).

`apply_fn(params, tokens [n, L]) -> logits [n, L, V]` is any causal LM's
apply; every function is pure and jittable (vmap it over a stack of seeds).
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import losses
from lib.core import stats
from lib.interp import tasks


def greedy_generate(apply_fn, params, prompts, total_len: int) -> jax.Array:
  """[n, total_len - p] greedy continuations of `prompts` [n, p] (int32)."""
  n, p = prompts.shape
  buf = jnp.zeros((n, total_len), jnp.int32).at[:, :p].set(prompts)

  def body(t, buf):
    logits = apply_fn(params, buf)
    nxt = jnp.argmax(
      jax.lax.dynamic_index_in_dim(logits, t - 1, 1, keepdims=False), -1
    )
    return jax.lax.dynamic_update_index_in_dim(buf, nxt.astype(jnp.int32), t, 1)

  return jax.lax.fori_loop(p, total_len, body, buf)[:, p:]


def perplexity(apply_fn, params, tokens, mask) -> jax.Array:
  """exp(mean next-token NLL) over `mask` [n, L-1] of `tokens` [n, L].

  Raises:
    ConfigError: a concrete `mask` with no nonzero entry (no token to score
      has no perplexity; the masked mean would read 0, so exp gives 1.0).
  """
  if errors.is_concrete(mask) and not np.any(np.asarray(mask)):
    raise errors.ConfigError(
      "perplexity: mask selects no token (all zero); an empty mask has no"
      " perplexity"
    )
  logits = apply_fn(params, tokens[:, :-1])
  return jnp.exp(losses.masked_cross_entropy(logits, tokens[:, 1:], mask))


def exact_match(apply_fn, params, tokens, mask) -> jax.Array:
  """Fraction of rows whose every masked next token is the argmax.

  With `mask` on the answer after the prompt, this is greedy decoding's
  level-IV rate (see the module docstring).
  """
  pred = jnp.argmax(apply_fn(params, tokens[:, :-1]), -1)
  ok = (pred == tokens[:, 1:]) | (mask == 0)
  return jnp.mean(jnp.all(ok, axis=-1))


def graded(continuations, operands, digits: int) -> dict:
  """Host-side grades of [S, n, T] continuations (S seeds), each [S].

  answer_accuracy (level >= III), level_iv_generated, levels [S, 4] (the
  fraction at each of I-IV) and the mean response_length.
  """
  grades = [tasks.grade(c, operands, digits) for c in np.asarray(continuations)]
  levels = np.stack([g[0] for g in grades])
  return {
    "answer_accuracy": (levels >= 3).mean(1),
    "level_iv_generated": (levels == 4).mean(1),
    "levels": np.stack([(levels == i).mean(1) for i in (1, 2, 3, 4)], 1),
    "response_length": np.stack([g[1] for g in grades]).mean(1),
  }


def bands(scores: dict) -> dict:
  """Seed bands (`stats.band`) of per-seed scores ({name: [S]}) as above;
  "levels" [S, 4] becomes the seed-mean fraction at each of I-IV."""
  out = {
    k: stats.band(scores[k])
    for k in (
      "reasoning_accuracy",
      "reasoning_nll",
      "grammar_ppl",
      "answer_accuracy",
      "level_iv_generated",
      "response_length",
    )
    if k in scores
  }
  if "levels" in scores:
    levels = np.asarray(scores["levels"])
    out["levels"] = {
      lv: float(levels[:, i].mean()) for i, lv in enumerate(tasks.LEVELS)
    }
  return out
