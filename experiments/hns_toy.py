"""HNS H0: functional derivatives of learned toy functionals (Table 1).

Trains an integral-kernel functional (IKF) and an MLP on the *scalar* values
of F_l[u] = int x^2 u and F_nl[u] = int u^3 over random quadratics, then
compares their autodiff functional derivatives with the analytic x^2 and
3 u^2 (validation, out-of-distribution coefficients, and a wider grid).
The IKF's derivative is meaningful; the MLP's is not (Zhou & Barati
Farimani, NeurIPS 2025, Sec. 4.1).

Run: python -m experiments.hns_toy --config configs/hns_toy.py:quick \
  --workdir runs/hns_toy
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _cli
from lib import pde
from lib import train as train_lib
from lib.core import rng
from lib.core import tree as tree_lib

PAPER = {
  "linear": {"ikf_grad_mse": 1.15e-3, "mlp_grad_mse": 0.083},
  "cubic": {"ikf_grad_mse": 0.045, "mlp_grad_mse": 1.33},
}


def quadratics(key, num, x, coeff_range):
  """u = c0 + c1 x + c2 x^2 with c ~ U[lo, hi]^3 -> [num, n]."""
  lo, hi = coeff_range
  c = jax.random.uniform(key, (num, 3), minval=lo, maxval=hi)
  return c[:, :1] + c[:, 1:2] * x + c[:, 2:] * x**2


def functional(name, u, grid):
  """(F[u], analytic dF/du) over the last axis."""
  if name == "linear":
    return pde.integrate(grid.x**2 * u, grid.dx, grid.mu), grid.x**2 + 0 * u
  if name == "cubic":
    return pde.integrate(u**3, grid.dx, grid.mu), 3 * u**2
  raise ValueError(f"unknown functional {name!r} in config.functionals")


def build(model_name, functional_name, config):
  if model_name == "ikf":
    return pde.KernelMLPFunctional(
      hidden=tuple(config.ikf.hidden),
      kernel_type="linear" if functional_name == "linear" else "nonlinear",
    )
  return pde.MLPFunctional(hidden=tuple(config.mlp.hidden))


def grad_mse(model, params, u, grid, name):
  """MSE between the model's functional derivative and the analytic one."""
  mu_dx = grid.mu * grid.dx

  def fd(v):
    return pde.functional_derivative(
      lambda w: model.apply(params, w, grid.x, mu_dx), v, mu_dx
    )

  _, exact = functional(name, u, grid)
  return jnp.mean((jax.vmap(fd)(u) - exact) ** 2)


def run_one(model_name, name, config, grids, data, workdir):
  grid, disc_grid = grids
  model = build(model_name, name, config)
  mu_dx = grid.mu * grid.dx
  f_train, _ = functional(name, data["train"], grid)

  def init_fn(key):
    return model.init(key, data["train"][0], grid.x, mu_dx)

  def loss_fn(params, batch, key):
    del key
    pred = jax.vmap(lambda v: model.apply(params, v, grid.x, mu_dx))(batch["u"])
    return jnp.mean((pred - batch["f"]) ** 2), {}

  task = train_lib.Task(
    init_fn=init_fn,
    loss_fn=loss_fn,
    batch_fn=train_lib.full_batch,
    data={"u": data["train"], "f": f_train},
    shard_batch=False,
  )
  tx = optax.adam(
    optax.cosine_decay_schedule(config.lr, config.train.num_steps)
  )
  state, history = train_lib.fit(
    task,
    tx,
    workdir=os.path.join(workdir, f"{name}_{model_name}"),
    config=config.train,
    name=f"{name}/{model_name}",
  )
  params = state.params
  f_val, _ = functional(name, data["val"], grid)
  pred_val = jax.vmap(lambda v: model.apply(params, v, grid.x, mu_dx))(
    data["val"]
  )
  result = {
    "f_mse": float(jnp.mean((pred_val - f_val) ** 2)),
    "grad_mse": float(grad_mse(model, params, data["val"], grid, name)),
    "ood_grad_mse": float(grad_mse(model, params, data["ood"], grid, name)),
    "disc_grad_mse": float(
      grad_mse(model, params, data["disc"], disc_grid, name)
    ),
    "num_params": int(tree_lib.num_params(params)),
    "final_train_loss": history[-1]["loss"] if history else float("nan"),
  }
  logging.info("%s/%s: %s", name, model_name, result)
  mu_dx_val = grid.mu * grid.dx
  example = pde.functional_derivative(
    lambda w: model.apply(params, w, grid.x, mu_dx_val), data["val"][0], mu_dx
  )
  return result, np.asarray(example)


def figure(workdir, grid, data, examples, config):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  names = list(config.functionals)
  fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.5))
  axes = np.atleast_1d(axes)
  x = np.asarray(grid.x)
  for ax, name in zip(axes, names):
    _, exact = functional(name, data["val"][:1], grid)
    ax.plot(x, np.asarray(exact[0]), "k-", lw=2, label="analytic")
    for model_name in ("ikf", "mlp"):
      ax.plot(x, examples[(name, model_name)], label=model_name.upper())
    ax.set_title(f"dF/du, F = {name}")
    ax.set_xlabel("x")
    ax.legend()
  fig.tight_layout()
  path = os.path.join(workdir, "functional_derivatives.png")
  fig.savefig(path, dpi=100)
  plt.close(fig)
  return path


def run(config, workdir) -> dict:
  d = config.data
  grid = pde.interval_grid(d.n_x, d.lo, d.hi)
  disc_grid = pde.interval_grid(d.n_x, d.disc_lo, d.disc_hi)
  root = rng.root_key(config.train.seed)
  data = {
    "train": quadratics(
      rng.stream(root, "train"), d.num_train, grid.x, d.coeff_range
    ),
    "val": quadratics(
      rng.stream(root, "val"), d.num_val, grid.x, d.coeff_range
    ),
    "ood": quadratics(rng.stream(root, "ood"), d.num_val, grid.x, d.ood_range),
    "disc": quadratics(
      rng.stream(root, "disc"), d.num_val, disc_grid.x, d.coeff_range
    ),
  }
  results, examples = {}, {}
  for name in config.functionals:
    results[name] = {}
    for model_name in ("ikf", "mlp"):
      results[name][model_name], examples[(name, model_name)] = run_one(
        model_name, name, config, (grid, disc_grid), data, workdir
      )
    results[name]["grad_mse_ratio"] = results[name]["mlp"]["grad_mse"] / max(
      results[name]["ikf"]["grad_mse"], 1e-30
    )
  results["paper"] = PAPER
  results["figures"] = [
    os.path.basename(figure(workdir, grid, data, examples, config))
  ]
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run)
