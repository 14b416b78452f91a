"""Faithfulness, robustness and localisation of attributions (MIX, NeurIPS 2025).

- Deletion AUC: replace the top-ranked features (in the view the attribution
  lives in) by the baseline's, a growing fraction at a time, and average the
  model's probability of the explained class (lower = more faithful).
- Insertion AUC: start from the baseline and insert the top features (higher
  = more faithful).
- Robustness: top-k overlap (Jaccard) of the explanation of x and of x plus
  small noise (higher = more robust).
- Localisation precision@k: the fraction of the k top time points inside a
  planted window (synthetic data).
"""

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.explain import views


def _check_at_least(name: str, value, minimum: int) -> None:
  """A concrete count below `minimum` is an error (it gave NaN: a mean over
  no point, or 0 / 0); a traced one is not read."""
  if errors.is_concrete(value) and np.ndim(value) == 0 and value < minimum:
    raise errors.ConfigError(f"{name} must be >= {minimum}, got {value}")


def _curve(f, x, baseline, scores, level, fractions, insert: bool):
  c, c0 = views.dwt(x, level), views.dwt(baseline, level)
  n = c.shape[-1]
  rank = jnp.argsort(jnp.argsort(-scores))  # 0 = most important

  def at(frac):
    top = (rank < jnp.round(frac * n)).astype(c.dtype)
    mixed = top * c0 + (1 - top) * c if not insert else top * c + (1 - top) * c0
    return f(views.idwt(mixed, level))

  return jax.vmap(at)(fractions)


def deletion_auc(f, x, baseline, scores, level: int, points: int = 11):
  """Deletion AUC of attributions `scores` [n] that live in view `level`.

  The mean of f over `points` evenly spaced fractions 0, ..., 1 of the
  coefficients, largest signed score first, replaced by the baseline's
  (f(x) first, f(baseline) last); lower = more faithful.
  """
  _check_at_least("deletion_auc: points", points, 2)
  fr = jnp.linspace(0.0, 1.0, points, dtype=x.dtype)
  return jnp.mean(_curve(f, x, baseline, scores, level, fr, insert=False))


def insertion_auc(f, x, baseline, scores, level: int, points: int = 11):
  """Insertion AUC: as `deletion_auc`, starting from the baseline's
  coefficients and inserting x's, top scores first; higher = more faithful.
  """
  _check_at_least("insertion_auc: points", points, 2)
  fr = jnp.linspace(0.0, 1.0, points, dtype=x.dtype)
  return jnp.mean(_curve(f, x, baseline, scores, level, fr, insert=True))


def top_k_mask(scores, k: int):
  """[n] bool: the k largest (signed) scores, ties to the lower index."""
  rank = jnp.argsort(jnp.argsort(-scores))
  return rank < k


def jaccard_top_k(a, b, k: int):
  """Robustness: |A & B| / |A | B| of the top-k sets of scores a and b."""
  _check_at_least("jaccard_top_k: k", k, 1)
  ma, mb = top_k_mask(a, k), top_k_mask(b, k)
  return jnp.sum(ma & mb) / jnp.sum(ma | mb)


def localisation_precision(time_scores, window_mask, k: int):
  """Fraction of the k top time points inside the planted window."""
  _check_at_least("localisation_precision: k", k, 1)
  return jnp.sum(top_k_mask(time_scores, k) & window_mask) / k
