"""lib.core.losses against a float64 numpy reference."""

import numpy as np

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
