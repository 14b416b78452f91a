"""The four-moons notebook's binary model: a theta of one column [d, 1].

Oracles: the notebook's formulas (example_four_moons.ipynb,
`logitstic_loss_batch`, `construct_Kprior`, `selectet_mem_lambda`, the EM
cell's beta) written out in numpy with the sigmoid, and the logistic loss's
analytic gradient X^T (sigmoid(X theta) - y).
Jung et al., "How to Train Your Compact Memory", NeurIPS 2025.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import continual


@pytest.fixture(autouse=True)
def _x64():
  with jax.enable_x64(True):
    yield


def _sigmoid(z):
  return 1.0 / (1.0 + np.exp(-z))


def _logistic(pred, y):
  """The notebook's logistic loss (without its 1e-9 inside the logs)."""
  return -y * np.log(pred) - (1 - y) * np.log(1 - pred)


def _problem(seed=0, d=6, n=30, m=4):
  r = np.random.default_rng(seed)
  theta, old = r.normal(size=(d, 1)), r.normal(size=(d, 1))
  x, u = r.normal(size=(n, d)), r.normal(size=(m, d))
  y = (r.uniform(size=n) < 0.5).astype(np.int32)
  w = r.uniform(0.5, 3.0, m)
  return theta, old, x, y, u, w


def test_binary_losses_are_the_notebooks():
  theta, old, x, y, u, w = _problem()
  s = _sigmoid(x @ theta[:, 0])
  np.testing.assert_allclose(
    continual.cross_entropy_sum(jnp.asarray(theta), x, y),
    np.sum(_logistic(s, y)),
    rtol=1e-12,
  )
  # construct_Kprior: sum_k scale_k^2 logistic(sigmoid(z_new), sigmoid(z_old))
  # + (delta / 2) ||w - w_old||^2, the memory weight being scale^2.
  delta = 0.01
  s_new, s_old = _sigmoid(u @ theta[:, 0]), _sigmoid(u @ old[:, 0])
  want = np.sum(w * _logistic(s_new, s_old))
  want += 0.5 * delta * np.sum((theta - old) ** 2)
  mem = continual.Memory(jnp.asarray(u), jnp.asarray(w))
  np.testing.assert_allclose(
    continual.kprior(jnp.asarray(theta), jnp.asarray(old), mem, delta),
    want,
    rtol=1e-12,
  )
  # pred_boundary: class 1 where sigmoid(z) > 1/2.
  np.testing.assert_allclose(
    continual.accuracy(jnp.asarray(theta), x, y), np.mean((s > 0.5) == y)
  )


def test_binary_gradient_is_the_logistic_gradient():
  theta, _, x, y, _, _ = _problem(1)
  grad = jax.grad(continual.cross_entropy_sum)(jnp.asarray(theta), x, y)
  want = x.T @ (_sigmoid(x @ theta[:, 0]) - y)
  np.testing.assert_allclose(grad[:, 0], want, rtol=1e-10, atol=1e-12)


def test_binary_beta_is_p_one_minus_p_with_the_notebooks_clamps():
  theta, _, x, _, u, _ = _problem(2)
  theta = jnp.asarray(5.0 * theta)  # some rows saturate below the clamp
  z = np.asarray(x @ theta[:, 0])
  s, ps = _sigmoid(z), _sigmoid(z) * _sigmoid(-z)  # ps = s (1 - s), exact
  # float64 rounding of 1 - p where p ~ 1: 1e-16 absolute.
  np.testing.assert_allclose(
    continual.beta(theta, x, 0.0), ps, rtol=1e-10, atol=1e-15
  )
  # The notebook: the new data's beta unclamped, the memory's floored.
  eps = 1e-4
  assert np.min(ps) < eps < np.max(ps)  # the floor acts on some rows
  np.testing.assert_allclose(
    continual.data_beta(theta, x, eps, "memory"), ps, rtol=1e-10, atol=1e-15
  )
  np.testing.assert_allclose(
    continual.memory_beta(theta, x, eps, "memory"),
    np.maximum(ps, eps),
    rtol=1e-10,
  )
  # "probs": p clipped to [eps, 1 - eps] first.
  p = np.clip(s, eps, 1 - eps)
  np.testing.assert_allclose(
    continual.beta(theta, x, eps), p * (1 - p), rtol=1e-10
  )
  # selectet_mem_lambda: the rows of largest p (1 - p).
  top = continual.select_top_beta(theta, x, 3)
  np.testing.assert_array_equal(np.sort(top), np.sort(np.argsort(ps)[-3:]))


def test_softmax_theta_keeps_its_logits():
  r = np.random.default_rng(4)
  theta, x = (
    jnp.asarray(r.normal(size=(5, 3))),
    jnp.asarray(r.normal(size=(7, 5))),
  )
  np.testing.assert_array_equal(continual.logits(theta, x), x @ theta)
  # Two columns stay a softmax: beta sums over both classes.
  two = jnp.asarray(r.normal(size=(5, 2)))
  p = np.asarray(jax.nn.softmax(x @ two))
  np.testing.assert_allclose(
    continual.beta(two, x, 0.0), np.sum(p * (1 - p), -1), rtol=1e-12
  )
