"""Benchmark: HNS training (double backprop) and rollout vs a du/dt CNN.

Times, side by side in one process, a jitted `lax.scan` of optimizer steps
(HNS: relative L2 on autodiff functional derivatives, i.e. grad of grad; CNN:
relative L2 on du/dt) and an AB2 rollout (HNS: u_t = J dH_theta/du, one
backward pass per step; CNN: one forward pass) for models of similar
parameter count, and writes the steps/s and their ratios (the paper's Table 6
reports HNS 0.126 ms vs FNO 0.083 ms per advection inference step on a GPU).

Run: python -m experiments.bench_hns --config configs/bench_hns.py \
  --workdir runs/bench_hns
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from experiments import _hns_peer
from lib import pde
from lib import train as train_lib
from lib.core import rng
from lib.core import timing
from lib.core import tree as tree_lib
from lib.pde import derivatives
from lib.pde import hns as hns_lib
from lib.pde import solver


def bench_kind(kind, config, grid, u, target):
  model_config = config.hns if kind == "hns" else config.cnn
  model = solver.build_model(kind, model_config, config.length)
  key = rng.root_key(config.seed)
  params = solver.init_params(kind, model, grid, key)
  loss_fn = solver.relative_l2_loss(kind, model, grid)
  tx = optax.adam(1e-4)
  step_fn = train_lib.make_train_step(loss_fn, tx)
  state0 = train_lib.create_state(params, tx)
  batch = {"u": u, "target": target}

  @jax.jit
  def train_chunk(state):
    def body(s, _):
      s, m = step_fn(s, batch, key)
      return s, m["loss"]

    return jax.lax.scan(body, state, None, length=config.train_steps)

  train_time = timing.median_seconds(
    train_chunk, state0, repeats=config.repeats
  )
  roll = lambda p, u0: solver.rollout(
    kind,
    model,
    p,
    u0,
    grid,
    dt=config.dt,
    num_steps=config.rollout_steps,
    stencil=config.j_stencil,
  )
  roll_time = timing.median_seconds(roll, params, u, repeats=config.repeats)
  return {
    "num_params": int(tree_lib.num_params(params)),
    "train_steps_per_sec": config.train_steps / train_time,
    "rollout_steps_per_sec": config.rollout_steps / roll_time,
    "rollout_ms_per_step": 1e3 * roll_time / config.rollout_steps,
  }


def check_config(config) -> None:
  """Fails at once, naming the key, on a value the benchmark cannot run."""
  _checks.integer(config.n_x, "config.n_x", minimum=2)
  _checks.number(config.length, "config.length", above=0)
  _checks.number(config.dt, "config.dt", above=0)
  _checks.one_of(config.j_stencil, derivatives.STENCILS, "config.j_stencil")
  _checks.one_of(
    config.hns.kernel_type, hns_lib.KERNELS, "config.hns.kernel_type"
  )
  _checks.one_of(config.hns.film, hns_lib.FILMS, "config.hns.film")
  for key in ("width", "num_layers", "proj_dim", "film_kernel_size"):
    _checks.integer(config.hns[key], f"config.hns.{key}")
  _checks.number(config.hns.omega0, "config.hns.omega0", above=0)
  _checks.integers(config.cnn.channels, "config.cnn.channels")
  _checks.integer(config.cnn.kernel_size, "config.cnn.kernel_size")
  for key in ("train_steps", "rollout_steps", "repeats"):
    _checks.integer(config[key], f"config.{key}")
  if config.peer_repo:
    _hns_peer.load(config.peer_repo)  # fails now, in one line, if unusable


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  grid = pde.periodic_grid(config.n_x, config.length)
  params = pde.sample_sine_params(rng.root_key(config.seed), config.batch_size)
  u = jax.vmap(lambda p: pde.sine_series(p, grid.x, config.length))(params)
  target = jnp.roll(u, 1, axis=-1)  # any target: only the cost is timed
  results = {}
  for kind in ("hns", "derivative_cnn"):
    results[kind] = bench_kind(kind, config, grid, u, target)
    logging.info("%s: %s", kind, results[kind])
  hns, cnn = results["hns"], results["derivative_cnn"]
  results["ratios"] = {
    "train_hns_over_cnn": hns["train_steps_per_sec"]
    / cnn["train_steps_per_sec"],
    "rollout_hns_over_cnn": hns["rollout_steps_per_sec"]
    / cnn["rollout_steps_per_sec"],
    "params_hns_over_cnn": hns["num_params"] / cnn["num_params"],
  }
  results["setting"] = {
    "n_x": config.n_x,
    "batch_size": config.batch_size,
    "backend": jax.default_backend(),
    "device": str(jax.devices()[0].device_kind),
    "jax_version": jax.__version__,
  }
  if config.peer_repo:
    results["peer"] = bench_peer(config, u, target)
    logging.info("peer (official PyTorch code): %s", results["peer"])
  train_lib.write_results(workdir, results)
  return results


def bench_peer(config, u, target) -> dict:
  """Ours vs the official code on its 'nf' advection model (peer mode).

  Same architecture (hns.OFFICIAL_NF, their initial weights copied over),
  batch, grid, trapezoid weights, loss and AdamW; their training and rollout
  steps alternate with our jitted ones (see experiments/_hns_peer.py).
  """
  n, length = config.n_x, config.length
  grid = pde.Grid(
    x=jnp.arange(n) * (length / n),
    dx=length / n,
    mu=pde.quadrature_weights(n, "trapezoid_endpoints"),
    length=length,
  )
  official = _hns_peer.Official(
    config.peer_repo, u, target, grid.x, grid.dx, config.seed
  )
  model = hns_lib.IntegralKernelFunctional(length=length, **hns_lib.OFFICIAL_NF)
  params = _hns_peer.flax_params(official.model)
  loss_fn = solver.relative_l2_loss("hns", model, grid)
  batch = {"u": u, "target": target}
  # Parity on one batch before any timing: same loss, same dH/du.
  ours_loss = float(loss_fn(params, batch, None)[0])
  their_loss = float(official.loss().detach())
  ours_grad = jax.vmap(solver.field_map("hns", model, grid), (None, 0))(
    params, u
  )
  their_grad = official.grad_h(official.u).detach().cpu().numpy()[..., 0]
  grad_err = float(
    np.max(np.abs(np.asarray(ours_grad) - their_grad))
    / np.max(np.abs(their_grad))
  )
  tx = optax.adamw(_hns_peer.LR, weight_decay=_hns_peer.WEIGHT_DECAY)
  step_fn = train_lib.make_train_step(loss_fn, tx)
  state0 = train_lib.create_state(params, tx)
  key = rng.root_key(config.seed)

  @jax.jit
  def train_chunk(state):
    def body(s, _):
      s, m = step_fn(s, batch, key)
      return s, m["loss"]

    return jax.lax.scan(body, state, None, length=config.train_steps)

  steps = config.train_steps
  t = timing.interleaved(
    {
      "ours": (train_chunk, (state0,)),
      "theirs": (official.train, (steps,)),
    },
    repeats=config.repeats,
  )
  train = _hns_peer.speedup(t["ours"], t["theirs"], steps)
  roll_steps = config.rollout_steps
  ours_rollout = lambda: solver.rollout(
    "hns",
    model,
    params,
    u,
    grid,
    dt=config.dt,
    num_steps=roll_steps,
    stencil="central",
  )
  t_roll = timing.interleaved(
    {
      "ours": (ours_rollout, ()),
      "theirs": (official.rollout, (roll_steps, config.dt)),
    },
    repeats=config.repeats,
  )
  return {
    "num_params": int(tree_lib.num_params(params)),
    "official_num_params": int(
      sum(p.numel() for p in official.model.parameters())
    ),
    "loss_ours": ours_loss,
    "loss_official": their_loss,
    "loss_rel_diff": abs(ours_loss - their_loss) / abs(their_loss),
    "grad_rel_max_err": grad_err,
    "train": train,
    "rollout": _hns_peer.speedup(t_roll["ours"], t_roll["theirs"], roll_steps),
    "torch_device": official.device,
    "torch_threads": int(official.torch.get_num_threads()),
    "torch_version": str(official.torch.__version__),
  }


if __name__ == "__main__":
  _cli.main(run, check=check_config)
