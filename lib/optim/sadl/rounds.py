"""One SADL communication round on a JAX device mesh (`shard_map`).

One round (paper Alg. 1-2), for C clients that are the devices of the
`clients` axis of a `jax.make_mesh` mesh (C may be a multiple of the device
count; each device then runs C / devices clients with `vmap`):

  1. every client starts from the server's x (clients replay the server step,
     so x, m, v are identical everywhere and stay replicated);
  2. K local SGD steps on the client's own data: x_K = x_0 - eta * sum g_k;
  3. the client encodes its delta x_0 - x_K with the method (SADL: the
     round's shared R_t, fresh each round from the round key, in two
     independent half-sketches; clients that share a device encode their
     mean delta once, which by linearity is the mean of their messages);
  4. the messages are averaged with `lax.pmean` over the `clients` axis: by
     linearity that is the message of the mean delta, and only the message
     crosses the network in each direction;
  5. every device applies the method's server step to the average.

The per-client work runs under `jax.shard_map`, so the same code runs on 8
fake CPU devices, the GPUs of one box, or many hosts after
`jax.distributed.initialize()`. A round is a step: `lib.train.train` scans,
checkpoints and resumes rounds like any other step function, and the round
function may be `vmap`-ped over a stack of states (a learning-rate sweep).

References:
  Chen, Li, Banerjee. "Sketched Adaptive Distributed Deep Learning: A Sharp
  Convergence Analysis", NeurIPS 2025 (Alg. 1-2).
"""

import functools
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from lib.core import errors
from lib.core import mesh as mesh_lib
from lib.core import rng
from lib.optim.sadl import method as method_lib

CLIENTS_AXIS = "clients"


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

  Call it on the host before the rounds run (inside `jit` the shardings are
  not visible).

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


def init_state(
  method: method_lib.Method, params: jax.Array, mesh=None
) -> RoundState:
  """Initial `RoundState` for flat `params`.

  Args:
    method: the method whose server state to create.
    params: flat (d,) initial parameters (the same on every host).
    mesh: with a mesh, the state is returned replicated on it (global
      arrays); without, the function is pure and traceable (an `init_fn` of
      `lib.train.train`, which places the state itself).

  Raises:
    ShapeError: params that are not a flat (d,) vector.
  """
  if isinstance(params, Mapping):  # a params dict (flax, haiku)
    raise errors.ShapeError(
      f"params must be a flat ({method.dim},) vector for {method.name}, got "
      f"a {type(params).__name__}: flatten a pytree with "
      "jax.flatten_util.ravel_pytree (make_round_fn takes its unravel)"
    )
  if np.ndim(params) != 1 or np.shape(params)[0] != method.dim:
    raise errors.ShapeError(
      f"params must be a flat ({method.dim},) vector for {method.name}, got "
      f"{np.shape(params)}"
    )

  def init(params):
    params = jnp.asarray(params)
    return RoundState(jnp.zeros([], jnp.int32), params, method.init(params))

  if mesh is None:
    return init(params)
  # One compiled init (eager optax init would compile op by op).
  return jax.jit(init, out_shardings=mesh_lib.replicated(mesh))(
    np.asarray(params)
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
  """Shared by the sharded round and the single-device reference.

  `mean_fn` averages over the clients' leading axis (locally, then over the
  devices where there are several).
  """
  sketch_key = rng.stream(root_key, "sketch", state.round)
  local_key = rng.stream(root_key, "local", state.round)
  keys = jax.vmap(lambda c: jax.random.fold_in(local_key, c))(client_ids)
  deltas, losses = jax.vmap(client_fn, in_axes=(None, 0, 0))(
    to_client(state.params), data, keys
  )
  # `encode` is linear and R_t is shared by the round's clients, so the mean
  # of their messages is the message of their mean delta: the clients of one
  # device average first and encode once (the same numbers, up to rounding,
  # at 1/(clients per device) of the sketching cost).
  local_mean = jnp.mean(deltas, 0)
  messages = method.encode(local_mean, sketch_key)[None]
  mean_message = mean_fn(messages)
  params, server = method.apply(
    mean_message, state.server, state.params, sketch_key
  )
  metrics = {"loss": mean_fn(losses)}
  return RoundState(state.round + 1, params, server), metrics


def make_round_fn(
  method: method_lib.Method,
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
