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
    ConfigError: the path does not exist or holds no text.
  """
  if not path:
    return _read_dir(stdlib_dir(), max_bytes, (".py",))
  if not os.path.exists(path):
    raise errors.ConfigError(f"text corpus path {path!r} does not exist")
  if os.path.isdir(path):
    return _read_dir(path, max_bytes, TEXT_SUFFIXES)
  if path.endswith((".npy", ".npz")):
    arr = np.load(path)
    if isinstance(arr, np.lib.npyio.NpzFile):
      arr = arr[arr.files[0]]
    arr = np.asarray(arr).reshape(-1)
    if arr.size and (arr.min() < 0 or arr.max() >= VOCAB_SIZE):
      raise errors.ConfigError(
        f"token file {path!r} holds ids outside [0, {VOCAB_SIZE})"
      )
    tokens = arr.astype(np.uint8)
  else:
    with open(path, "rb") as f:
      tokens = np.frombuffer(f.read(), np.uint8)
  return tokens[:max_bytes] if max_bytes else tokens


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
  """Random windows [batch_size, seq_len + 1] (int32); jittable, on device."""
  n = tokens.shape[0]
  if n <= seq_len + 1:
    raise errors.ShapeError(f"corpus of {n} tokens is shorter than seq_len + 1")
  starts = jax.random.randint(key, (batch_size,), 0, n - seq_len - 1)
  take = lambda s: jax.lax.dynamic_slice(tokens, (s,), (seq_len + 1,))
  return jax.vmap(take)(starts).astype(jnp.int32)


def eval_windows(
  tokens: np.ndarray, seq_len: int, max_windows: int
) -> np.ndarray:
  """Non-overlapping windows [n, seq_len + 1] from the start of `tokens`."""
  n = min(max_windows, (len(tokens) - 1) // seq_len)
  if n < 1:
    raise errors.ShapeError(
      f"validation split of {len(tokens)} tokens is shorter than seq_len + 1"
    )
  idx = np.arange(n)[:, None] * seq_len + np.arange(seq_len + 1)[None, :]
  return tokens[idx].astype(np.int32)
