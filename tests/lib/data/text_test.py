"""The byte-level stdlib corpus: deterministic, splittable, user paths."""

import jax
import numpy as np
import pytest

from lib.core import errors
from lib.data import text


def test_stdlib_corpus_is_deterministic_python_source():
  a = text.load_corpus(max_bytes=50_000)
  b = text.load_corpus(max_bytes=50_000)
  assert a.dtype == np.uint8 and a.shape == (50_000,)
  np.testing.assert_array_equal(a, b)
  assert b"import" in a.tobytes() or b"def " in a.tobytes()


def test_user_dir_file_and_token_file(tmp_path):
  (tmp_path / "b.txt").write_bytes(b"world")
  (tmp_path / "a.txt").write_bytes(b"hello ")
  (tmp_path / "skip.bin").write_bytes(b"xxxx")
  np.testing.assert_array_equal(
    text.load_corpus(str(tmp_path)), np.frombuffer(b"hello \nworld\n", np.uint8)
  )
  np.testing.assert_array_equal(
    text.load_corpus(str(tmp_path / "a.txt")),
    np.frombuffer(b"hello ", np.uint8),
  )
  np.save(tmp_path / "tok.npy", np.arange(10))
  np.testing.assert_array_equal(
    text.load_corpus(str(tmp_path / "tok.npy")), np.arange(10)
  )
  np.save(tmp_path / "bad.npy", np.array([300]))
  with pytest.raises(errors.ConfigError, match="outside"):
    text.load_corpus(str(tmp_path / "bad.npy"))
  with pytest.raises(errors.ConfigError, match="does not exist"):
    text.load_corpus(str(tmp_path / "missing"))


def test_split_and_windows():
  tokens = np.arange(1000) % 256
  train, val = text.train_val_split(tokens.astype(np.uint8), 0.1)
  assert len(train) == 900 and len(val) == 100 and val[0] == 900 % 256
  w = text.sample_windows(jax.numpy.asarray(tokens), jax.random.key(0), 4, 16)
  assert w.shape == (4, 17)
  np.testing.assert_array_equal(np.diff(np.asarray(w), axis=1) % 256, 1)
  ev = text.eval_windows(tokens, 16, 3)
  assert ev.shape == (3, 17) and ev[1, 0] == 16
  with pytest.raises(errors.ConfigError, match="val_fraction"):
    text.train_val_split(tokens, 1.5)


def test_epoch_windows_follow_the_official_reader_without_replacement():
  # Quartet's DataReader(with_replacement=False): an epoch of 1000 tokens
  # and seq_len 16 holds (1000 - 17) // 16 - 1 = 60 windows, 7 batches of
  # 8 (the remainder of 4 dropped), all starting at one offset mod 16,
  # none repeated; the next epoch has a new order and offset.
  tokens = jax.numpy.asarray(np.arange(1000, dtype=np.int32))
  assert text.epoch_window_count(1000, 16) == 60
  key = jax.random.key(2)
  draw = jax.jit(lambda s: text.epoch_windows(tokens, key, s, 8, 16))
  epochs = []
  for e in range(3):
    w = np.concatenate([np.asarray(draw(7 * e + b)) for b in range(7)])
    starts = w[:, 0]
    # Each window is seq_len + 1 consecutive tokens inside the stream.
    np.testing.assert_array_equal(w, starts[:, None] + np.arange(17))
    assert w.max() < 1000 and len(set(starts.tolist())) == 56
    assert len(set((starts % 16).tolist())) == 1
    epochs.append(starts)
  assert len({tuple(e) for e in epochs}) == 3
  with pytest.raises(errors.ShapeError, match="fewer than one batch of 8"):
    text.epoch_windows(tokens[:100], key, 0, 8, 16)


def test_bad_user_input_is_a_one_line_config_error(tmp_path):
  # A damaged .npz (zip magic, then garbage) raised zipfile.BadZipFile from
  # deep inside numpy; a negative max_bytes silently dropped the last bytes
  # (tokens[:-5]); seq_len 0 divided by zero.
  (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04garbage")
  with pytest.raises(errors.ConfigError, match="bad.npz.*not a readable"):
    text.load_corpus(str(tmp_path / "bad.npz"))
  (tmp_path / "a.txt").write_bytes(b"hello world")
  with pytest.raises(errors.ConfigError, match="max_bytes"):
    text.load_corpus(str(tmp_path / "a.txt"), max_bytes=-5)
  with pytest.raises(errors.ConfigError, match="seq_len"):
    text.eval_windows(np.arange(100), 0, 3)
  # An empty text file was "validation split of 0 tokens is shorter than
  # seq_len + 1", naming neither the file nor that it is empty.
  (tmp_path / "empty.txt").write_bytes(b"")
  with pytest.raises(errors.ConfigError, match="empty.txt' is an empty file"):
    text.load_corpus(str(tmp_path / "empty.txt"))


def test_token_npz_must_hold_exactly_one_array(tmp_path):
  # An .npz of several arrays silently used the first (here the labels);
  # an empty one said "holds no array" wrapped in "not a readable array".
  np.savez(tmp_path / "two.npz", labels=np.zeros(5), tokens=np.arange(5))
  with pytest.raises(errors.ConfigError, match=r"holds 2 arrays"):
    text.load_corpus(str(tmp_path / "two.npz"))
  np.savez(tmp_path / "none.npz")
  with pytest.raises(errors.ConfigError, match=r"^token file '.*' holds 0"):
    text.load_corpus(str(tmp_path / "none.npz"))
  np.savez(tmp_path / "one.npz", tokens=np.arange(5))
  np.testing.assert_array_equal(
    text.load_corpus(str(tmp_path / "one.npz")), np.arange(5)
  )
