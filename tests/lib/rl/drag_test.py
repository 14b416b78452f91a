"""lib.rl.drag: the spec's DRAG oracles 1-3, the maze, one-line errors."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib.core import errors
from lib.rl import drag


@pytest.mark.parametrize("tau", [0.25, 0.5, 1.0, 2.0])
def test_oracle1_tabular_weighter_converges_to_softmax_l_over_tau(tau):
  # The KL-DRO maximiser over a uniform batch is softmax(l / tau), computed
  # here in float64. At its default tolerance (1e-5, stationarity) the ascent
  # is within 3e-5 of it in every weight; before, a fixed 2000 steps missed
  # by 2.7e-3 at tau = 0.25 and 2.5e-4 at tau = 0.5 (weights down to 1e-9).
  losses = np.random.default_rng(0).normal(size=12) * 2.0
  w = drag.tabular_weighter(jnp.asarray(losses, jnp.float32), tau)
  z = losses / tau
  want = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
  np.testing.assert_allclose(w, want, atol=3e-5)


def test_tabular_weighter_short_of_steps_fails_in_one_line():
  with pytest.raises(errors.ConfigError, match="did not reach tol=1e-05"):
    drag.tabular_weighter(jnp.asarray([0.0, 1.0, 5.0]), 0.25, max_steps=3)


def test_oracle2_skewfit_alpha_minus_one_is_dro_tau_one():
  with jax.enable_x64(True):
    p = jnp.asarray(
      np.random.default_rng(1).dirichlet(np.ones(10)), jnp.float64
    )
    counts = jnp.arange(10) % 10  # samples falling in each cell once
    log_density = jnp.log(p)[counts]
    losses = -log_density  # an exact density model: l = -log p
    np.testing.assert_allclose(
      drag.skewfit_weights(log_density, -1.0),
      drag.dro_weights(losses, 1.0),
      rtol=1e-12,
    )
    # In general Skew-Fit(alpha) = DRO(tau = 1 / |alpha|).
    np.testing.assert_allclose(
      drag.skewfit_weights(log_density, -0.25),
      drag.dro_weights(losses, 4.0),
      rtol=1e-12,
    )


def test_oracle3_skewfit_refits_raise_entropy_monotonically():
  p = jnp.asarray(np.random.default_rng(2).dirichlet(0.3 * np.ones(16)))
  ent = lambda q: float(-jnp.sum(q * jnp.log(q)))
  values = [ent(p)]
  for _ in range(30):
    p = drag.skewfit_histogram_step(p, -0.5)
    values.append(ent(p))
  assert np.all(np.diff(values) > -1e-6)  # float32 noise once near log 16
  assert values[5] > values[0] + 0.1
  np.testing.assert_allclose(values[-1], np.log(16), atol=1e-3)


def test_maze_walls_render_and_reach():
  # The wall occupies columns 3-4 of rows 0-4: (0.45, 0.1) is inside it.
  assert not bool(drag.is_free(jnp.array([0.45, 0.1])))
  assert bool(drag.is_free(jnp.array([0.1, 0.1])))
  path = drag.reach(jnp.array([0.1, 0.1]), jnp.array([0.9, 0.1]), 30)
  assert bool(jnp.all(drag.is_free(path)))
  assert float(path[-1, 0]) < 0.375  # blocked by the wall, never through it
  img = drag.render(jnp.array([0.3, 0.7]))
  np.testing.assert_allclose(drag.decode_position(img), [0.3, 0.7], atol=0.04)
  hit, ent = drag.coverage(drag.cell_of(jnp.array([[0.1, 0.1], [0.9, 0.9]])))
  np.testing.assert_allclose(float(hit), 2 / int((~drag.U_MAZE).sum()))
  np.testing.assert_allclose(float(ent), np.log(2), rtol=1e-6)


@pytest.mark.parametrize("scale", [1.0, 0.4, 0.25, 0.1])
def test_a_faint_decoded_goal_is_read_where_its_blob_is(scale):
  # A decoded goal image is often faint: the blob's position must not depend
  # on its intensity. Its brightest pixel's centre is within half a pixel
  # (1/32) of the blob; the earlier soft-argmax drifted towards the image
  # centre (0.5, 0.5), a wall cell, as the blob faded.
  pos = jnp.array([0.1, 0.1])
  img = scale * drag.render(pos)
  got = drag.decode_position(img)
  np.testing.assert_allclose(got, pos, atol=1 / 32)
  assert bool(drag.is_free(got))
  soft = np.asarray(drag.decode_position(img, mode="soft_argmax"))
  if scale <= 0.25:
    assert np.all(soft > 0.25)  # the old reading, pulled off the blob
  with pytest.raises(errors.ConfigError, match="goal decoding"):
    drag.decode_position(img, mode="softmax")


def test_bad_input_one_line_errors():
  with pytest.raises(errors.ConfigError, match="tau"):
    drag.dro_weights(jnp.ones(3), 0.0)
  with pytest.raises(errors.ConfigError, match="tau"):
    drag.tabular_weighter(jnp.ones(3), -1.0)
  with pytest.raises(errors.ConfigError, match="alpha"):
    drag.skewfit_weights(jnp.ones(3), 0.5)
  with pytest.raises(errors.ConfigError, match="horizon"):
    drag.reach(jnp.zeros(2), jnp.ones(2), 0)


def test_tau_and_alpha_may_be_jitted_or_vmapped_arguments():
  # check_tau and skewfit_weights' range check compared a tracer with a
  # Python number (TracerBoolConversionError under jit or vmap).
  losses = jnp.array([0.0, 1.0, 3.0])
  taus = jnp.array([0.5, 2.0])
  swept = jax.vmap(drag.dro_weights, (None, 0))(losses, taus)
  for row, tau in zip(np.asarray(swept), (0.5, 2.0)):
    e = np.exp(np.array([0.0, 1.0, 3.0]) / tau)
    np.testing.assert_allclose(row, e / e.sum(), rtol=1e-6)
  skew = jax.jit(drag.skewfit_weights)(jnp.log(jnp.array([0.2, 0.8])), -1.0)
  np.testing.assert_allclose(skew, [0.8, 0.2], rtol=1e-6)  # (1/p) normalised
  with pytest.raises(errors.ConfigError, match="tau must be > 0"):
    drag.dro_weights(losses, 0.0)


def test_ess_fraction_of_uniform_one_hot_and_two_level_weights():
  n = 8
  np.testing.assert_allclose(drag.ess_fraction(jnp.full((n,), 1 / n)), 1.0)
  np.testing.assert_allclose(drag.ess_fraction(jnp.eye(n)[3]), 1 / n)
  # Half the states at 3/(2n), half at 1/(2n): sum w^2 = (n/2) 10 / (4 n^2)
  # = 5 / (4n), so the ESS is 4n/5 of n.
  w = jnp.array([3.0] * 4 + [1.0] * 4) / (2 * n)
  np.testing.assert_allclose(drag.ess_fraction(w), 0.8, rtol=1e-6)


@pytest.mark.parametrize("tau", [0.5, 2.0])
def test_neural_weighter_ascent_reaches_the_kl_dro_optimum(tau):
  # Six distinct one-hot states: f_psi can give each its own logit, so many
  # ascent steps on one batch reach the batch's maximiser softmax(l / tau).
  x = jnp.eye(6, 16)
  losses = jnp.array([0.0, 0.5, 1.0, 2.0, 3.0, 3.5])
  weighter, tx = drag.Weighter(hidden=32), optax.adam(1e-2)
  params = weighter.init(jax.random.key(0), x)
  first, _ = drag.weighter_ascent(
    weighter, tx, params, tx.init(params), x, losses, tau, steps=1
  )
  # One step is one optax step on -dro_objective (written out here).
  g = jax.grad(
    lambda p: -drag.dro_objective(weighter.apply(p, x), losses, tau)
  )(params)
  u, _ = tx.update(g, tx.init(params), params)
  jax.tree.map(
    np.testing.assert_array_equal, first, optax.apply_updates(params, u)
  )
  fit = jax.jit(
    lambda p: drag.weighter_ascent(
      weighter, tx, p, tx.init(p), x, losses, tau, steps=3000
    )[0]
  )(params)
  w = jax.nn.softmax(weighter.apply(fit, x))
  e = np.exp(np.asarray(losses) / tau)
  np.testing.assert_allclose(w, e / e.sum(), atol=2e-3)
  w0 = jax.nn.softmax(weighter.apply(params, x))
  assert np.max(np.abs(w0 - e / e.sum())) > 0.1  # far at the start


def test_weighter_ascent_without_a_step_fails_in_one_line():
  weighter, tx = drag.Weighter(hidden=4), optax.adam(1e-3)
  x = jnp.zeros((2, 16))
  params = weighter.init(jax.random.key(0), x)
  with pytest.raises(errors.ConfigError, match="weighter_steps must be"):
    drag.weighter_ascent(
      weighter, tx, params, tx.init(params), x, jnp.zeros(2), 1.0, steps=0
    )


def test_training_weights_of_each_method():
  losses = jnp.array([0.0, 1.0, 3.0])
  x = jnp.eye(3, 16)
  weighter = drag.Weighter(hidden=4)
  params = weighter.init(jax.random.key(0), x)
  rig = drag.training_weights("rig", losses, weighter, params, x)
  np.testing.assert_allclose(rig, np.full(3, 1 / 3), rtol=1e-6)
  skew = drag.training_weights("skewfit", losses, weighter, params, x)
  e = np.exp([0.0, 1.0, 3.0])
  np.testing.assert_allclose(skew, e / e.sum(), rtol=1e-6)  # softmax(l)
  ours = drag.training_weights("drag", losses, weighter, params, x)
  np.testing.assert_allclose(
    ours, jax.nn.softmax(weighter.apply(params, x)), rtol=1e-6
  )
  with pytest.raises(errors.ConfigError, match="method='drag_tau1'"):
    drag.training_weights("drag_tau1", losses, weighter, params, x)
