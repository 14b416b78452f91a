"""Byte-level text corpora with no downloads: the Python stdlib's own sources.

Tokens are bytes (vocabulary 256). The default corpus concatenates the `.py`
files of the running interpreter's standard library in sorted relative-path
order (deterministic for a given Python version), separated by a newline. A
user points `path` at a directory of text files (*.txt, *.md, *.py, *.rst,
read in sorted order), a single text file, or a token file (.npy/.npz holding
one integer array, used as is).

References:
  Castro et al., "Quartet", NeurIPS 2025 (the language-modelling setup this
  corpus stands in for: C4 there, stdlib bytes here).
"""

import os
import sysconfig

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import rng

TEXT_SUFFIXES = (".txt", ".md", ".py", ".rst")
VOCAB_SIZE = 256


def stdlib_dir() -> str:
  """The standard library directory of the running interpreter."""
  return sysconfig.get_paths()["stdlib"]


def _text_files(root: str, suffixes) -> list[str]:
  files = []
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d != "site-packages")
    files += [
      os.path.join(dirpath, f) for f in filenames if f.endswith(suffixes)
    ]
  return sorted(files, key=lambda p: os.path.relpath(p, root))


def _read_dir(root: str, max_bytes: int, suffixes) -> np.ndarray:
  chunks, total = [], 0
  for path in _text_files(root, suffixes):
    with open(path, "rb") as f:
      data = f.read() + b"\n"
    chunks.append(data)
    total += len(data)
    if max_bytes and total >= max_bytes:
      break
  if not chunks:
    raise errors.ConfigError(
      f"no text files ({'/'.join(suffixes)}) under {root!r}"
    )
  tokens = np.frombuffer(b"".join(chunks), np.uint8)
  return tokens[:max_bytes] if max_bytes else tokens


def load_corpus(path: str = "", max_bytes: int = 0) -> np.ndarray:
  """Byte tokens (np.uint8 [n]) of the stdlib sources or of `path`.

  Args:
    path: "" for the stdlib `.py` sources; else a directory of text files, a
      text file, or a .npy/.npz token file (integers < 256 for this vocab).
    max_bytes: keep only the first max_bytes tokens (0: all).

  Raises:
    ConfigError: the path does not exist, is an empty file or holds no text,
      or max_bytes < 0.
  """
  errors.check(
    max_bytes >= 0,
    errors.ConfigError,
    f"max_bytes must be >= 0 (0: all), got {max_bytes}",
  )
  if not path:
    return _read_dir(stdlib_dir(), max_bytes, (".py",))
  if not os.path.exists(path):
    raise errors.ConfigError(f"text corpus path {path!r} does not exist")
  if os.path.isdir(path):
    return _read_dir(path, max_bytes, TEXT_SUFFIXES)
  if path.endswith((".npy", ".npz")):
    tokens = load_token_file(path)
  else:
    with open(path, "rb") as f:
      tokens = np.frombuffer(f.read(), np.uint8)
    errors.check(
      tokens.size > 0,
      errors.ConfigError,
      f"text corpus path {path!r} is an empty file",
    )
  return tokens[:max_bytes] if max_bytes else tokens


def load_token_file(path: str) -> np.ndarray:
  """Token ids (np.uint8 [n]) of a .npy/.npz file holding one integer array.

  Floats are accepted only when every value is a whole number (e.g. ids saved
  as float32); NaN, inf, fractions, negative ids or ids >= 256 are refused,
  never cast.

  Raises:
    ConfigError: the file cannot be read, is empty, or holds values that are
      not token ids of this vocabulary.
  """
  try:
    with open(path, "rb") as fh:  # np.load leaks its own on a damaged zip
      arr = np.load(fh, allow_pickle=False)
      if isinstance(arr, np.lib.npyio.NpzFile):
        with arr:
          if len(arr.files) != 1:
            raise errors.ConfigError(
              f"token file {path!r} holds {len(arr.files)} arrays "
              f"{arr.files}; expected one array of token ids"
            )
          arr = arr[arr.files[0]]
  except errors.ConfigError:
    raise
  except errors.NPY_READ_ERRORS as e:
    first = errors.npy_read_reason(e)
    raise errors.ConfigError(
      f"token file {path!r} is not a readable .npy/.npz array ({first})"
    ) from None
  arr = np.asarray(arr).reshape(-1)
  errors.check(
    arr.size > 0, errors.ConfigError, f"token file {path!r} holds no tokens"
  )
  kind = arr.dtype.kind
  errors.check(
    kind in "iuf",
    errors.ConfigError,
    f"token file {path!r} holds {arr.dtype} values, not integer token ids",
  )
  if kind == "f":
    finite = np.isfinite(arr)
    if not finite.all():
      i = int(np.argmin(finite))
      raise errors.ConfigError(
        f"token file {path!r} holds a non-finite value ({arr[i]}) at index "
        f"{i}; token ids must be integers"
      )
    whole = arr == np.round(arr)
    if not whole.all():
      i = int(np.argmin(whole))
      raise errors.ConfigError(
        f"token file {path!r} holds a non-integer value ({arr[i]}) at index "
        f"{i}; token ids must be integers"
      )
  lo, hi = arr.min(), arr.max()
  errors.check(
    lo >= 0 and hi < VOCAB_SIZE,
    errors.ConfigError,
    f"token file {path!r} holds ids outside [0, {VOCAB_SIZE}) "
    f"(min {lo}, max {hi})",
  )
  return arr.astype(np.uint8)


def train_val_split(
  tokens: np.ndarray, val_fraction: float
) -> tuple[np.ndarray, np.ndarray]:
  """Contiguous split: the last `val_fraction` of the stream is validation."""
  if not 0.0 < val_fraction < 1.0:
    raise errors.ConfigError(f"val_fraction={val_fraction} must be in (0, 1)")
  cut = int(len(tokens) * (1.0 - val_fraction))
  return tokens[:cut], tokens[cut:]


def sample_windows(
  tokens: jax.Array, key: jax.Array, batch_size: int, seq_len: int
) -> jax.Array:
  """Windows [batch_size, seq_len + 1] (int32) at uniform random starts,
  drawn with replacement at every step (the official DataReader's
  `with_replacement=True`; `epoch_windows` is its default). Jittable."""
  n = tokens.shape[0]
  if n <= seq_len + 1:
    raise errors.ShapeError(f"corpus of {n} tokens is shorter than seq_len + 1")
  starts = jax.random.randint(key, (batch_size,), 0, n - seq_len - 1)
  take = lambda s: jax.lax.dynamic_slice(tokens, (s,), (seq_len + 1,))
  return jax.vmap(take)(starts).astype(jnp.int32)


WINDOW_SAMPLINGS = ("epoch", "random")


def epoch_window_count(num_tokens: int, seq_len: int) -> int:
  """Windows in an epoch of `epoch_windows`: the official DataReader's
  (num_tokens - seq_len - 1) // seq_len - 1 (one dropped, so that a
  per-epoch offset < seq_len keeps the last one inside the stream)."""
  return (num_tokens - seq_len - 1) // seq_len - 1


def epoch_windows(
  tokens: jax.Array, key: jax.Array, step, batch_size: int, seq_len: int
) -> jax.Array:
  """Windows [batch_size, seq_len + 1] (int32) of batch `step`, sampled as
  Quartet's DataReader does without replacement (src/data/utils.py, the
  official default `with_replacement=False`).

  Epoch e cuts the stream into `epoch_window_count` non-overlapping windows
  starting at multiples of seq_len, all shifted by one offset drawn in
  [0, seq_len) for that epoch, and visits them in a random order in whole
  batches (the remainder batch is dropped); no window repeats within an
  epoch. Stateless (`lib.core.rng.epoch_indices`, drop_remainder=True):
  `key` is the run's, the same at every step, and a resumed run draws the
  same batches. Jittable, on device.
  """
  num_windows = epoch_window_count(tokens.shape[0], seq_len)
  if num_windows < batch_size:
    raise errors.ShapeError(
      f"a corpus of {tokens.shape[0]} tokens holds {max(num_windows, 0)} "
      f"windows of seq_len {seq_len}, fewer than one batch of {batch_size}"
    )
  step = jnp.asarray(step, jnp.int32)
  order_key, offset_key = jax.random.split(key)
  order = rng.epoch_indices(
    order_key, step, num_windows, batch_size, drop_remainder=True
  )
  epoch = step // (num_windows // batch_size)
  offset = jax.random.randint(
    jax.random.fold_in(offset_key, epoch), (), 0, seq_len
  )
  starts = order * seq_len + offset
  take = lambda s: jax.lax.dynamic_slice(tokens, (s,), (seq_len + 1,))
  return jax.vmap(take)(starts).astype(jnp.int32)


def eval_windows(
  tokens: np.ndarray, seq_len: int, max_windows: int
) -> np.ndarray:
  """Non-overlapping windows [n, seq_len + 1] from the start of `tokens`."""
  errors.check(
    seq_len >= 1, errors.ConfigError, f"seq_len must be >= 1, got {seq_len}"
  )
  n = min(max_windows, (len(tokens) - 1) // seq_len)
  if n < 1:
    raise errors.ShapeError(
      f"validation split of {len(tokens)} tokens is shorter than seq_len + 1"
    )
  idx = np.arange(n)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
  return tokens[idx].astype(np.int32)
