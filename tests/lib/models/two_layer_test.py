"""Theorem 4 of "The Rich and the Simple" (Vasudeva et al., NeurIPS 2025) on its toy
population: where GD's and signGD's neurons end, against the theorem's arctan formula.

Oracle: p = arctan((omega^2 - 1) / (2 omega)) / pi and the limit masses of Thm 4
(spec optim_papers.md A.4), written out here, not read from `theorem4_masses`.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import data as data_lib
from lib import models
from lib import optim
from lib.core import errors

MU, OMEGA = 0.3, 2.0  # spec A.4 / A.6 (the masses do not depend on mu)
M, STEPS, LR = 20_000, 3000, 0.01  # spec E.A's toy-population oracle row
# "Small init" in Thm 4 means small against the first step, lr |grad| ~ lr
# |a_k| |x| / 4 ~ 7e-6 here: the first step then sets each neuron's activation
# pattern. At the paper's alpha = 1e-3 (init ~7e-4 >> 7e-6) GD follows gradient
# flow from a finite init instead and ends elsewhere (measured: [1, 0] 0.104,
# tilted 0.198 each, against 0.352 and 0.074).
ALPHA = 1e-8


def _p(omega):
  return math.atan((omega**2 - 1) / (2 * omega)) / math.pi


def _oracle(optimizer, x):
  """Thm 4's candidate directions and masses (fractions of all m neurons)."""
  p = _p(OMEGA)
  if optimizer == "gd":
    # The +1 points' own directions, [omega^2 - 1, +-2 omega] / (omega^2 + 1).
    side = (
      np.asarray(x[1:]) / np.linalg.norm(np.asarray(x[1:]), axis=-1)[:, None]
    )
    masses = [1 / 4 + p / 2, 1 / 2, 1 / 8 - p / 4, 1 / 8 - p / 4]
  else:
    side = np.array([[1.0, 1.0], [1.0, -1.0]]) / math.sqrt(2)
    masses = [p, 1 / 2, 1 / 4 - p / 2, 1 / 4 - p / 2]
  directions = np.concatenate([[[1.0, 0.0], [-1.0, 0.0]], side])
  return directions.astype(np.float32), np.asarray(masses)


def _exact_zeros():
  """Sets to 0 the gradient entries below 1e-4 of their neuron's largest entry.

  A neuron active on both +1 points has an x2-gradient of 0.25 a_k (0.3 - 0.3)
  = 0 exactly, but the float32 matmul of the backward pass (an FMA) leaves
  ~1e-10 of rounding in it, and sign() turns that into a full step: every such
  neuron then tips to the lower diagonal (measured: signGD's [1, 0] mass 0.000,
  lower diagonal 0.352). Genuine entries of the population gradient are never
  below 0.3 of their row's largest (its entries are sums of 1/4 (0.225, +-0.3)
  and 1/2 (0.375, 0)), so this only restores the exact zeros the theorem has.
  """

  def update(grads, params):
    del params
    scale = lambda g: 1e-4 * jnp.max(jnp.abs(g), axis=-1, keepdims=True)
    return jax.tree.map(
      lambda g: jnp.where(jnp.abs(g) > scale(g), g, 0.0), grads
    )

  return optax.stateless(update)


@jax.jit
def _train_both(W0):
  x, y, weights = data_lib.toy_population(MU, OMEGA)
  a = models.outer_weights(M)
  loss = lambda W: models.correlation_loss(
    models.two_layer_relu(W, a, x), y, weights
  )

  def train(tx):
    def step(carry, _):
      W, state = carry
      updates, state = tx.update(jax.grad(loss)(W), state, W)
      return (optax.apply_updates(W, updates), state), None

    (W, _), _ = jax.lax.scan(step, (W0, tx.init(W0)), None, STEPS)
    return W

  return {
    "gd": train(optax.sgd(LR)),
    "sign_gd": train(optax.chain(_exact_zeros(), optim.sign_gd(LR))),
  }


@pytest.fixture(scope="module")
def trained():
  W0 = models.init_two_layer(jax.random.key(0), d=2, m=M, alpha=ALPHA)["W"]
  return jax.device_get(_train_both(W0))


@pytest.mark.parametrize("optimizer", ["gd", "sign_gd"])
def test_theorem4_limit_masses(trained, optimizer):
  x, _, _ = data_lib.toy_population(MU, OMEGA)
  directions, expected = _oracle(optimizer, x)
  W = trained[optimizer]
  measured = np.asarray(models.direction_masses(W, directions))
  np.testing.assert_allclose(measured, expected, atol=0.02)
  # Each neuron has reached its direction (not merely the nearest of four).
  units = W / np.linalg.norm(W, axis=-1, keepdims=True)
  assert np.min(np.max(units @ directions.T, axis=-1)) > 0.999
  # a_k = -1/sqrt(m) (odd rows) all go to [-1, 0]; a_k > 0 never do.
  np.testing.assert_array_equal(
    models.direction_masses(W[1::2], directions), [0.0, 1.0, 0.0, 0.0]
  )
  assert float(models.direction_masses(W[0::2], directions)[1]) == 0.0


@pytest.mark.parametrize("optimizer", ["gd", "sign_gd"])
def test_theorem4_masses_are_the_formula(optimizer):
  x, _, _ = data_lib.toy_population(MU, OMEGA)
  directions, masses = models.theorem4_masses(OMEGA, optimizer)
  expected_dirs, expected = _oracle(optimizer, x)
  np.testing.assert_allclose(directions, expected_dirs, atol=1e-6)
  np.testing.assert_allclose(masses, expected, atol=1e-6)
  np.testing.assert_allclose(np.sum(masses), 1.0, atol=1e-6)
  # p = 0.2048 at omega = 2 (spec A.4); p is also the angle between the +1
  # point and the x2 axis, over pi.
  assert _p(OMEGA) == pytest.approx(0.2048, abs=1e-4)
  angle = math.atan2(float(x[1, 1]), float(x[1, 0]))
  assert _p(OMEGA) == pytest.approx(0.5 - angle / math.pi, abs=1e-6)


def test_toy_population_is_the_noiseless_cluster_geometry():
  x, y, weights = data_lib.toy_population(MU, OMEGA)
  np.testing.assert_array_equal(y, [-1.0, 1.0, 1.0])
  np.testing.assert_array_equal(weights, [0.5, 0.25, 0.25])
  # All three at distance mu (omega^2 + 1) / (2 omega); the +1 points along
  # [omega^2 - 1, +-2 omega] / (omega^2 + 1) (spec A.2, from the Thm 5 proof).
  radius = MU * (OMEGA**2 + 1) / (2 * OMEGA)
  np.testing.assert_allclose(np.linalg.norm(x, axis=-1), radius, rtol=1e-6)
  np.testing.assert_allclose(x[0] / radius, [-1.0, 0.0], atol=1e-6)
  unit = np.array([OMEGA**2 - 1, 2 * OMEGA]) / (OMEGA**2 + 1)
  np.testing.assert_allclose(x[1:] / radius, [unit, unit * [1, -1]], rtol=1e-6)
  with pytest.raises(errors.ConfigError, match="omega"):
    data_lib.toy_population(MU, 0.0)


def test_correlation_loss_and_direction_masses_by_hand():
  logits = jnp.array([2.0, -1.0, 0.5])
  y = jnp.array([1.0, -1.0, -1.0])
  w = jnp.array([0.5, 0.25, 0.25])
  assert float(models.correlation_loss(logits, y, w)) == pytest.approx(
    -(0.5 * 2.0 + 0.25 * 1.0 - 0.25 * 0.5)
  )
  assert float(models.correlation_loss(logits, y)) == pytest.approx(
    -(2.0 + 1.0 - 0.5) / 3
  )
  # Six neurons, candidates e1, -e1, e2: nearest by angle whatever the norm;
  # the zero row counts toward none.
  W = jnp.array(
    [[3.0, 0.1], [0.01, 0.0], [-1.0, 0.9], [0.2, 5.0], [0.0, 0.0], [1.0, -0.9]]
  )
  candidates = jnp.array([[2.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
  np.testing.assert_allclose(
    models.direction_masses(W, candidates), [3 / 6, 1 / 6, 1 / 6]
  )
  with pytest.raises(errors.ShapeError, match="share d"):
    models.direction_masses(W, jnp.ones((2, 3)))
  with pytest.raises(errors.ConfigError, match="optimizer"):
    models.theorem4_masses(OMEGA, "adam")
