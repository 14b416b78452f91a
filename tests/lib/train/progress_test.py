"""The progress line's loss: a scalar, a short stack, or a sweep's summary."""

import numpy as np

from lib.train import metrics


def test_sweep_loss_is_summarised():
  assert metrics._summary(np.float64(0.25)) == "0.25"
  assert metrics._summary(np.array([1.0, 2.0])) == "[1. 2.]"
  line = metrics._summary(np.array([1.0, 2.0, 6.0, np.nan, 3.0]))
  assert line == "mean 3 (min 1, max 6; 5 runs, 1 non-finite)"
  assert metrics._summary(np.full(5, np.inf)) == "non-finite (5 runs)"
