"""Time-series classification data: a planted sine burst and bundled UCR sets.

The synthetic task (spec: extended_papers.md 5): noisy series of length n;
class 1 carries a sine burst of `cycles` cycles inside the fixed window
[start, start + width). GunPoint and ItalyPowerDemand (UCR archive) are read
from the .ts files the `sktime` wheel bundles (sktime/datasets/data/...); the
package is located, not imported, and nothing is downloaded.
"""

import importlib.util
import os

import numpy as np

from lib.core import errors

UCR = ("GunPoint", "ItalyPowerDemand")


def sine_burst(
  seed: int,
  num: int,
  length: int = 128,
  start: int = 48,
  width: int = 24,
  cycles: float = 4.0,
  noise: float = 0.5,
):
  """(x [num, length], y [num], window mask [length]) of the planted task."""
  errors.check(
    0 <= start and start + width <= length,
    errors.ConfigError,
    f"burst window [{start}, {start + width}) is outside a length-{length} series",
  )
  rng = np.random.default_rng(seed)
  y = rng.integers(0, 2, num)
  x = noise * rng.standard_normal((num, length))
  t = np.arange(width)
  burst = np.sin(2 * np.pi * cycles * t / width) * np.hanning(width) * 2.0
  x[y == 1, start : start + width] += burst
  window = np.zeros(length, bool)
  window[start : start + width] = True
  return x.astype(np.float32), y.astype(np.int32), window


def ucr_dir() -> str | None:
  """sktime's bundled dataset folder, or None when sktime is not installed."""
  spec = importlib.util.find_spec("sktime")
  if spec is None or not spec.submodule_search_locations:
    return None
  return os.path.join(
    list(spec.submodule_search_locations)[0], "datasets", "data"
  )


def read_ts(path: str):
  """(x [N, n], labels [N] str) of a univariate, equal-length .ts file.

  Raises:
    WorkdirError: the file does not exist.
    ConfigError: a data line without its ':label', a value that is not a
      number, or no series at all (naming the file and line).
    NonFiniteError: a NaN or infinite value (missing values are not
      supported).
    ShapeError: series of different lengths.
  """
  if not os.path.isfile(path):
    raise errors.WorkdirError(f"UCR file {path!r} does not exist")
  xs, labels, data = [], [], False
  with open(path) as f:
    for number, line in enumerate(f, start=1):
      line = line.strip()
      if not line or line.startswith("#"):
        continue
      if line.lower().startswith("@data"):
        data = True
        continue
      if not data or line.startswith("@"):
        continue
      where = f"{path} line {number}"
      errors.check(
        ":" in line,
        errors.ConfigError,
        f"{where}: no ':label' after the values",
      )
      values, label = line.rsplit(":", 1)
      row = []
      for v in values.split(","):
        try:
          row.append(float(v))
        except ValueError:
          raise errors.ConfigError(
            f"{where}: {v!r} is not a number (univariate series only)"
          ) from None
      errors.check(
        all(np.isfinite(row)),
        errors.NonFiniteError,
        f"{where}: a NaN or infinite value (missing values are not supported)",
      )
      errors.check(
        not xs or len(row) == len(xs[0]),
        errors.ShapeError,
        f"{where}: {len(row)} values, the first series {len(xs[0]) if xs else 0}"
        "; equal-length series only",
      )
      xs.append(row)
      labels.append(label)
  errors.check(
    bool(xs), errors.ConfigError, f"{path} holds no series after '@data'"
  )
  return np.asarray(xs, np.float32), np.asarray(labels)


def load_ucr(name: str, multiple: int = 1):
  """Train/test arrays of a bundled UCR set, z-normalised per series.

  Series are edge-padded to a multiple of `multiple` (the DWT levels need
  it; GunPoint's 150 becomes 152) [ours]. Labels are mapped to 0..C-1.
  """
  errors.check(
    name in UCR, errors.ConfigError, f"unknown UCR set {name!r}; bundled: {UCR}"
  )
  errors.check(
    multiple >= 1,
    errors.ConfigError,
    f"multiple must be >= 1 (the length's divisor), got {multiple}",
  )
  root = ucr_dir()
  if root is None:
    raise errors.ConfigError(
      f"{name} is read from the sktime wheel's bundled files: pip install "
      f"sktime (requirements.txt), or drop it from config.datasets"
    )
  out = []
  for split in ("TRAIN", "TEST"):
    x, lab = read_ts(os.path.join(root, name, f"{name}_{split}.ts"))
    out.append((x, lab))
  classes = sorted(set(out[0][1]))
  res = []
  for x, lab in out:
    x = (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-8)
    pad = (-x.shape[1]) % multiple
    if pad:
      x = np.pad(x, ((0, 0), (0, pad)), mode="edge")
    y = np.asarray([classes.index(v) for v in lab], np.int32)
    res.append((x.astype(np.float32), y))
  return res[0], res[1], len(classes)
