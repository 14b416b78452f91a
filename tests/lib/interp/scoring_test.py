"""SfN scoring: the teacher-forced level-IV identity, perplexity, the grades."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import models
from lib.core import errors
from lib.interp import scoring
from lib.interp import tasks


def test_teacher_forced_exact_match_is_greedy_level_iv(fast_compile):
  """Gold = the model's own greedy continuation: exact match 1; one token
  changed: 0 for that problem (the induction `exact_match` relies on)."""
  digits = 3
  llama = models.Llama(
    models.LlamaConfig(
      vocab_size=tasks.VOCAB_SIZE,
      d_model=32,
      n_layers=1,
      n_heads=4,
      mlp_hidden=64,
      max_len=tasks.sequence_length(digits),
      linear="dense",
      split_projections=True,
    )
  )
  params = llama.init(jax.random.key(0), np.zeros((1, 4), np.int32))
  ops = tasks.addition_operands(6, digits, seed=0)
  prompts = tasks.prompts(ops, digits)
  total = tasks.sequence_length(digits)
  cont = np.asarray(
    jax.jit(scoring.greedy_generate, static_argnums=(0, 3))(
      llama.apply, params, prompts, total
    )
  )
  p = prompts.shape[1]
  gold = np.concatenate([prompts, cont], axis=1)
  mask = np.zeros((6, gold.shape[1] - 1), np.float32)
  mask[:, p - 1 :] = 1.0
  match = jax.jit(scoring.exact_match, static_argnums=0)
  assert float(match(llama.apply, params, gold, mask)) == 1.0
  gold[2, p + 3] = (gold[2, p + 3] + 1) % tasks.VOCAB_SIZE
  assert float(match(llama.apply, params, gold, mask)) == pytest.approx(5 / 6)


def test_perplexity_of_uniform_logits_is_the_vocabulary_size():
  vocab = 7
  uniform = lambda params, tokens: jnp.zeros(tokens.shape + (vocab,))
  tokens = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.int32)
  mask = np.array([[1, 1, 0], [0, 1, 1]], np.float32)
  ppl = scoring.perplexity(uniform, None, tokens, mask)
  np.testing.assert_allclose(ppl, vocab, rtol=1e-6)


def test_perplexity_of_an_empty_mask_is_an_error():
  # exp(mean NLL over no token) is undefined, not exp(0) = 1.
  uniform = lambda params, tokens: jnp.zeros(tokens.shape + (7,))
  tokens = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.int32)
  with pytest.raises(errors.ConfigError, match="mask selects no token"):
    scoring.perplexity(uniform, None, tokens, np.zeros((2, 3), np.float32))
  # Traced (as the experiment's vmap over seeds), the mask is not read.
  ppl = jax.jit(lambda m: scoring.perplexity(uniform, None, tokens, m))(
    np.ones((2, 3), np.float32)
  )
  np.testing.assert_allclose(ppl, 7.0, rtol=1e-6)


def test_graded_and_bands_count_the_levels_of_each_seed():
  digits = 3
  ops = np.array([[123, 989], [500, 500]])
  p = tasks.prompt_length(digits)
  right = [tasks.format_addition(a, b, digits, True)[p:] for a, b in ops]
  width = len(right[0])
  direct = [tasks.format_addition(a, b, digits, False)[p:] for a, b in ops]
  direct = [x + [tasks.PAD] * (width - len(x)) for x in direct]
  # Seed 0: both level IV; seed 1: both level III (direct, right answer).
  g = scoring.graded(np.array([right, direct]), ops, digits)
  np.testing.assert_array_equal(g["level_iv_generated"], [1.0, 0.0])
  np.testing.assert_array_equal(g["answer_accuracy"], [1.0, 1.0])
  np.testing.assert_array_equal(g["levels"], [[0, 0, 0, 1], [0, 0, 1, 0]])
  b = scoring.bands({**g, "reasoning_accuracy": np.array([1.0, 0.0])})
  assert b["levels"] == {"I": 0.0, "II": 0.0, "III": 0.5, "IV": 0.5}
  assert b["reasoning_accuracy"]["mean"] == 0.5
  assert "grammar_ppl" not in b
