"""lib.core.losses against a float64 numpy reference."""

import jax
import numpy as np
import pytest

from lib.core import errors
from lib.core import losses


def _reference(logits, labels, mask):
  z = logits - logits.max(-1, keepdims=True)
  logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
  nll = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
  return nll, (nll * mask).sum() / max(mask.sum(), 1.0)


def test_masked_cross_entropy_matches_a_float64_reference():
  rs = np.random.default_rng(0)
  logits = rs.normal(size=(3, 5, 7)) * 3
  labels = rs.integers(0, 7, size=(3, 5))
  mask = (rs.random((3, 5)) < 0.6).astype(np.float64)
  nll, mean = _reference(logits, labels, mask)
  x = np.float32(logits)
  np.testing.assert_allclose(losses.token_nll(x, labels), nll, rtol=1e-5)
  got = losses.masked_cross_entropy(x, labels, mask)
  np.testing.assert_allclose(got, mean, rtol=1e-5)
  full = losses.masked_cross_entropy(x, labels)
  np.testing.assert_allclose(full, nll.mean(), rtol=1e-5)
  assert float(losses.masked_cross_entropy(x, labels, 0 * mask)) == 0.0


@pytest.mark.parametrize("bad", [7, 9, -1])
def test_a_label_outside_the_vocabulary_raises(bad):
  # take_along_axis at id >= V gave a silent NaN loss.
  logits = np.zeros((2, 3, 7), np.float32)
  labels = np.array([[0, 1, 2], [3, bad, 6]])
  with pytest.raises(errors.ShapeError, match=r"\[0, 7\)") as e:
    losses.token_nll(logits, labels)
  assert f"labels[1, 1] = {bad}" in str(e.value)
  with pytest.raises(errors.ShapeError, match=f"= {bad}"):
    losses.masked_cross_entropy(logits, labels, np.ones((2, 3)))


def test_traced_labels_are_not_checked():
  logits = np.zeros((3, 4), np.float32)
  got = jax.jit(losses.token_nll)(logits, np.array([0, 1, 3]))
  np.testing.assert_allclose(got, np.log(4.0) * np.ones(3), rtol=1e-6)
