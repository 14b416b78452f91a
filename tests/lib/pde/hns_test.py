"""Oracles for the HNS functional, its autodiff derivative, metrics, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import linen as nn

from lib import pde
from lib.core import errors
from lib.pde import metrics as pde_metrics
from lib.pde import solver


@pytest.mark.parametrize("kind", ["uniform", "trapezoid_endpoints"])
def test_functional_derivative_of_fixed_kernels(kind):
  with jax.enable_x64(True):
    g = pde.periodic_grid(50, 3.0, kind)
    mu_dx = g.mu * g.dx
    u = jnp.sin(2 * jnp.pi * g.x / 3.0) + 0.3 * jnp.cos(4 * jnp.pi * g.x / 3.0)
    # kappa(x, u) = u / 2: H = 1/2 int u^2, dH/du = u.
    half = lambda v: jnp.sum(mu_dx * (0.5 * v) * v)
    np.testing.assert_allclose(
      pde.functional_derivative(half, u, mu_dx), u, atol=1e-10
    )
    # kappa(x) = x^2: H = int x^2 u, dH/du = x^2 (independent of u).
    lin = lambda v: jnp.sum(mu_dx * g.x**2 * v)
    np.testing.assert_allclose(
      pde.functional_derivative(lin, u, mu_dx), g.x**2, atol=1e-10
    )


def _ikf(**kw):
  defaults = dict(
    length=4.0, width=8, num_layers=2, proj_dim=8, film_hidden=(8,)
  )
  return pde.IntegralKernelFunctional(**{**defaults, **kw})


@pytest.mark.parametrize("mlp_kernel", [False, True])
def test_linear_ikf_derivative_is_the_kernel(mlp_kernel):
  # For a linear kernel dH/du = kappa(x_i) . P_u for any u, and dividing by
  # mu dx removes the quadrature weights (uniform vs trapezoid agree).
  with jax.enable_x64(True):
    model = _ikf(kernel_type="linear", film="none")
    if mlp_kernel:
      model = pde.KernelMLPFunctional(hidden=(8,), kernel_type="linear")
    x = jnp.linspace(0.0, 4.0, 33)
    dx = 4.0 / 32
    uni = pde.quadrature_weights(33, "uniform", jnp.float64) * dx
    trap = pde.quadrature_weights(33, "trapezoid_endpoints", jnp.float64) * dx
    params = model.init(jax.random.key(0), jnp.zeros(33), x, uni)
    # Non-zero output layer, so that kappa is not identically zero.
    params = jax.tree.map(lambda a: a + 0.1, params)
    fd = jax.jit(
      lambda u, w: pde.functional_derivative(
        lambda v: model.apply(params, v, x, w), u, w
      )
    )
    u1 = jnp.sin(x)
    u2 = jnp.cos(3 * x) ** 2
    np.testing.assert_allclose(fd(u1, uni), fd(u2, uni), atol=1e-12)
    np.testing.assert_allclose(fd(u1, uni), fd(u1, trap), atol=1e-12)


@pytest.mark.parametrize("film", ["none", "local", "global"])
def test_ikf_derivative_matches_directional_difference(film):
  with jax.enable_x64(True):
    g = pde.periodic_grid(32, 4.0)
    mu_dx = g.mu * g.dx
    model = _ikf(film=film, kernel_type="nonlinear")
    params = model.init(jax.random.key(1), jnp.zeros(32), g.x, mu_dx)
    params = jax.tree.map(lambda a: a.astype(jnp.float64), params)
    h = jax.jit(lambda v: model.apply(params, v, g.x, mu_dx))
    u = jnp.sin(2 * jnp.pi * g.x / 4.0)
    v = jnp.cos(2 * jnp.pi * 3 * g.x / 4.0)
    eps = 1e-5
    directional = (h(u + eps * v) - h(u - eps * v)) / (2 * eps)
    fd = pde.functional_derivative(h, u, mu_dx)
    # <dH/du, v> in the quadrature inner product is the directional derivative.
    np.testing.assert_allclose(jnp.sum(mu_dx * fd * v), directional, rtol=1e-7)


def test_bad_model_config():
  with pytest.raises(errors.ConfigError, match="film"):
    _ikf(film="attention").init(
      jax.random.key(0), jnp.zeros(8), jnp.zeros(8), jnp.ones(8)
    )


def _advection_setup(n=16):
  import ml_collections

  g = pde.periodic_grid(n, 4.0)
  mc = ml_collections.ConfigDict(
    dict(
      width=8,
      num_layers=2,
      proj_dim=8,
      kernel_type="nonlinear",
      film="local",
      film_hidden=(8,),
      film_kernel_size=3,
      omega0=1.0,
    )
  )
  model = solver.build_model("hns", mc, 4.0)
  params = solver.init_params("hns", model, g, jax.random.key(0))
  return g, model, params


def test_rollout_rejects_bad_initial_conditions():
  g, model, params = _advection_setup()
  roll = lambda u0: solver.rollout(
    "hns", model, params, u0, g, dt=0.01, num_steps=3
  )
  good = jnp.sin(2 * jnp.pi * g.x / 4.0)[None]
  assert roll(good).shape == (1, 4, 16)
  with pytest.raises(errors.ShapeError, match="n_x = 16"):
    roll(jnp.sin(jnp.linspace(0, 1, 24))[None])
  with pytest.raises(errors.NonFiniteError, match="non-finite"):
    roll(good.at[0, 3].set(jnp.nan))
  with pytest.raises(errors.ConfigError, match="not periodic"):
    roll(g.x[None])  # a ramp: its wrap-around jump is the whole range
  with pytest.raises(errors.UserError):
    solver.build_model("fno", None, 4.0)


def test_training_targets_and_batches():
  g, _, _ = _advection_setup()
  params = pde.sample_sine_params(jax.random.key(2), 3, num_modes=2)
  traj = pde.advection_trajectories(
    params, g.x, jnp.arange(8) * 0.1, length=4.0
  )
  u, label = solver.training_targets(
    "hns", "advection", traj, g, 0.1, label_stencil="central"
  )
  np.testing.assert_array_equal(label, traj)  # dH/du = u (c = -1)
  u, inc = solver.training_targets(
    "next_step_cnn",
    "advection",
    traj,
    g,
    0.1,
    label_stencil="central",
    next_step_target="increment",
  )
  assert u.shape == inc.shape == (3, 7, 16)
  np.testing.assert_allclose(u + inc, traj[:, 1:], atol=1e-6)
  data = {"u": u, "target": inc}
  batch = solver.snapshot_batch(
    data, jax.random.key(0), 5, sampling="replacement"
  )
  assert batch["u"].shape == batch["target"].shape == (5, 16)


def test_epoch_sampling_visits_each_trajectory_once_per_epoch():
  # The official loader (DataLoader(shuffle=True)): 3 steps of 4 cover 12
  # snapshots = two epochs of 6 trajectories, each trajectory once per epoch
  # (the one time index each draws says which trajectory it came from).
  num_traj, num_t = 6, 5
  u = jnp.arange(num_traj, dtype=jnp.float32)[:, None, None] * jnp.ones(
    (1, num_t, 3)
  )
  data = {"u": u, "target": u}
  order = jax.random.key(7)
  batch = jax.jit(
    lambda k, s: solver.snapshot_batch(data, k, 4, step=s, order_key=order)
  )
  seen = [
    np.asarray(batch(jax.random.key(s), s)["u"][:, 0]).astype(int)
    for s in range(3)
  ]
  seen = np.concatenate(seen)
  for epoch in seen.reshape(2, num_traj):
    np.testing.assert_array_equal(np.sort(epoch), np.arange(num_traj))
  assert not np.array_equal(seen[:6], seen[6:])  # a fresh order each epoch
  with pytest.raises(errors.ConfigError, match="order_key"):
    solver.snapshot_batch(data, order, 4)
  with pytest.raises(errors.ConfigError, match="'epochs'"):
    solver.snapshot_batch(data, order, 4, sampling="epochs")


def test_metrics_oracles():
  t = jnp.linspace(0.0, 1.0, 10)
  x = jnp.linspace(0.0, 2 * np.pi, 32, endpoint=False)
  true = jnp.sin(x[None] + t[:, None])  # [T, n]
  pred = true.at[6:].set(-true[6:])
  assert int(pde.correlation_time(pred, true)) == 6
  assert int(pde.correlation_time(true, true)) == 10
  assert int(pde.correlation_time(pred.at[3].set(jnp.nan), true)) == 3
  np.testing.assert_allclose(pde.relative_l2(2 * true, true), 1.0, rtol=1e-6)
  np.testing.assert_allclose(
    pde.hamiltonian_error(jnp.array([2.0, 4.0]), jnp.array([1.0, 4.0])),
    0.125,
  )


def _with_correlations(corr_BT, n=32):
  """Trajectories [B, T, n] whose Pearson correlation with `true` (the same
  sine at every step) is exactly corr_BT: c sin + sqrt(1 - c^2) cos, cos
  being orthogonal to sin and both zero-mean on a full-period grid."""
  x = jnp.linspace(0.0, 2 * np.pi, n, endpoint=False)
  c = jnp.asarray(corr_BT, jnp.float32)[..., None]
  pred = c * jnp.sin(x) + jnp.sqrt(1.0 - c**2) * jnp.cos(x)
  return pred, jnp.broadcast_to(jnp.sin(x), pred.shape)


def test_official_correlation_time_thresholds_the_batch_mean():
  k = np.arange(12)  # T = 12 steps, 0..11
  a = 1.0 - 0.09 * k  # 0.82 at step 2, 0.73 at step 3: crosses at 3
  b = np.where(k < 9, 0.95, 0.3)  # crosses at 9
  pred, true = _with_correlations(np.stack([a, b]))
  np.testing.assert_allclose(
    pde_metrics.pearson_correlation(pred, true), np.stack([a, b]), atol=1e-5
  )
  np.testing.assert_array_equal(pde.correlation_time(pred, true), [3, 9])
  # Batch mean (1.95 - 0.09 k) / 2 < 0.8 iff k > 3.89: step 4 (mean 0.795),
  # not the mean of the trajectories' times (6).
  batch_time = jax.jit(
    pde_metrics.batch_correlation_time, static_argnames="batch_size"
  )
  np.testing.assert_array_equal(batch_time(pred, true, batch_size=32), [4])
  np.testing.assert_array_equal(batch_time(pred, true, batch_size=2), [4])
  np.testing.assert_array_equal(batch_time(pred, true, batch_size=1), [3, 9])
  # Never drops: the official nt - 1 = T - 1 (per trajectory: T).
  np.testing.assert_array_equal(batch_time(true, true), [11])
  np.testing.assert_array_equal(pde.correlation_time(true, true), [12, 12])
  # A NaN step never counts as below and ends the official rollout: with a
  # trajectory NaN from step 2, b's batch never drops (11), while per
  # trajectory the NaN one decorrelates at 2.
  nan_from_2 = true[0].at[2:].set(jnp.nan)
  diverged = jnp.stack([pred[1], nan_from_2])
  np.testing.assert_array_equal(batch_time(diverged, true), [11])
  np.testing.assert_array_equal(pde.correlation_time(diverged, true), [9, 2])
  # A drop before the NaN still counts: mean (2 - 0.09 k) / 2 < 0.8 iff
  # k > 4.44, i.e. step 5, before the NaN at step 7.
  early = jnp.stack([pred[0], true[0].at[7:].set(jnp.nan)])
  np.testing.assert_array_equal(batch_time(early, true), [5])
  assert pde_metrics.batch_sizes(5, 2) == [2, 2, 1]
  assert pde_metrics.batch_sizes(16, 32) == [16]


def test_metric_gradients_are_finite_where_the_norm_is_zero():
  # ||pred - true|| has the unit ball as subdifferential at pred == true;
  # the metric takes its minimum-norm element 0 (sqrt' at 0 times 0 was NaN).
  x = jnp.linspace(0.0, 2 * np.pi, 16, endpoint=False)
  true = jnp.sin(x)
  grad = jax.grad(lambda p: pde.relative_l2(p, true))(true)
  np.testing.assert_array_equal(grad, np.zeros(16))
  grad = jax.grad(lambda p: pde.rollout_error(p, true[None]))(true[None])
  np.testing.assert_array_equal(grad, np.zeros((1, 16)))
  # Away from 0 the gradient is (pred - true) / (||pred - true|| ||true||).
  pred = true + 0.1 * jnp.cos(x)
  grad = jax.grad(lambda p: pde.relative_l2(p, true))(pred)
  diff = pred - true
  expected = diff / (jnp.linalg.norm(diff) * jnp.linalg.norm(true))
  np.testing.assert_allclose(grad, expected, rtol=1e-5)
  # A constant prediction: correlation num / (den + eps) with num = den = 0;
  # along pred = c + s v it is s <v, t_c> / (|s| |v_c| |t_c| + eps), whose
  # derivative at s = 0 is <v, t_c> / eps: the gradient is t_c / eps.
  eps = 0.5
  corr, grad = jax.value_and_grad(
    lambda p: pde_metrics.pearson_correlation(p, true, eps=eps)
  )(jnp.full(16, 3.0))
  assert float(corr) == 0.0
  np.testing.assert_allclose(grad, (true - jnp.mean(true)) / eps, atol=1e-6)


def test_rollout_metrics_count_divergence():
  g = pde.periodic_grid(16, 4.0)
  true = jnp.broadcast_to(jnp.sin(2 * jnp.pi * g.x / 4.0), (3, 5, 16))
  pred = (
    true.at[0]
    .multiply(1.1)
    .at[1, 3:]
    .set(1e30)  # finite fields, float32-overflowing error
    .at[2, 2:]
    .set(jnp.nan)
  )
  metrics = jax.jit(
    lambda p, t: solver.rollout_metrics(
      "advection", p, t, g, stencil="central", corr_time="per_trajectory"
    )
  )
  m = metrics(pred, true)
  assert int(m["num_diverged"]) == 2
  assert "batch_correlation_time" not in m
  np.testing.assert_allclose(m["finite_fraction"], 1 / 3, rtol=1e-6)
  np.testing.assert_array_equal(m["traj_finite"], [True, False, False])
  # Divergence is counted: the error means are inf; the finite-only means
  # (for reading) are those of trajectory 0.
  assert np.isinf(m["rollout_error"]) and np.isinf(m["hamiltonian_error"])
  np.testing.assert_allclose(m["rollout_error_finite"], 0.1, rtol=1e-5)
  # H = 1/2 int u^2 scales by 1.21: squared relative error 0.21^2.
  np.testing.assert_allclose(m["hamiltonian_error_finite"], 0.21**2, rtol=1e-4)
  np.testing.assert_allclose(m["traj_rollout_error"][0], 0.1, rtol=1e-5)
  assert np.all(np.isinf(m["traj_rollout_error"][1:]))
  # A diverged trajectory decorrelates at the step it diverges (3 and 2).
  np.testing.assert_array_equal(m["traj_correlation_time"], [5, 3, 2])
  np.testing.assert_allclose(m["correlation_time"], 10 / 3, rtol=1e-6)
  np.testing.assert_allclose(m["diverged_at"], 2.5)
  # The official correlation time (the default): the batch mean is NaN from
  # step 2 (trajectory 2), which never counts, so the one batch of 3 scores
  # T - 1 = 4 although two of its trajectories diverged (num_diverged 2).
  official = jax.jit(
    lambda p, t, batch: solver.rollout_metrics(
      "advection", p, t, g, stencil="central", corr_batch=batch
    ),
    static_argnums=2,
  )
  m = official(pred, true, 32)
  np.testing.assert_array_equal(m["batch_correlation_time"], [4])
  assert float(m["correlation_time"]) == 4.0 and int(m["num_diverged"]) == 2
  # Beside it, the per-trajectory mean, divergence counted: (5 + 3 + 2) / 3.
  np.testing.assert_allclose(
    m["correlation_time_per_trajectory"], 10 / 3, rtol=1e-6
  )
  # Batches of 2: [0, 1] drops at step 3 (mean of 1 and 0: the overflowing
  # field has correlation 0), [2] never counts (NaN): (2 x 3 + 1 x 4) / 3.
  m = official(pred, true, 2)
  np.testing.assert_array_equal(m["batch_correlation_time"], [3, 4])
  np.testing.assert_allclose(m["correlation_time"], 10 / 3, rtol=1e-6)
  np.testing.assert_array_equal(m["traj_correlation_time"], [5, 3, 2])
  with pytest.raises(errors.ConfigError, match="corr_time"):
    solver.rollout_metrics(
      "advection", pred, true, g, stencil="central", corr_time="per_batch"
    )
  # Without divergence both means agree and diverged_at is NaN.
  m = metrics(pred[:1], true[:1])
  assert float(m["finite_fraction"]) == 1.0 and np.isnan(m["diverged_at"])
  np.testing.assert_allclose(m["rollout_error"], m["rollout_error_finite"])


def test_mean_interval_is_the_student_t_interval():
  mean, lo, hi = pde_metrics.mean_interval([1.0, 2.0, 3.0])
  # sd 1, n 3: half width t_{0.975, 2} / sqrt(3), t_{0.975, 2} = 4.302653.
  half = 4.302652729911275 / np.sqrt(3.0)
  np.testing.assert_allclose([mean, lo, hi], [2.0, 2.0 - half, 2.0 + half])
  _, lo, hi = pde_metrics.mean_interval([1.0, 2.0, 3.0], level=0.5)
  assert 2.0 - half < lo < hi < 2.0 + half
  assert all(np.isnan(pde_metrics.mean_interval([1.0])[1:]))
  assert all(np.isnan(pde_metrics.mean_interval([1.0, np.inf])[1:]))


@pytest.mark.parametrize("stencil", ["central", "spectral"])
def test_cnn_derivative_channel_is_j_u(stencil):
  # A CNN without hidden layers whose kernel picks the centre tap of the
  # second channel outputs exactly J u = d/dx u with the given stencil.
  with jax.enable_x64(True):
    g = pde.periodic_grid(32, 4.0)
    model = pde.PeriodicCNN(
      channels=(), kernel_size=3, derivative_stencil=stencil, length=4.0
    )
    u = jnp.sin(2 * jnp.pi * g.x / 4.0) + 0.5 * jnp.cos(6 * jnp.pi * g.x / 4.0)
    params = model.init(jax.random.key(0), u)
    leaves = params["params"]["PeriodicConv_0"]
    # Patch rows: tap j of input channel c is row j * 2 + c; centre tap 1.
    kernel = jnp.zeros_like(leaves["kernel"]).at[1 * 2 + 1, 0].set(1.0)
    params = {"params": {"PeriodicConv_0": {**leaves, "kernel": kernel}}}
    out = model.apply(params, u)
    exact = pde.first_derivative(u, dx=g.dx, length=4.0, stencil=stencil)
    np.testing.assert_allclose(out, exact, atol=1e-12)
    if stencil == "spectral":  # exact for band-limited fields
      k = 2 * jnp.pi / 4.0
      analytic = k * jnp.cos(k * g.x) - 1.5 * k * jnp.sin(3 * k * g.x)
      np.testing.assert_allclose(out, analytic, atol=1e-10)


def test_official_nf_layout_has_the_official_parameter_count():
  # adv.yaml 'nf': 6 sine layers 32 -> 32 (6 x 1,056), one FiLM MLP
  # 32 -> 32 -> 32 -> 64 per layer (6 x 4,224), lifts 1 -> 32 and 1 -> 16.
  expected = 6 * (32 * 32 + 32) + 6 * (2 * (32 * 32 + 32) + 32 * 64 + 64)
  expected += 2 * 32 + 2 * 16
  assert expected == 31_776
  model = pde.IntegralKernelFunctional(length=16.0, **pde.hns.OFFICIAL_NF)
  grid = pde.interval_grid(16, 0.0, 16.0)
  params = model.init(jax.random.key(0), grid.x, grid.x, grid.mu * grid.dx)
  assert sum(p.size for p in jax.tree.leaves(params)) == expected
  # The SIREN sees the 32 coordinate features only; u enters through FiLM.
  assert params["params"]["siren_0"]["kernel"].shape == (32, 32)


@pytest.mark.parametrize("film_per_layer", [False, True])
def test_ikf_is_the_quadrature_of_its_density(film_per_layer):
  model = pde.IntegralKernelFunctional(
    length=4.0,
    width=8,
    num_layers=3,
    proj_dim=8,
    film_hidden=(8,),
    film_per_layer=film_per_layer,
  )
  grid = pde.periodic_grid(12, 4.0)
  u = jnp.sin(2 * jnp.pi * grid.x / 4.0)
  mu_dx = grid.mu * grid.dx
  params = model.init(jax.random.key(1), u, grid.x, mu_dx)
  e = model.apply(params, u, grid.x, method=model.density)
  h = model.apply(params, u, grid.x, mu_dx)
  np.testing.assert_allclose(h, jnp.sum(mu_dx * e), rtol=1e-6)
  # Local FiLM: e_i depends on u_i alone, so dH/du_i / (mu_i dx) = de_i/du_i.
  assert model.pointwise
  de = jax.jvp(
    lambda v: model.apply(params, v, grid.x, method=model.density),
    (u,),
    (jnp.ones_like(u),),
  )[1]
  fd = pde.functional_derivative(
    lambda v: model.apply(params, v, grid.x, mu_dx), u, mu_dx
  )
  np.testing.assert_allclose(fd, de, rtol=1e-4, atol=1e-5)


def test_ikf_refuses_a_batch_of_fields_in_one_line():
  # A [B, n] batch (or x of another length) failed inside jnp.concatenate
  # with a TypeError about dimensions; the module takes one field, vmapped.
  g = pde.periodic_grid(16, 1.0)
  model = pde.IntegralKernelFunctional(length=1.0, width=8, proj_dim=4)
  u = jnp.sin(2 * np.pi * g.x)
  mu_dx = g.mu * g.dx
  with pytest.raises(errors.ShapeError, match="one field u"):
    model.init(jax.random.key(0), jnp.stack([u, u]), g.x, mu_dx)
  with pytest.raises(errors.ShapeError, match="one field u"):
    model.init(jax.random.key(0), u, g.x[:8], mu_dx)
  params = model.init(jax.random.key(0), u, g.x, mu_dx)
  h = jax.vmap(lambda v: model.apply(params, v, g.x, mu_dx))(jnp.stack([u, u]))
  np.testing.assert_array_equal(h[0], h[1])


def test_rollout_refuses_an_unbatched_initial_condition():
  # u0 [n] passed the grid check ([..., n]) and was vmapped over its points:
  # an IndexError or a shape error from inside the model.
  g = pde.periodic_grid(16, 1.0)
  model = pde.PeriodicCNN(channels=(4,), kernel_size=3)
  u = jnp.sin(2 * np.pi * g.x)
  params = model.init(jax.random.key(0), u)
  with pytest.raises(errors.ShapeError, match=r"u0 \[B, n\]"):
    solver.rollout("derivative_cnn", model, params, u, g, dt=0.01, num_steps=2)


def test_a_misspelt_model_kind_is_refused_by_rollout_and_loss():
  # "next_step" (for "next_step_cnn") was rolled out as a du/dt model by AB2
  # and trained as one, silently.
  g = pde.periodic_grid(16, 1.0)
  model = pde.PeriodicCNN(channels=(4,), kernel_size=3)
  u = jnp.sin(2 * np.pi * g.x)
  params = model.init(jax.random.key(0), u)
  with pytest.raises(
    errors.ConfigError, match="unknown model kind 'next_step'"
  ):
    solver.rollout("next_step", model, params, u[None], g, dt=0.1, num_steps=2)
  with pytest.raises(errors.ConfigError, match="unknown model kind"):
    solver.relative_l2_loss("next_step", model, g)
  # The real kind steps CNN(u) ("state") or u + CNN(u) ("increment").
  for target, expected in (
    ("state", model.apply(params, u)),
    ("increment", u + model.apply(params, u)),
  ):
    traj = solver.rollout(
      "next_step_cnn",
      model,
      params,
      u[None],
      g,
      dt=0.1,
      num_steps=1,
      next_step_target=target,
    )
    np.testing.assert_allclose(traj[0, 1], expected, rtol=1e-6, atol=1e-6)


def test_non_periodic_message_names_the_offending_field():
  # The message paired the batch's largest wrap-around jump (here the good
  # field's 3.83) with its smallest interior jump; now the bad field's own.
  x = np.arange(16) / 16
  ramp = 0.5 * x  # wrap 0.469, interior 0.0312
  wave = 10 * np.sin(2 * np.pi * x)  # periodic; wrap 3.83
  with pytest.raises(
    errors.ConfigError, match=r"field \[0\].*= 0\.469.*0\.0312"
  ):
    pde.check_initial_condition(np.stack([ramp, wave]), 16)
  with pytest.raises(errors.ShapeError, match="n_x >= 2"):
    pde.check_initial_condition(np.ones(1), 1)


def test_periodic_cnn_refuses_a_batch_of_fields():
  # A [B, n] batch was convolved across its batch axis (the rolls run over
  # axis 0), silently; vmapped, each field is its own periodic signal.
  model = pde.PeriodicCNN(channels=(4,), kernel_size=3)
  u = jnp.sin(2 * np.pi * jnp.arange(16) / 16)
  with pytest.raises(errors.ShapeError, match="one field u"):
    model.init(jax.random.key(0), jnp.stack([u, u]))
  params = model.init(jax.random.key(0), u)
  batch = jax.vmap(lambda v: model.apply(params, v))(
    jnp.stack([u, jnp.roll(u, 3)])
  )
  # Circular convolution commutes with a periodic shift.
  np.testing.assert_allclose(batch[1], jnp.roll(batch[0], 3), atol=1e-6)


def test_kernel_mlp_functional_refuses_a_batch_of_fields():
  # With the linear kernel a [B, n] batch broadcast against kappa [n] and
  # H summed over the whole batch: one number, silently.
  g = pde.periodic_grid(16, 1.0)
  model = pde.KernelMLPFunctional(hidden=(4,), kernel_type="linear")
  u = jnp.sin(2 * np.pi * g.x)
  mu_dx = g.mu * g.dx
  with pytest.raises(errors.ShapeError, match="one field u"):
    model.init(jax.random.key(0), jnp.stack([u, u]), g.x, mu_dx)
  params = model.init(jax.random.key(0), u, g.x, mu_dx)
  h = jax.vmap(lambda v: model.apply(params, v, g.x, mu_dx))(jnp.stack([u, -u]))
  np.testing.assert_allclose(h[1], -h[0])  # linear in u for kappa(x)


class _LinearStep(nn.Module):
  """f(u) = A u with a fixed matrix A (params {"params": {"a": A}})."""

  n: int

  @nn.compact
  def __call__(self, u):
    a = self.param("a", nn.initializers.zeros, (self.n, self.n))
    return a @ u


def _next_step_setup():
  g = pde.periodic_grid(8, 1.0)
  traj = (
    jnp.sin(2 * np.pi * (g.x[None, None] - 0.1 * jnp.arange(5)[None, :, None]))
    * jnp.asarray([1.0, 0.5])[:, None, None]
  )  # [2, 5, 8]
  # A = 0.9 x (shift by one point): a contracting advection step.
  a = 0.9 * jnp.roll(jnp.eye(g.n), 1, axis=0)
  model = _LinearStep(g.n)
  return g, traj, model, {"params": {"a": a}}, a


def test_next_step_state_targets_and_rollout_are_the_official_normal_mode():
  # modules/train_module.py: label = u[idx + 1], idx < nt - 1, and the
  # rollout returns the prediction itself: u_{t+1} = f(u_t).
  g, traj, model, params, a = _next_step_setup()
  u, target = solver.training_targets(
    "next_step_cnn", "advection", traj, g, 0.1, label_stencil="central"
  )  # "state" is the default
  np.testing.assert_array_equal(u, traj[:, :-1])
  np.testing.assert_array_equal(target, traj[:, 1:])
  pred = solver.rollout(
    "next_step_cnn", model, params, traj[:, 0], g, dt=0.1, num_steps=4
  )
  v, expected = np.asarray(traj[:, 0]), [np.asarray(traj[:, 0])]
  for _ in range(4):
    v = v @ np.asarray(a).T
    expected.append(v)
  np.testing.assert_allclose(pred, np.stack(expected, 1), rtol=1e-6)
  # The loss is the relative L2 of u_{t+1}: zero for the exact step map.
  exact = {"params": {"a": jnp.roll(jnp.eye(g.n), 1, axis=0)}}
  shift = {"u": traj[:, 0], "target": jnp.roll(traj[:, 0], 1, axis=-1)}
  loss, _ = solver.relative_l2_loss("next_step_cnn", model, g)(
    exact, shift, None
  )
  assert float(loss) == 0.0


def test_next_step_increment_is_the_old_path_bitwise():
  # "increment" (ours until 2026-12-05): targets u_{t+1} - u_t, rollout
  # u_t + f(u_t), bit for bit what the next-step CNN did before the option.
  g, traj, model, params, a = _next_step_setup()
  u, inc = solver.training_targets(
    "next_step_cnn",
    "advection",
    traj,
    g,
    0.1,
    label_stencil="central",
    next_step_target="increment",
  )
  np.testing.assert_array_equal(u, traj[:, :-1])
  np.testing.assert_array_equal(inc, traj[:, 1:] - traj[:, :-1])
  pred = solver.rollout(
    "next_step_cnn",
    model,
    params,
    traj[:, 0],
    g,
    dt=0.1,
    num_steps=4,
    next_step_target="increment",
  )
  old = jax.jit(
    jax.vmap(
      lambda v: pde.next_step_rollout(
        lambda w: w + model.apply(params, w), v, 4
      )
    )
  )(traj[:, 0])
  np.testing.assert_array_equal(pred, old)


def test_an_unknown_next_step_target_is_refused():
  g, traj, model, params, _ = _next_step_setup()
  with pytest.raises(
    errors.ConfigError, match="next_step_target='residual' is not one of"
  ):
    solver.training_targets(
      "next_step_cnn",
      "advection",
      traj,
      g,
      0.1,
      label_stencil="central",
      next_step_target="residual",
    )
  with pytest.raises(
    errors.ConfigError, match="next_step_target='residual' is not one of"
  ):
    solver.rollout(
      "next_step_cnn",
      model,
      params,
      traj[:, 0],
      g,
      dt=0.1,
      num_steps=2,
      next_step_target="residual",
    )


def test_oracle_rollout_on_advection_is_the_exact_shift():
  # Advection's label is dH/du = u, so the oracle's field is J u = u_x
  # (spectral J) and u(x, t) = u0(x + t) exactly; AB2's error is O(dt^2).
  n, length, dt, steps = 64, 16.0, 0.01, 100
  grid = pde.periodic_grid(n, length)
  x = np.asarray(grid.x)
  u0 = lambda t: (
    np.sin(2 * np.pi * (x + t) / length)
    + 0.5 * np.cos(4 * np.pi * (x + t) / length)
  )
  out = solver.oracle_rollout(
    "advection",
    jnp.asarray(u0(0.0))[None],
    grid,
    dt=dt,
    num_steps=steps,
    stencil="spectral",
  )
  assert out.shape == (1, steps + 1, n)
  np.testing.assert_allclose(out[0, -1], u0(steps * dt), atol=2e-4)
  with pytest.raises(errors.ShapeError, match="u0"):
    solver.oracle_rollout("advection", u0(0.0), grid, dt=dt, num_steps=2)
