"""Synthetic "conversation" and "reasoning" data for the SfN tiny-model protocol.

The paper's base model A converses fluently but reasons weakly; B is A
fine-tuned on long reasoning traces. Ours (spec: extended_papers.md 8):

- conversation: sentences of a small probabilistic grammar with number
  agreement (`grammar_sentences`): "the old dog sees a cat ." / "dogs run ;
  the cat sleeps ."; fluency is the perplexity of held-out sentences.
- reasoning: n-digit addition. The prompt interleaves the operands' digits,
  least-significant first: `BOS a0 b0 a1 b1 ... =`. The direct format (what
  A sees) answers at once, `> s0 s1 ... sn EOS`; the scratchpad format (what
  B learns) writes the carry chain, `c0 s0 c1 s1 ... c(n-1) s(n-1) cn EOS`
  with carry-in c_i and sum digit s_i, the answer being s0..s(n-1) cn. A
  scratchpad step has the stride of an operand pair, so each step reads its
  digits at a fixed distance back, while a direct answer digit must find
  its pair at a distance that changes with i and resolve the carries
  without writing them. Every token of both formats occurs in A's data.

`grade` sorts a generated continuation into the paper's levels I-IV
(ours, made concrete for addition): I malformed, II well-formed with a wrong
answer, III right answer without a complete correct carry chain (e.g. a
direct answer), IV every carry and digit of the chain right.
"""

import numpy as np

from lib.core import errors

PAD, BOS, EOS = 0, 1, 2
DIGIT0 = 3  # digits 0..9 are tokens 3..12
PLUS, EQUALS, SEMI, ANSWER, STOP = 13, 14, 15, 16, 17
_SYMBOLS = {PLUS: "+", EQUALS: "=", SEMI: ";", ANSWER: ">", STOP: "."}
_DET_SG = ("the", "a", "this", "every")
_DET_PL = ("the", "some", "these", "many")
_NOUNS = ("dog", "cat", "bird", "child", "farmer", "robot", "teacher", "fox")
_ADJ = ("old", "small", "happy", "red", "quiet", "clever")
_VT_SG = ("sees", "likes", "follows", "helps", "finds")
_VT_PL = ("see", "like", "follow", "help", "find")
_VI_SG = ("runs", "sleeps", "waits", "sings")
_VI_PL = ("run", "sleep", "wait", "sing")
_PREP = ("near", "with", "behind")
_WORDS = tuple(
  dict.fromkeys(
    _DET_SG
    + _DET_PL
    + _NOUNS
    + tuple(n + "s" for n in _NOUNS)
    + _ADJ
    + _VT_SG
    + _VT_PL
    + _VI_SG
    + _VI_PL
    + _PREP
  )
)
WORD0 = 18
VOCAB = {w: WORD0 + i for i, w in enumerate(_WORDS)}
VOCAB_SIZE = WORD0 + len(_WORDS)
LEVELS = ("I", "II", "III", "IV")


def detokenize(tokens) -> str:
  """Readable text of a token sequence (PAD dropped)."""
  inv = {v: k for k, v in VOCAB.items()}
  out = []
  for t in np.asarray(tokens).tolist():
    if t == PAD:
      continue
    if t == BOS:
      out.append("<s>")
    elif t == EOS:
      out.append("</s>")
    elif DIGIT0 <= t < DIGIT0 + 10:
      out.append(str(t - DIGIT0))
    elif t in _SYMBOLS:
      out.append(_SYMBOLS[t])
    else:
      out.append(inv.get(t, f"<{t}>"))
  return " ".join(out)


# ----------------------------------------------------------------------------
# Conversation: a probabilistic grammar with number agreement.
# ----------------------------------------------------------------------------


def _noun_phrase(rng, plural):
  det = rng.choice(_DET_PL if plural else _DET_SG)
  words = [det]
  if rng.random() < 0.4:
    words.append(rng.choice(_ADJ))
  noun = rng.choice(_NOUNS)
  words.append(noun + "s" if plural else noun)
  return words


def _clause(rng):
  plural = rng.random() < 0.5
  words = _noun_phrase(rng, plural)
  if rng.random() < 0.6:
    words.append(rng.choice(_VT_PL if plural else _VT_SG))
    words += _noun_phrase(rng, rng.random() < 0.5)
  else:
    words.append(rng.choice(_VI_PL if plural else _VI_SG))
  if rng.random() < 0.25:
    words.append(rng.choice(_PREP))
    words += _noun_phrase(rng, rng.random() < 0.5)
  return [VOCAB[w] for w in words]


def grammar_sentences(n: int, seq_len: int, seed: int):
  """n sequences `BOS clause (; clause)* . EOS PAD...` of length seq_len + 1.

  Returns (tokens [n, seq_len + 1] int32, loss mask [n, seq_len] float32 over
  the predicted positions: every real token after BOS).
  """
  rng = np.random.default_rng(seed)
  tokens = np.zeros((n, seq_len + 1), np.int32)
  for i in range(n):
    seq = [BOS] + _clause(rng)
    while rng.random() < 0.3:
      nxt = [SEMI] + _clause(rng)
      if len(seq) + len(nxt) + 2 > seq_len + 1:
        break
      seq += nxt
    seq += [STOP, EOS]
    seq = seq[: seq_len + 1]
    tokens[i, : len(seq)] = seq
  mask = (tokens[:, 1:] != PAD).astype(np.float32)
  return tokens, mask


# ----------------------------------------------------------------------------
# Reasoning: addition with and without a scratchpad.
# ----------------------------------------------------------------------------


def prompt_length(digits: int) -> int:
  """BOS, the interleaved digit pairs, =."""
  return 2 * digits + 2


def sequence_length(digits: int) -> int:
  """Tokens of the longest (scratchpad) example, BOS through EOS."""
  return prompt_length(digits) + 2 * digits + 2


def _digits_lsb(x: int, n: int) -> list:
  return [(x // 10**i) % 10 for i in range(n)]


def addition_operands(n: int, digits: int, seed: int):
  """[n, 2] operands, uniform on [0, 10^digits)."""
  errors.check(digits >= 1, errors.ConfigError, f"digits={digits} must be >= 1")
  rng = np.random.default_rng(seed)
  return rng.integers(0, 10**digits, size=(n, 2))


def format_addition(a: int, b: int, digits: int, scratchpad: bool) -> list:
  """BOS a0 b0 .. = then `c0 s0 .. cn EOS` (scratchpad) or `> s0 .. sn EOS`."""
  da, db = _digits_lsb(a, digits), _digits_lsb(b, digits)
  seq = [BOS]
  for x, y in zip(da, db):
    seq += [DIGIT0 + x, DIGIT0 + y]
  seq.append(EQUALS)
  if scratchpad:
    carry = 0
    for x, y in zip(da, db):
      s = x + y + carry
      seq += [DIGIT0 + carry, DIGIT0 + s % 10]
      carry = s // 10
    seq.append(DIGIT0 + carry)
  else:
    seq.append(ANSWER)
    seq += [DIGIT0 + d for d in _digits_lsb(a + b, digits + 1)]
  seq.append(EOS)
  return seq


def addition_examples(operands, digits: int, seq_len: int, scratchpad: bool):
  """Tokens [n, seq_len + 1] and a loss mask [n, seq_len] on the answer part.

  The prompt's digits are random and carry nothing to learn, so the loss
  covers only what follows `=`.
  """
  need = sequence_length(digits)
  errors.check(
    seq_len + 1 >= need,
    errors.ConfigError,
    f"seq_len={seq_len} is too short for {digits}-digit addition "
    f"(needs {need - 1})",
  )
  n = len(operands)
  tokens = np.zeros((n, seq_len + 1), np.int32)
  mask = np.zeros((n, seq_len), np.float32)
  p = prompt_length(digits)
  for i, (a, b) in enumerate(np.asarray(operands).tolist()):
    seq = format_addition(a, b, digits, scratchpad)
    tokens[i, : len(seq)] = seq
    mask[i, p - 1 : len(seq) - 1] = 1.0  # predicting tokens p .. end
  return tokens, mask


def prompts(operands, digits: int) -> np.ndarray:
  """[n, prompt_length] prompt tokens BOS a + b =."""
  out = [
    format_addition(a, b, digits, scratchpad=False)[: prompt_length(digits)]
    for a, b in np.asarray(operands).tolist()
  ]
  return np.asarray(out, np.int32)


def grade_one(continuation, a: int, b: int, digits: int) -> tuple:
  """(level 1..4, response length) of one generated continuation after '='."""
  toks = list(np.asarray(continuation).tolist())
  length = toks.index(EOS) + 1 if EOS in toks else len(toks)
  toks = toks[:length]
  is_digit = lambda t: DIGIT0 <= t < DIGIT0 + 10
  if not toks or toks[-1] != EOS:
    return 1, length
  body = toks[:-1]
  if body and body[0] == ANSWER:  # direct: > s0 .. sn
    answer = body[1:]
    if len(answer) != digits + 1 or not all(is_digit(t) for t in answer):
      return 1, length
    value = sum((t - DIGIT0) * 10**i for i, t in enumerate(answer))
    return (3 if value == a + b else 2), length
  if len(body) != 2 * digits + 1 or not all(is_digit(t) for t in body):
    return 1, length
  sums = body[1 : 2 * digits : 2] + [body[-1]]  # s0 .. s(n-1), cn
  value = sum((t - DIGIT0) * 10**i for i, t in enumerate(sums))
  want = format_addition(a, b, digits, scratchpad=True)[prompt_length(digits) :]
  if toks == want:
    return 4, length
  return (3 if value == a + b else 2), length


def grade(continuations, operands, digits: int):
  """Levels [n] (1..4) and response lengths [n]; deterministic, host-side."""
  out = [
    grade_one(c, a, b, digits)
    for c, (a, b) in zip(
      np.asarray(continuations), np.asarray(operands).tolist()
    )
  ]
  levels = np.asarray([o[0] for o in out], np.int32)
  lengths = np.asarray([o[1] for o in out], np.int32)
  return levels, lengths


def protocol_data(
  digits: int,
  seed: int,
  *,
  grammar_train: int,
  grammar_val: int,
  addition_train: int,
  test_problems: int,
) -> dict:
  """The tiny-model protocol's host pools, (tokens, mask) pairs and operands.

  "grammar" (training sentences) and "val" (held out: fluency); "direct" and
  "scratch": the same `addition_train` operand pairs answered directly (model
  A's task) or with the scratchpad (B's); "test": `test_problems` held-out
  problems with the scratchpad (the level-IV target), their "test_prompts"
  and "test_operands". Pools use the streams seed, seed + 1, ... + 3.
  """
  seq_len = sequence_length(digits) - 1
  ops = addition_operands(addition_train, digits, seed + 2)
  test_ops = addition_operands(test_problems, digits, seed + 3)
  return {
    "test": addition_examples(test_ops, digits, seq_len, scratchpad=True),
    "grammar": grammar_sentences(grammar_train, seq_len, seed),
    "direct": addition_examples(ops, digits, seq_len, scratchpad=False),
    "scratch": addition_examples(ops, digits, seq_len, scratchpad=True),
    "val": grammar_sentences(grammar_val, seq_len, seed + 1),
    "test_prompts": prompts(test_ops, digits),
    "test_operands": test_ops,
  }
