"""Training losses, batch samplers and rollouts for HNS and its baselines.

These are the pieces an experiment plugs into `lib.train` (loss_fn,
batch_fn) plus the jitted rollouts and their metrics.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025, Alg. 1, Sec. 4.2, App. B.1 / D.
"""

import functools

import jax
import jax.numpy as jnp

from lib.core import errors
from lib.core import rng
from lib.pde import hamiltonians
from lib.pde import hns
from lib.pde import integrators
from lib.pde import metrics
from lib.pde import operators
from lib.pde import validation

MODEL_KINDS = ("hns", "derivative_cnn", "next_step_cnn")
# What the next-step CNN outputs, is trained on and steps with:
# "state" (the official 'normal' mode, modules/train_module.py
# `get_data_labels` / `inference_step`): f(u_t) = u_{t+1}, the relative L2 of
# u_{t+1}, rollout u_{t+1} = f(u_t); "increment" (ours until 2026-12-05):
# f(u_t) = u_{t+1} - u_t, the relative L2 of the increment, rollout
# u_{t+1} = u_t + f(u_t).
NEXT_STEP_TARGETS = ("state", "increment")
# How training batches pick trajectories (`snapshot_batch`).
SNAPSHOT_SAMPLINGS = ("epoch", "replacement")


def build_model(kind, model_config, length):
  """Builds the flax module of one model kind from a config block."""
  if kind == "hns":
    return hns.IntegralKernelFunctional(
      length=length,
      width=model_config.width,
      num_layers=model_config.num_layers,
      proj_dim=model_config.proj_dim,
      kernel_type=model_config.kernel_type,
      film=model_config.film,
      film_hidden=tuple(model_config.film_hidden),
      film_kernel_size=model_config.film_kernel_size,
      omega0=model_config.omega0,
      # Switches toward the official 'nf' layout (hns.OFFICIAL_NF); absent
      # keys keep ours.
      concat_u=model_config.get("concat_u", True),
      film_per_layer=model_config.get("film_per_layer", False),
      film_gamma_offset=model_config.get("film_gamma_offset", 1.0),
      normalize_x=model_config.get("normalize_x", True),
      exact_gelu=model_config.get("exact_gelu", False),
    )
  if kind in ("derivative_cnn", "next_step_cnn"):
    # Optional J u input channel (see hns.PeriodicCNN); absent key: u only.
    stencil = model_config.get("derivative_stencil", None)
    return hns.PeriodicCNN(
      channels=tuple(model_config.channels),
      kernel_size=model_config.kernel_size,
      derivative_stencil=stencil or None,
      length=float(length),
    )
  raise errors.ConfigError(
    f"unknown model kind {kind!r}; expected one of {MODEL_KINDS}"
  )


def init_params(kind, model, grid, key):
  """Initial params for one field on `grid`."""
  u = jnp.zeros_like(grid.x)
  if kind == "hns":
    return model.init(key, u, grid.x, grid.mu * grid.dx)
  return model.init(key, u)


def field_map(kind, model, grid):
  """(params, u [n]) -> the model's per-field output.

  HNS: the functional derivative dH_theta/du (autodiff, divided by mu dx).
  derivative CNN: du/dt. next-step CNN: u_{t+1} (target "state") or
  u_{t+1} - u_t ("increment"; see NEXT_STEP_TARGETS).

  Raises:
    ConfigError: an unknown kind (a misspelt one was treated as a CNN).
  """
  errors.check(
    kind in MODEL_KINDS,
    errors.ConfigError,
    f"unknown model kind {kind!r}; expected one of {MODEL_KINDS}",
  )
  if kind == "hns":
    mu_dx = grid.mu * grid.dx

    def fd(params, u):
      h = lambda v: model.apply(params, v, grid.x, mu_dx)
      return hns.functional_derivative(h, u, mu_dx)

    return fd
  return lambda params, u: model.apply(params, u)


def snapshot_batch(
  data, key, batch_size, *, sampling="epoch", step=None, order_key=None
):
  """One random time index for each of `batch_size` trajectories.

  sampling: which trajectories (`SNAPSHOT_SAMPLINGS`).
    "epoch" (default, the official loader: `DataLoader(shuffle=True)` over
      the trajectories, data/datamodule.py, each item one random time):
      every epoch visits each trajectory once, in the order
      `rng.epoch_indices(order_key, step, ...)`; a batch straddles two
      epochs where batch_size does not divide the trajectories.
    "replacement" (ours until 2026-12-05, a named mode): batch_size
      trajectories drawn with replacement at every step, so one may repeat
      within a batch. Both are unbiased for the mean loss over snapshots.
  The time indices come from `key` in both.

  Args:
    data: {"u": [B, T, n], "target": [B, T, n]} (device arrays).
    key: this step's PRNG key.
    batch_size: snapshots per batch.
    sampling: "epoch" | "replacement".
    step, order_key: the step and the run's order key (same at every step);
      "epoch" only.

  Returns:
    {"u": [batch, n], "target": [batch, n]}.
  """
  num_traj, num_t = data["u"].shape[:2]
  errors.check_one_of(sampling, SNAPSHOT_SAMPLINGS, "sampling")
  k_traj, k_time = jax.random.split(key)
  if sampling == "epoch":
    errors.check(
      step is not None and order_key is not None,
      errors.ConfigError,
      "snapshot sampling 'epoch' needs the step and the run's order_key",
    )
    traj = rng.epoch_indices(order_key, step, num_traj, batch_size)
  else:
    traj = jax.random.randint(k_traj, (batch_size,), 0, num_traj)
  time = jax.random.randint(k_time, (batch_size,), 0, num_t)
  return {"u": data["u"][traj, time], "target": data["target"][traj, time]}


def relative_l2_loss(kind, model, grid):
  """loss_fn(params, batch, key) -> (mean relative L2, aux) for `lib.train`.

  Unsquared per-sample relative L2, batch mean (as the official code's
  ScaledLpLoss; the paper writes it squared).
  """
  fmap = jax.vmap(field_map(kind, model, grid), in_axes=(None, 0))

  def loss_fn(params, batch, key):
    del key
    pred = fmap(params, batch["u"])
    # Plain sqrt (NaN gradient only where pred == target exactly): the
    # zero-safe gradient compiles differently and moved the runs' bits.
    rel = metrics.relative_l2(pred, batch["target"], zero_safe=False)
    mse = jnp.mean((pred - batch["target"]) ** 2)
    return jnp.mean(rel), {"mse": mse}

  return loss_fn


def training_targets(
  kind, pde, traj, grid, dt, *, label_stencil, next_step_target="state"
):
  """Aligned (u, target) arrays [B, T', n] for one model kind.

  HNS: analytic dH/du labels on the data. Derivative CNN: 4th-order
  Richardson du/dt. Next-step CNN: inputs u_t = traj[:, :-1] (T' = T - 1, so
  that every sampled time has its u_{t+1} in the window, as the official
  `torch.randint(0, nt - 1)`), targets u_{t+1} = traj[:, 1:] with
  `next_step_target="state"` (the official 'normal' mode,
  modules/train_module.py `get_data_labels`: label = u[idx + 1]) or the
  increment u_{t+1} - u_t with "increment" (ours until 2026-12-05). The
  loss is the relative L2 of that target either way (`relative_l2_loss`).
  """
  if kind == "hns":
    label = hamiltonians.functional_derivative_label(
      pde, traj, grid, stencil=label_stencil
    )
    return traj, label
  if kind == "derivative_cnn":
    dudt = jax.vmap(integrators.richardson_dudt, in_axes=(0, None))(traj, dt)
    return traj, dudt
  if kind == "next_step_cnn":
    errors.check_one_of(next_step_target, NEXT_STEP_TARGETS, "next_step_target")
    if next_step_target == "state":
      return traj[:, :-1], traj[:, 1:]
    return traj[:, :-1], traj[:, 1:] - traj[:, :-1]
  raise errors.ConfigError(
    f"unknown model kind {kind!r}; expected one of {MODEL_KINDS}"
  )


@functools.partial(
  jax.jit,
  static_argnames=(
    "kind",
    "model",
    "grid_static",
    "stencil",
    "num_steps",
    "next_step_target",
  ),
)
def _rollout(
  params,
  u0,
  dt,
  *,
  kind,
  model,
  grid_static,
  stencil,
  num_steps,
  next_step_target,
):
  grid = grid_static.grid
  fmap = field_map(kind, model, grid)
  if kind == "next_step_cnn":
    if next_step_target == "state":
      step = lambda u: fmap(params, u)
    else:
      step = lambda u: u + fmap(params, u)
    roll = lambda v: integrators.next_step_rollout(step, v, num_steps)
  else:
    if kind == "hns":
      j = operators.dx_operator(dx=grid.dx, length=grid.length, stencil=stencil)
      f = hns.hamiltonian_vector_field(lambda u: fmap(params, u), j)
    else:
      f = lambda u: fmap(params, u)
    roll = lambda v: integrators.ab2_rollout(f, v, dt, num_steps)
  return jax.vmap(roll)(u0)


class _StaticGrid:
  """Hashable wrapper so a Grid can be a static jit argument."""

  def __init__(self, grid):
    self.grid = grid
    # The weights matter too: uniform and trapezoid grids share n and dx.
    mu = tuple(float(w) for w in jax.device_get(grid.mu))
    self._key = (grid.n, float(grid.dx), float(grid.length), mu)

  def __hash__(self):
    return hash(self._key)

  def __eq__(self, other):
    return isinstance(other, _StaticGrid) and self._key == other._key


def rollout(
  kind,
  model,
  params,
  u0,
  grid,
  *,
  dt,
  num_steps,
  stencil="central",
  next_step_target="state",
):
  """Rolls a trained model out from u0 [B, n] -> [B, num_steps + 1, n].

  HNS and the derivative CNN use AB2 with an Euler first step (HNS on
  u_t = J dH_theta/du); the next-step CNN is autoregressive:
  u_{t+1} = f(u_t) with `next_step_target="state"` (the official 'normal'
  mode, modules/train_module.py `inference_step`: return pred), u_t + f(u_t)
  with "increment" (ours until 2026-12-05); it must match the target the
  model was trained on (`training_targets`).

  Raises:
    ShapeError / NonFiniteError / ConfigError: u0 is not [B, n] on the
      grid, is not finite or is not periodic (checked on the host first).
  """
  errors.check(
    jnp.ndim(u0) == 2,
    errors.ShapeError,
    f"rollout takes a batch of initial conditions u0 [B, n], got shape "
    f"{jnp.shape(u0)} (one field: u0[None])",
  )
  errors.check_one_of(next_step_target, NEXT_STEP_TARGETS, "next_step_target")
  validation.check_initial_condition(u0, grid.n)
  return _rollout(
    params,
    jnp.asarray(u0),
    dt,
    kind=kind,
    model=model,
    grid_static=_StaticGrid(grid),
    stencil=stencil,
    num_steps=num_steps,
    next_step_target=next_step_target,
  )


@functools.partial(
  jax.jit,
  static_argnames=(
    "pde",
    "grid_static",
    "stencil",
    "label_stencil",
    "num_steps",
  ),
)
def _oracle_rollout(
  u0, dt, *, pde, grid_static, stencil, label_stencil, num_steps
):
  grid = grid_static.grid
  j = operators.dx_operator(dx=grid.dx, length=grid.length, stencil=stencil)
  label = lambda u: hamiltonians.functional_derivative_label(
    pde, u, grid, stencil=label_stencil
  )
  f = hns.hamiltonian_vector_field(label, j)
  return jax.vmap(lambda v: integrators.ab2_rollout(f, v, dt, num_steps))(u0)


def oracle_rollout(
  pde, u0, grid, *, dt, num_steps, stencil="central", label_stencil="central"
):
  """An HNS whose dH/du is exact (the training label itself) rolled out
  like a trained one: J of `stencil`, AB2 at `dt`. [B, num_steps + 1, n].

  The ceiling the discretisation (J and label stencils, grid, integrator,
  step) sets for any learned H: where it decorrelates early, a trained HNS
  cannot do better than it, whatever it learns.
  """
  errors.check(
    jnp.ndim(u0) == 2,
    errors.ShapeError,
    f"oracle_rollout takes u0 [B, n], got shape {jnp.shape(u0)}",
  )
  validation.check_initial_condition(u0, grid.n)
  return _oracle_rollout(
    jnp.asarray(u0),
    dt,
    pde=pde,
    grid_static=_StaticGrid(grid),
    stencil=stencil,
    label_stencil=label_stencil,
    num_steps=num_steps,
  )


def rollout_metrics(
  pde,
  pred,
  true,
  grid,
  *,
  stencil,
  threshold=0.8,
  corr_time="official",
  corr_batch=32,
):
  """Rollout relative L2, correlation time, H error, with divergence counted.

  A trajectory *diverged* when its rollout, or an error computed from it,
  is not finite at some step (a float32 overflow of the error counts too).
  Divergence is counted, never dropped, except where the official
  correlation time drops it (then num_diverged says how many):

  - correlation_time, `corr_time="official"` (the default; the paper's
    numbers): as the official code (modules/train_module.py `rollout`,
    `PearsonCorrelationScore(reduce_batch=True)`): the Pearson correlation
    averaged over a batch of `corr_batch` validation trajectories first (all
    of them when fewer), the first step where that batch mean drops below
    `threshold` (T - 1, the official nt - 1, if never), one time per batch
    (`batch_correlation_time` [K]), then the mean over batches weighted by
    batch size (Lightning's epoch mean of the logged per-batch value; equal
    batches: the plain mean). A NaN step never counts as below there, so a
    diverged batch can look correlated to the end: read it next to
    num_diverged.
  - correlation_time, `corr_time="per_trajectory"` (ours): each
    trajectory's first step below `threshold`, a non-finite step counting as
    below (so a diverged trajectory's time is at most the step it diverged
    at; T if it never drops), the mean over trajectories.
  - correlation_time_per_trajectory: the per_trajectory mode's number in
    either mode, so that a run read by the official rule shows next to it
    what divergence does to the time.
  - traj_correlation_time: the per-trajectory times in either mode.
  - rollout_error, hamiltonian_error: the mean over all trajectories, a
    diverged trajectory's error being +inf (one diverged trajectory makes the
    mean inf, as the paper's "nan" for FNO on KdV, Table 4).
  - *_finite: the mean over the non-diverged trajectories only (inf when
    none), for reading next to finite_fraction; never a claim's number.
  - finite_fraction: fraction of trajectories that did not diverge;
    num_diverged: how many did;
    diverged_at: mean over the diverged ones of the first step whose field,
    relative L2 or H error is not finite (NaN when none diverged).

  Args:
    pde: "advection" or "kdv" (analytic H of App. B.1).
    pred, true: [B, T, n].
    grid: the grid.
    stencil: derivative stencil for H (KdV's u_x).
    threshold: correlation threshold (0.8 in the paper).
    corr_time: "official" or "per_trajectory" (`metrics.CORRELATION_TIMES`).
    corr_batch: trajectories per batch of the official correlation time.

  Returns:
    dict of scalars, per-trajectory [B] arrays under "traj_*" keys
    (traj_rollout_error, traj_hamiltonian_error with inf where diverged,
    traj_correlation_time, traj_finite), in the official mode the [K]
    per-batch times under "batch_correlation_time", and the batch-mean H
    traces [T] (true; predicted over the non-diverged trajectories) for
    plots.
  """
  errors.check(
    corr_time in metrics.CORRELATION_TIMES,
    errors.ConfigError,
    f"corr_time={corr_time!r}; choose from {list(metrics.CORRELATION_TIMES)}",
  )
  h_true = hamiltonians.hamiltonian(pde, true, grid, stencil=stencil)
  h_pred = hamiltonians.hamiltonian(pde, pred, grid, stencil=stencil)
  rel_t = metrics.relative_l2(pred, true)  # [B, T]
  h_err_t = metrics.hamiltonian_error_steps(h_true, h_pred)
  # The first step at which the field, its error or its H error is not
  # finite (float32 overflows before the fields themselves become inf).
  bad_t = ~(
    jnp.all(jnp.isfinite(pred), axis=-1)
    & jnp.isfinite(rel_t)
    & jnp.isfinite(h_err_t)
  )
  num_steps = pred.shape[-2]
  nonfinite_at = jnp.where(
    jnp.any(bad_t, axis=-1), jnp.argmax(bad_t, axis=-1), num_steps
  )
  rel = jnp.mean(rel_t, axis=-1)
  h_err = jnp.mean(h_err_t, axis=-1)
  finite = (nonfinite_at == num_steps) & jnp.isfinite(rel) & jnp.isfinite(h_err)
  count = jnp.sum(finite)

  def counted(per_traj):
    return jnp.where(finite, per_traj, jnp.inf)

  def finite_mean(per_traj):
    total = jnp.sum(jnp.where(finite, per_traj, 0.0))
    return jnp.where(count > 0, total / jnp.maximum(count, 1), jnp.inf)

  diverged = ~finite
  num_diverged = jnp.sum(diverged)
  diverged_at = jnp.where(
    num_diverged > 0,
    jnp.sum(jnp.where(diverged, nonfinite_at, 0))
    / jnp.maximum(num_diverged, 1),
    jnp.nan,
  )
  corr = metrics.correlation_time(pred, true, threshold).astype(jnp.float32)
  by_batch = {}
  if corr_time == "official":
    times = metrics.batch_correlation_time(
      pred, true, threshold, batch_size=corr_batch
    ).astype(jnp.float32)
    sizes = jnp.asarray(metrics.batch_sizes(pred.shape[0], corr_batch))
    by_batch["batch_correlation_time"] = times
    mean_corr = jnp.sum(times * sizes) / jnp.sum(sizes)
  else:
    mean_corr = jnp.mean(corr)
  h_pred_safe = jnp.where(finite[:, None], h_pred, 0.0)
  return {
    "rollout_error": jnp.mean(counted(rel)),
    "rollout_error_finite": finite_mean(rel),
    "correlation_time": mean_corr,
    "correlation_time_per_trajectory": jnp.mean(corr),
    **by_batch,
    "hamiltonian_error": jnp.mean(counted(h_err)),
    "hamiltonian_error_finite": finite_mean(h_err),
    "finite_fraction": jnp.mean(finite.astype(jnp.float32)),
    "num_diverged": num_diverged,
    "diverged_at": diverged_at.astype(jnp.float32),
    "traj_rollout_error": counted(rel),
    "traj_hamiltonian_error": counted(h_err),
    "traj_correlation_time": corr,
    "traj_finite": finite,
    "h_true_trace": jnp.mean(h_true, axis=0),
    "h_pred_trace": jnp.sum(h_pred_safe, axis=0) / jnp.maximum(count, 1),
  }


def task_parts(kind, model, grid, u, target, *, batch_size, sampling="epoch"):
  """init_fn, loss_fn, batch_fn and data for one model's training runs.

  Args:
    kind: model kind.
    model: its flax module.
    grid: the grid.
    u, target: aligned [B, T, n] arrays from `training_targets`.
    batch_size: snapshots per step (one random time per trajectory).
    sampling: how batches pick trajectories (`snapshot_batch`).

  Returns:
    dict with keys init_fn, loss_fn, data and batch_fn: (data, key, step,
    order_key) -> batch, `order_key` the run's key for the epoch order.
  """
  errors.check_one_of(sampling, SNAPSHOT_SAMPLINGS, "sampling")

  def batch_fn(data, key, step, order_key):
    return snapshot_batch(
      data, key, batch_size, sampling=sampling, step=step, order_key=order_key
    )

  return {
    "init_fn": lambda key: init_params(kind, model, grid, key),
    "loss_fn": relative_l2_loss(kind, model, grid),
    "batch_fn": batch_fn,
    "data": {"u": u, "target": target},
  }
