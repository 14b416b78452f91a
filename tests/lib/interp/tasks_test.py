"""lib.interp.tasks: the readable text of token sequences."""

from lib.interp import tasks


def test_detokenize_spells_digits_symbols_and_words_and_drops_padding():
  word = next(iter(tasks.VOCAB))
  tokens = [
    tasks.BOS,
    tasks.DIGIT0 + 4,
    tasks.DIGIT0 + 2,
    tasks.PLUS,
    tasks.DIGIT0 + 7,
    tasks.EQUALS,
    tasks.VOCAB[word],
    tasks.EOS,
    tasks.PAD,
    tasks.PAD,
  ]
  assert tasks.detokenize(tokens) == f"<s> 4 2 + 7 = {word} </s>"
  assert tasks.detokenize([tasks.VOCAB_SIZE + 5]) == f"<{tasks.VOCAB_SIZE + 5}>"
