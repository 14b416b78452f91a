"""A spurious-correlation task from the bundled digits (after the paper's colour-patch MNIST).

Class A is digit 0, class B digits 1 and 2 (as in Table 2 of the paper). Each 8x8 grey image
becomes RGB, and a 2x2 patch in the top-left corner is coloured red for class A and green for
class B with probability `train_correlation` in training. At test time the patch colour is
independent of the label, so there are four groups (class x colour); the worst group is where
the colour points to the wrong class.

References:
  Vasudeva et al. The Rich and the Simple: On the Implicit Bias of Adam and SGD.
  NeurIPS 2025, Sec. 4.2.
"""

import numpy as np

from lib.core import errors
from lib.core import rng as rng_lib
from lib.data import digits as digits_lib


def make_patch_digits(
  *,
  train_correlation: float,
  test_fraction: float,
  patch_value: float,
  seed: int,
) -> dict:
  """Returns x_train, y_train, x_test, y_test, group_test as host numpy arrays.

  x: float32 (n, 8*8*3) in [0, 1]; y in {-1 (class A), +1 (class B)}; group_test in 0..3 =
  2*(y>0) + (patch is green), so groups 1 and 2 carry the "wrong" colour.
  """
  if not 0.0 <= train_correlation <= 1.0:
    raise errors.ConfigError(
      f"train_correlation must be in [0, 1], got {train_correlation}"
    )
  images, labels = digits_lib.load_digits()
  keep = labels <= 2
  images, labels = images[keep] / 16.0, labels[keep]
  y = np.where(labels == 0, -1.0, 1.0).astype(np.float32)
  rgb = np.repeat(images[..., None], 3, axis=-1).astype(np.float32)
  train_idx, test_idx = digits_lib.split_indices(
    len(y), test_fraction=test_fraction, seed=seed
  )
  # Its own stream: seed + 1 would be the next seed's split draws.
  rng = np.random.default_rng([seed, rng_lib.stream_id("patch_colours")])
  # Green patch iff class B, flipped with probability 1 - correlation (train) or 1/2 (test).
  green = y > 0
  flip_train = rng.random(len(y)) > train_correlation
  flip_test = rng.random(len(y)) < 0.5
  green_train = np.where(flip_train, ~green, green)
  green_test = np.where(flip_test, ~green, green)

  def with_patch(idx, is_green):
    x = rgb[idx].copy()
    x[:, :2, :2, :] = 0.0
    x[:, :2, :2, 1] = np.where(is_green[idx], patch_value, 0.0)[:, None, None]
    x[:, :2, :2, 0] = np.where(is_green[idx], 0.0, patch_value)[:, None, None]
    return x.reshape(len(idx), -1)

  return {
    "x_train": with_patch(train_idx, green_train),
    "y_train": y[train_idx],
    "x_test": with_patch(test_idx, green_test),
    "y_test": y[test_idx],
    "group_test": (2 * (y[test_idx] > 0) + green_test[test_idx]).astype(
      np.int32
    ),
  }
