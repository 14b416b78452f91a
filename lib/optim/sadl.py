"""SADL: sketched adaptive distributed learning on a JAX device mesh.

One communication round (paper Alg. 1-2), for C clients that are the devices
of the `clients` axis of a `jax.make_mesh` mesh (C may be a multiple of the
device count; each device then runs C / devices clients with `vmap`):

  1. every client starts from the server's x (clients replay the server step,
     so x, m, v are identical everywhere and stay replicated);
  2. K local SGD steps on the client's own data: x_K = x_0 - eta * sum g_k;
  3. the client sketches its delta x_0 - x_K with the round's shared R_t
     (fresh each round, from the round key) -- two independent half-sketches,
     one for the first moment and one for the second;
  4. the sketches are averaged with `lax.pmean` over the `clients` axis: by
     linearity that is the sketch of the mean delta, and only b numbers per
     client cross the network in each direction;
  5. every device de-sketches both halves and takes the server step: Adam or
     AMSGrad on the de-sketched average, the second moment fed with the square
     of the de-sketched *second* half (`scale_by_sketched_adam`).

The per-client work runs under `jax.shard_map`, so the same code runs on 8
fake CPU devices, the GPUs of one box, or many hosts after
`jax.distributed.initialize()`. Baselines share the round: uncompressed
distributed Adam (identity sketch), sketched SGD and FetchSGD (count-sketch
table, momentum and error feedback in sketch space, top-k recovery).

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Alg. 1-2; eps finding: spec B.5).
  Rothchild et al. "FetchSGD", ICML 2020 (Alg. 1).
"""

import functools
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lib.core import errors
from lib.core import mesh as mesh_lib
from lib.core import rng
from lib.optim import sketch as sketch_lib

CLIENTS_AXIS = "clients"
BYTES_PER_VALUE = 4  # float32 messages
BYTES_PER_INDEX = 4  # int32 coordinates of sparse (top-k) messages


# ----------------------------------------------------------------------------
# Server optimizer: Adam / AMSGrad on de-sketched averages.
# ----------------------------------------------------------------------------


class ScaleBySketchedAdamState(NamedTuple):
  """State of `scale_by_sketched_adam`."""

  count: jax.Array  # scalar int32: server steps taken
  mu: optax.Updates  # EMA of de-sketched deltas (first half-sketch)
  nu: optax.Updates  # EMA of squared de-sketched deltas (second half-sketch)
  nu_max: (
    optax.Updates
  )  # AMSGrad running max of bias-corrected nu; None for Adam


def scale_by_sketched_adam(
  *,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
) -> optax.GradientTransformationExtraArgs:
  """Adam/AMSGrad direction from two independent de-sketched estimates.

  `update(updates, state, params, second_moment_updates=...)`: `updates` is the
  de-sketched first half (feeds m), `second_moment_updates` the de-sketched
  second half (squared, feeds v). Using independent halves keeps the numerator
  independent of the preconditioner; the square of a de-sketched vector
  over-estimates the true square by about ||delta||^2 / (b/2) per coordinate,
  which acts like a large data-dependent eps. Without `second_moment_updates`
  (identity sketch) this is exactly `optax.scale_by_adam` /
  `optax.scale_by_amsgrad` (bias-corrected; AMSGrad takes the max of the
  bias-corrected v, as optax does).

  eps defaults to 1e-3, not 1e-8: the theory's bound scales with 1/eps and in
  the power-law quadratic sweep eps=1e-8 degrades with d (spec B.5).

  Args:
    b1: first-moment decay.
    b2: second-moment decay.
    eps: added to sqrt(v) in the denominator.
    amsgrad: use the running max of v (AMSGrad) instead of v (Adam).

  Returns:
    An optax transformation producing the (positive) step direction.

  References:
    Chen, Li, Banerjee, SADL, NeurIPS 2025, Alg. 2 (ADA_OPT).
  """

  def init_fn(params):
    zeros = optax.tree.zeros_like(params)
    return ScaleBySketchedAdamState(
      count=jnp.zeros([], jnp.int32),
      mu=zeros,
      nu=optax.tree.zeros_like(params),
      nu_max=optax.tree.zeros_like(params) if amsgrad else None,
    )

  def update_fn(
    updates, state, params=None, *, second_moment_updates=None, **_
  ):
    del params
    second = updates if second_moment_updates is None else second_moment_updates
    mu = optax.tree.update_moment(updates, state.mu, b1, 1)
    nu = optax.tree.update_moment_per_elem_norm(second, state.nu, b2, 2)
    count = optax.safe_increment(state.count)
    mu_hat = optax.tree.bias_correction(mu, b1, count)
    nu_hat = optax.tree.bias_correction(nu, b2, count)
    nu_max = None
    if amsgrad:
      nu_max = jax.tree.map(jnp.maximum, state.nu_max, nu_hat)
      nu_hat = nu_max
    direction = jax.tree.map(
      lambda m, v: m / (jnp.sqrt(v) + eps), mu_hat, nu_hat
    )
    return direction, ScaleBySketchedAdamState(count, mu, nu, nu_max)

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)


def sketched_adam(
  learning_rate: optax.ScalarOrSchedule,
  *,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
) -> optax.GradientTransformationExtraArgs:
  """SADL server optimizer: `scale_by_sketched_adam`, decay, -learning_rate.

  Args:
    learning_rate: server learning rate kappa (float or optax schedule).
    b1: first-moment decay.
    b2: second-moment decay.
    eps: denominator epsilon (1e-3 default, see `scale_by_sketched_adam`).
    amsgrad: AMSGrad instead of Adam.
    weight_decay: decoupled weight decay (AdamW style); 0 disables.

  Returns:
    An optax transformation; pass the de-sketched second half as the
    `second_moment_updates` keyword of `update`.

  References:
    Chen, Li, Banerjee, SADL, NeurIPS 2025.
  """
  parts = [scale_by_sketched_adam(b1=b1, b2=b2, eps=eps, amsgrad=amsgrad)]
  if weight_decay:
    parts.append(optax.add_decayed_weights(weight_decay))
  parts.append(optax.scale_by_learning_rate(learning_rate))
  return optax.chain(*parts)


# ----------------------------------------------------------------------------
# Methods: what a client sends and what the server does with the average.
# ----------------------------------------------------------------------------


class Method(NamedTuple):
  """A communication-compressed server method, on flat (d,) parameters.

  `encode` must be linear in the delta, so the mean of client messages is the
  message of the mean delta (the collective then averages messages).
  """

  name: str
  dim: int  # d, number of model parameters
  init: Callable[[jax.Array], Any]  # params (d,) -> server state
  encode: Callable[[jax.Array, jax.Array], jax.Array]  # (delta, key) -> msg
  apply: Callable[..., tuple[jax.Array, Any]]  # (msg, state, params, key)
  bytes_up: int  # bytes one client sends per round
  bytes_down: int  # bytes one client receives per round

  @property
  def bytes_per_round(self) -> int:
    """Bytes per client per round, both directions."""
    return self.bytes_up + self.bytes_down

  @property
  def compression(self) -> float:
    """Uncompressed bytes (d floats each way) over this method's bytes."""
    return 2 * self.dim * BYTES_PER_VALUE / self.bytes_per_round


def _check_dim(dim: int) -> int:
  if int(dim) != dim or dim < 2:
    raise errors.ConfigError(f"model dimension must be an int >= 2, got {dim}")
  return int(dim)


def sadl(
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  sketch_kind: str = "srht",
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
) -> Method:
  """SADL: sketch the delta in two halves; sketched Adam/AMSGrad server.

  Args:
    dim: number of model parameters d.
    sketch_size: b numbers sent per client per round (b/2 per half), b < d;
      with sketch_kind="identity" it must equal d (uncompressed Adam).
    learning_rate: server learning rate kappa (float or schedule).
    sketch_kind: "srht" (paper default), "gaussian", "countsketch", "identity".
    b1: first-moment decay.
    b2: second-moment decay.
    eps: denominator epsilon.
    amsgrad: AMSGrad (the analysis) instead of Adam (the experiments).
    weight_decay: decoupled weight decay.

  Returns:
    A `Method`.

  Raises:
    ConfigError: b >= d, b < 2, or unknown kind.
  """
  dim = _check_dim(dim)
  if sketch_kind not in sketch_lib.SKETCH_KINDS:
    raise errors.ConfigError(
      f"unknown sketch kind {sketch_kind!r}; expected one of "
      f"{sketch_lib.SKETCH_KINDS}"
    )
  tx = sketched_adam(
    learning_rate,
    b1=b1,
    b2=b2,
    eps=eps,
    amsgrad=amsgrad,
    weight_decay=weight_decay,
  )
  name = "amsgrad" if amsgrad else "adam"
  if sketch_kind == "identity":
    if sketch_size != dim:
      raise errors.ConfigError(
        f"identity sketch sends the whole delta: sketch_size must be d={dim}, "
        f"got {sketch_size}"
      )

    def encode(delta, key):
      del key
      return delta

    def apply(msg, state, params, key):
      del key
      updates, state = tx.update(msg, state, params)
      return params + updates, state

    return Method(
      name=f"distributed_{name}",
      dim=dim,
      init=tx.init,
      encode=encode,
      apply=apply,
      bytes_up=dim * BYTES_PER_VALUE,
      bytes_down=dim * BYTES_PER_VALUE,
    )

  if sketch_size >= dim:
    raise errors.ConfigError(
      f"sketch_size={sketch_size} must be smaller than the model dimension "
      f"d={dim}; use sketch_kind='identity' for no compression"
    )
  if sketch_size < 2:
    raise errors.ConfigError(
      f"SADL needs sketch_size >= 2 (two half-sketches), got {sketch_size}"
    )
  half1 = sketch_size // 2
  half2 = sketch_size - half1

  def halves(key):
    # Two independent sketches of size b/2, each scaled to be unbiased.
    first = sketch_lib.make_sketch(
      jax.random.fold_in(key, 0), dim, half1, kind=sketch_kind
    )
    second = sketch_lib.make_sketch(
      jax.random.fold_in(key, 1), dim, half2, kind=sketch_kind
    )
    return first, second

  def encode(delta, key):
    (sk1, _), (sk2, _) = halves(key)
    return jnp.concatenate([sk1(delta), sk2(delta)])

  def apply(msg, state, params, key):
    (_, desk1), (_, desk2) = halves(key)
    first, second = desk1(msg[:half1]), desk2(msg[half1:])
    updates, state = tx.update(
      first, state, params, second_moment_updates=second
    )
    return params + updates, state

  return Method(
    name=f"sadl_{name}",
    dim=dim,
    init=tx.init,
    encode=encode,
    apply=apply,
    bytes_up=sketch_size * BYTES_PER_VALUE,
    bytes_down=sketch_size * BYTES_PER_VALUE,
  )


def distributed_adam(
  *,
  dim: int,
  learning_rate: optax.ScalarOrSchedule,
  b1: float = 0.9,
  b2: float = 0.999,
  eps: float = 1e-3,
  amsgrad: bool = False,
  weight_decay: float = 0.0,
) -> Method:
  """Uncompressed baseline: Adam on the mean delta (SADL, identity sketch)."""
  return sadl(
    dim=dim,
    sketch_size=dim,
    learning_rate=learning_rate,
    sketch_kind="identity",
    b1=b1,
    b2=b2,
    eps=eps,
    amsgrad=amsgrad,
    weight_decay=weight_decay,
  )


def sketched_sgd(
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  sketch_kind: str = "srht",
) -> Method:
  """Baseline: server SGD on the de-sketched mean delta (fresh R_t per round).

  Raises:
    ConfigError: sketch_size >= d.
  """
  dim = _check_dim(dim)
  sketch_lib.make_sketch(jax.random.key(0), dim, sketch_size, kind=sketch_kind)
  tx = optax.sgd(learning_rate)

  def encode(delta, key):
    sk, _ = sketch_lib.make_sketch(key, dim, sketch_size, kind=sketch_kind)
    return sk(delta)

  def apply(msg, state, params, key):
    _, desk = sketch_lib.make_sketch(key, dim, sketch_size, kind=sketch_kind)
    updates, state = tx.update(desk(msg), state, params)
    return params + updates, state

  return Method(
    name="sketched_sgd",
    dim=dim,
    init=tx.init,
    encode=encode,
    apply=apply,
    bytes_up=sketch_size * BYTES_PER_VALUE,
    bytes_down=sketch_size * BYTES_PER_VALUE,
  )


class FetchSGDState(NamedTuple):
  """Server state of `fetchsgd` (both tables live in sketch space)."""

  count: jax.Array  # scalar int32: rounds taken
  momentum: jax.Array  # (rows * cols,) sketched momentum S_u
  error: jax.Array  # (rows * cols,) sketched error accumulator S_e


def fetchsgd(
  key: jax.Array,
  *,
  dim: int,
  sketch_size: int,
  learning_rate: optax.ScalarOrSchedule,
  rows: int = 3,
  top_k: int | None = None,
  momentum: float = 0.9,
) -> Method:
  """FetchSGD baseline: count-sketch table, momentum + error feedback, top-k.

  Server (Rothchild et al. 2020, Alg. 1), on the mean client table S:
  S_u = rho S_u + S; S_e += lr S_u; delta = top-k(median-unsketch(S_e));
  zero S_u and S_e in the cells that delta's coordinates hash to; x -= delta.
  The table is fixed for the whole run (momentum and error live in sketch
  space), unlike SADL's fresh R_t. Clients send their K-step delta in place of
  one gradient, like the other methods.

  Args:
    key: key of the fixed count-sketch table.
    dim: number of model parameters d.
    sketch_size: cells sent per client, rows * (sketch_size // rows) < d.
    learning_rate: server learning rate (float or schedule).
    rows: hash rows of the table.
    top_k: coordinates recovered and broadcast per round; default cols // 2.
    momentum: rho.

  Returns:
    A `Method` (down-link: top_k values and int32 indices).
  """
  dim = _check_dim(dim)
  if sketch_size >= dim:
    raise errors.ConfigError(
      f"sketch_size={sketch_size} must be smaller than the model dimension "
      f"d={dim}"
    )
  if rows < 1 or sketch_size // rows < 1:
    raise errors.ConfigError(
      f"FetchSGD needs rows >= 1 and sketch_size >= rows, got {rows=}, "
      f"{sketch_size=}"
    )
  cols = sketch_size // rows
  k = max(1, cols // 2) if top_k is None else int(top_k)
  if not 1 <= k < dim:
    raise errors.ConfigError(f"top_k must be in [1, d={dim}), got {k}")
  table_sketch, estimate, buckets_hit = sketch_lib.make_count_sketch_table(
    key, dim, rows, cols
  )
  lr_fn = (
    learning_rate if callable(learning_rate) else (lambda _: learning_rate)
  )

  def init(params):
    zeros = jnp.zeros((rows * cols,), params.dtype)
    return FetchSGDState(jnp.zeros([], jnp.int32), zeros, zeros)

  def encode(delta, round_key):
    del round_key  # fixed table
    return table_sketch(delta).reshape(-1)

  def apply(msg, state, params, round_key):
    del round_key
    s_u = momentum * state.momentum + msg
    s_e = state.error + lr_fn(state.count) * s_u
    est = estimate(s_e.reshape(rows, cols))
    _, idx = jax.lax.top_k(jnp.abs(est), k)
    step = jnp.zeros_like(est).at[idx].set(est[idx])
    # Zero the cells the recovered coordinates hash to (FetchSGD's practical
    # form); subtracting sketch(step) instead re-injects the collisions of
    # false-positive coordinates and diverged on the power-law quadratic.
    support = jnp.zeros(est.shape, bool).at[idx].set(True)
    hit = buckets_hit(support).reshape(-1)
    s_u = jnp.where(hit, 0, s_u)
    s_e = jnp.where(hit, 0, s_e)
    new = FetchSGDState(optax.safe_increment(state.count), s_u, s_e)
    return params - step, new

  return Method(
    name="fetchsgd",
    dim=dim,
    init=init,
    encode=encode,
    apply=apply,
    bytes_up=rows * cols * BYTES_PER_VALUE,
    bytes_down=k * (BYTES_PER_VALUE + BYTES_PER_INDEX),
  )


# ----------------------------------------------------------------------------
# The round under shard_map.
# ----------------------------------------------------------------------------


class RoundState(NamedTuple):
  """Replicated state of a SADL run (arrays only)."""

  round: jax.Array  # scalar int32: rounds done
  params: jax.Array  # (d,) flat parameters (identical on server and clients)
  server: Any  # method's server state


def make_client_mesh(num_devices: int = -1) -> jax.sharding.Mesh:
  """1-D mesh whose `clients` axis spans `num_devices` devices (-1: all)."""
  return mesh_lib.make_data_mesh(num_devices, axis=CLIENTS_AXIS)


def check_mesh(mesh, num_clients: int, axis_name: str = CLIENTS_AXIS) -> int:
  """Validates the mesh for `num_clients` clients; returns clients per device.

  Raises:
    ConfigError: no `axis_name` axis, other axes of size > 1, or a client count
      that is not a positive multiple of the axis size.
  """
  if not isinstance(mesh, jax.sharding.Mesh):
    raise errors.ConfigError(f"expected a jax.sharding.Mesh, got {type(mesh)}")
  if axis_name not in mesh.axis_names:
    raise errors.ConfigError(
      f"mesh axes {mesh.axis_names} have no {axis_name!r} axis; build it with "
      f"make_client_mesh() or jax.make_mesh((n,), ({axis_name!r},))"
    )
  others = {a: s for a, s in mesh.shape.items() if a != axis_name and s != 1}
  if others:
    raise errors.ConfigError(
      f"SADL maps clients to the {axis_name!r} axis only; mesh has other "
      f"axes of size > 1: {others}"
    )
  n = mesh.shape[axis_name]
  if num_clients < 1 or num_clients % n:
    raise errors.ConfigError(
      f"num_clients={num_clients} is not a positive multiple of the {n} "
      f"devices on the {axis_name!r} mesh axis"
    )
  return num_clients // n


def check_client_data(
  client_data, mesh, num_clients: int, axis_name: str = CLIENTS_AXIS
) -> None:
  """Checks leading client axes and that sharded leaves live on `mesh`.

  Raises:
    ShapeError: a leaf whose leading axis is not num_clients, or a jax.Array
      sharded over a different mesh or a different axis.
  """
  for path, leaf in jax.tree_util.tree_leaves_with_path(client_data):
    name = jax.tree_util.keystr(path) or "client_data"
    shape = np.shape(leaf)
    if not shape or shape[0] != num_clients:
      raise errors.ShapeError(
        f"{name} has shape {shape}; expected a leading axis of num_clients="
        f"{num_clients}"
      )
    sharding = getattr(leaf, "sharding", None)
    if isinstance(sharding, NamedSharding):
      if sharding.mesh.devices.tolist() != mesh.devices.tolist() or (
        sharding.mesh.axis_names != mesh.axis_names
      ):
        raise errors.ShapeError(
          f"{name} is sharded over mesh {dict(sharding.mesh.shape)} on "
          f"devices {sharding.mesh.device_ids.ravel().tolist()}, but the "
          f"round runs on mesh {dict(mesh.shape)} on devices "
          f"{mesh.device_ids.ravel().tolist()}; shard it with shard_clients()"
        )


def shard_clients(client_data, mesh, axis_name: str = CLIENTS_AXIS):
  """Host arrays with a leading client axis -> global arrays split over it."""
  return mesh_lib.to_global(client_data, NamedSharding(mesh, P(axis_name)))


def init_state(method: Method, params: jax.Array, mesh) -> RoundState:
  """Replicated initial `RoundState` for flat `params` (same on every host)."""
  params = jnp.asarray(params)
  if params.ndim != 1 or params.shape[0] != method.dim:
    raise errors.ShapeError(
      f"params must be a flat ({method.dim},) vector for {method.name}, got "
      f"{params.shape}"
    )
  # One compiled init (eager optax init would compile op by op).
  server = jax.jit(method.init)(params)
  state = RoundState(jnp.zeros([], jnp.int32), params, server)
  return mesh_lib.to_global(
    jax.tree.map(np.asarray, state), mesh_lib.replicated(mesh)
  )


LossFn = Callable[[Any, Any], jax.Array]  # (params tree, batch) -> loss
BatchFn = Callable[[Any, jax.Array], Any]  # (one client's data, key) -> batch


def _client_delta(
  params, data, key, *, loss_fn, batch_fn, unravel, local_steps, client_lr
):
  """K local SGD steps from `params`; returns (x_0 - x_K, loss at step 0)."""

  def step(x, step_key):
    batch = batch_fn(data, step_key)
    loss, grads = jax.value_and_grad(loss_fn)(unravel(x), batch)
    flat_grads, _ = ravel_pytree(grads)
    return x - client_lr * flat_grads.astype(x.dtype), loss

  x_end, losses = jax.lax.scan(step, params, jax.random.split(key, local_steps))
  return params - x_end, losses[0]


def _round_body(
  method, state, data, root_key, client_ids, mean_fn, *, client_fn, to_client
):
  """Shared by the sharded round and the single-device reference."""
  sketch_key = rng.stream(root_key, "sketch", state.round)
  local_key = rng.stream(root_key, "local", state.round)
  keys = jax.vmap(lambda c: jax.random.fold_in(local_key, c))(client_ids)
  deltas, losses = jax.vmap(client_fn, in_axes=(None, 0, 0))(
    to_client(state.params), data, keys
  )
  messages = jax.vmap(method.encode, in_axes=(0, None))(deltas, sketch_key)
  mean_message = mean_fn(messages)
  params, server = method.apply(
    mean_message, state.server, state.params, sketch_key
  )
  metrics = {"loss": mean_fn(losses)}
  return RoundState(state.round + 1, params, server), metrics


def make_round_fn(
  method: Method,
  *,
  loss_fn: LossFn,
  batch_fn: BatchFn,
  unravel: Callable[[jax.Array], Any],
  mesh,
  num_clients: int,
  local_steps: int,
  client_lr: float,
  axis_name: str = CLIENTS_AXIS,
  reference: bool = False,
) -> Callable:
  """Builds `round_fn(state, client_data, key) -> (state, metrics)`.

  Client c (global index) runs on device c // (num_clients / devices); its
  local steps use keys folded from (key, round, c), so the result does not
  depend on how clients are laid out over devices. The averaging of the
  messages is a `lax.pmean` over `axis_name`.

  Args:
    method: the compression/server method (`sadl`, `fetchsgd`, ...).
    loss_fn: (params tree, batch) -> scalar loss.
    batch_fn: (one client's data, key) -> batch (jittable).
    unravel: flat (d,) vector -> params tree (from `ravel_pytree`).
    mesh: mesh with a `clients` axis.
    num_clients: C, a multiple of the `clients` axis size.
    local_steps: K local SGD steps per round.
    client_lr: client step eta.
    axis_name: mesh axis of the clients.
    reference: run all clients on one device with `vmap` and `mean` (no
      shard_map, no collective); for testing the sharded round.

  Returns:
    A traceable round function; `client_data` leaves have a leading axis of
    num_clients.

  Raises:
    ConfigError: mesh/client-count mismatch, K < 1.
  """
  clients_per_device = check_mesh(mesh, num_clients, axis_name)
  if int(local_steps) != local_steps or local_steps < 1:
    raise errors.ConfigError(f"local_steps must be >= 1, got {local_steps}")
  client_fn = functools.partial(
    _client_delta,
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    unravel=unravel,
    local_steps=int(local_steps),
    client_lr=client_lr,
  )

  if reference:

    def reference_round(state, client_data, key):
      ids = jnp.arange(num_clients)
      return _round_body(
        method,
        state,
        client_data,
        key,
        ids,
        lambda x: jnp.mean(x, 0),
        client_fn=client_fn,
        to_client=lambda x: x,
      )

    return reference_round

  def per_device(state, client_data, key):
    first = jax.lax.axis_index(axis_name) * clients_per_device
    ids = first + jnp.arange(clients_per_device)

    def mean_fn(x):  # local mean, then the collective over devices
      return jax.lax.pmean(jnp.mean(x, 0), axis_name)

    def to_client(params):
      # Mark the replicated params as per-device before the local steps: the
      # gradient of a device-invariant value inside shard_map is psum-ed over
      # the axis (the transpose of the implicit broadcast), which would give
      # every client the sum of all clients' gradients.
      return jax.lax.pcast(params, axis_name, to="varying")

    return _round_body(
      method,
      state,
      client_data,
      key,
      ids,
      mean_fn,
      client_fn=client_fn,
      to_client=to_client,
    )

  return jax.shard_map(
    per_device,
    mesh=mesh,
    in_specs=(P(), P(axis_name), P()),
    out_specs=(P(), P()),
  )


def make_run_fn(round_fn: Callable, *, mesh, num_clients: int, num_rounds: int):
  """Jitted `lax.scan` of `num_rounds` rounds, with host-side input checks.

  Returns:
    run(state, client_data, key) -> (state, metrics stacked over rounds).
  """

  @jax.jit
  def scan_rounds(state, client_data, key):
    def body(s, _):
      return round_fn(s, client_data, key)

    return jax.lax.scan(body, state, length=num_rounds)

  def run(state, client_data, key):
    check_client_data(client_data, mesh, num_clients)
    return scan_rounds(state, client_data, key)

  return run
