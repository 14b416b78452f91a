"""lib.alignment: the spec's oracles for last-layer DPO (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import alignment
from lib.core import errors


def _problem(key, n=12, vocab=5, d=7):
  k1, k2, k3, k4, k5 = jax.random.split(key, 5)
  w_ref = jax.random.normal(k1, (vocab, d), jnp.float64)
  w = w_ref + 0.3 * jax.random.normal(k2, (vocab, d), jnp.float64)
  g = jax.random.normal(k3, (n, d), jnp.float64)
  y_w = jax.random.randint(k4, (n,), 0, vocab)
  y_l = (y_w + jax.random.randint(k5, (n,), 1, vocab)) % vocab  # != y_w
  return w, w_ref, g, y_w, y_l


def test_margin_identity():
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(0))
    r = alignment.margins(w, w_ref, g, y_w, y_l, 0.7)
    closed = alignment.closed_form_margins(w, w_ref, g, y_w, y_l, 0.7)
    # By hand for pair 0: beta (e_w - e_l)^T (W - W_ref) g.
    dw = np.asarray(w - w_ref)
    r0 = 0.7 * (dw[int(y_w[0])] - dw[int(y_l[0])]) @ np.asarray(g[0])
    np.testing.assert_allclose(r, closed, rtol=0, atol=1e-10)
    np.testing.assert_allclose(r[0], r0, rtol=0, atol=1e-10)


def test_one_gd_step_moves_margins_exactly():
  with jax.enable_x64(True):
    w, w_ref, g, y_w, y_l = _problem(jax.random.key(1))
    beta, lr = 0.5, 0.3
    r = alignment.margins(w, w_ref, g, y_w, y_l, beta)
    grad = jax.grad(alignment.loss)(w, w_ref, g, y_w, y_l, beta)
    r_next = alignment.margins(w - lr * grad, w_ref, g, y_w, y_l, beta)
    dr = alignment.gd_margin_update(r, g, y_w, y_l, beta, lr, w.shape[0])
    np.testing.assert_allclose(r_next - r, dr, rtol=0, atol=1e-10)


def test_loss_gradient_at_the_reference():
  with jax.enable_x64(True):
    _, w_ref, g, y_w, y_l = _problem(jax.random.key(2))
    beta, n, vocab = 0.2, g.shape[0], w_ref.shape[0]
    grad = jax.grad(alignment.loss)(w_ref, w_ref, g, y_w, y_l, beta)
    e = np.eye(vocab)[np.asarray(y_w)] - np.eye(vocab)[np.asarray(y_l)]
    expected = -(beta / (2 * n)) * e.T @ np.asarray(g)  # sigma(0) = 1/2
    np.testing.assert_allclose(grad, expected, rtol=0, atol=1e-12)


def test_one_separable_cluster_is_learned():
  with jax.enable_x64(True):
    mu, nu = alignment.cluster_geometry(jax.random.key(3), 1, 16)
    data = alignment.sample_pairs(jax.random.key(4), mu, nu, 32, noise=0.1)
    w_ref = jnp.zeros((2, 16), jnp.float64)
    args = (w_ref, data["g"], data["y_w"], data["y_l"], 0.1)
    tx = optax.sgd(100.0)
    w, opt = w_ref, tx.init(w_ref)
    before = alignment.reward_accuracy(w, *args)
    for _ in range(50):
      u, opt = tx.update(jax.grad(alignment.loss)(w, *args), opt, w)
      w = w + u
    assert float(before) == 0.0  # W = W_ref: every margin is 0, none > 0
    assert float(alignment.reward_accuracy(w, *args)) == 1.0


def test_preference_losses_by_hand():
  h = jnp.array([-1.0, 0.0, 2.0])
  beta = 0.5
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "dpo"),
    np.log1p(np.exp(-beta * np.asarray(h, np.float64))),
    rtol=1e-6,
  )
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "ipo"), (h - 1.0) ** 2
  )
  np.testing.assert_allclose(
    alignment.preference_loss(h, beta, "slic"), [1.5, 1.0, 0.0]
  )


def test_nested_q_masks_and_cluster_layout():
  mu, nu = alignment.cluster_geometry(jax.random.key(5), 3, 8)
  np.testing.assert_allclose(jnp.sum(mu * nu, -1), 0.0, atol=1e-5)
  np.testing.assert_allclose(jnp.linalg.norm(nu, axis=-1), 1.0, rtol=1e-5)
  data = alignment.sample_pairs(jax.random.key(6), mu, nu, 4)
  np.testing.assert_array_equal(data["cluster"], np.repeat([0, 1, 2], 4))
  np.testing.assert_array_equal(
    alignment.first_q_mask(3, 4, 2), [1, 1, 0, 0] * 3
  )


@pytest.mark.parametrize(
  "case, match",
  [
    ("same_tokens", "same preferred and rejected token"),
    ("width", "embedding width 6 does not match"),
    ("token_range", r"token ids must lie in \[0, 3\)"),
  ],
)
def test_bad_pairs_fail_in_one_line(case, match):
  w = np.zeros((3, 5))
  g = np.zeros((4, 5))
  y_w, y_l = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
  if case == "same_tokens":
    y_l = y_w.copy()
  elif case == "width":
    g = np.zeros((4, 6))
  else:
    y_w = np.array([0, 1, 2, 3])
  with pytest.raises(errors.ShapeError, match=match):
    alignment.check_pairs(w, g, y_w, y_l)


@pytest.mark.parametrize("beta", [0.0, -1.0])
def test_beta_must_be_positive(beta):
  with pytest.raises(errors.ConfigError, match="beta must be a number > 0"):
    alignment.preference_loss(jnp.zeros(2), beta)


def test_concept_sequences_carry_concept_and_stance():
  world = alignment.concept_world(jax.random.key(0), 4, 40, 5)
  assert world.shape == (4, 2, 5)
  assert (
    int(world.min()) >= 4 and int(world.max()) < 44
  )  # fillers after concepts
  for k in range(4):  # the two stance subsets of a concept are disjoint
    assert not set(np.asarray(world[k, 0]).tolist()) & set(
      np.asarray(world[k, 1]).tolist()
    )
  concepts = jnp.array([0, 1, 2, 3, 3])
  stance = jnp.array([1, -1, 1, -1, 1])
  pure = alignment.concept_sequences(
    jax.random.key(1), world, concepts, stance, 12, 40, 1.0
  )
  np.testing.assert_array_equal(np.asarray(pure[:, 0]), np.asarray(concepts))
  for i in range(5):
    side = 0 if int(stance[i]) > 0 else 1
    allowed = set(np.asarray(world[int(concepts[i]), side]).tolist())
    assert set(np.asarray(pure[i, 1:]).tolist()) <= allowed
  with pytest.raises(errors.ConfigError, match="filler_vocab"):
    alignment.concept_world(jax.random.key(0), 4, 8, 5)
