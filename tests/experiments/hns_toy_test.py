"""HNS H0: the toy-functional experiment, its derivative metric and tuning."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import hns_toy as config_lib
from experiments import _hns
from experiments import hns_toy
from lib import pde
from lib.core import errors
from tests import helpers


class _Exact:
  """F[u] = int (kappa(x, u) + c) u with the experiment's quadrature."""

  def __init__(self, name, c):
    self.name, self.c = name, c

  def apply(self, params, u, x, mu_dx):
    del params
    kappa = x**2 if self.name == "linear" else u**2
    return jnp.sum(mu_dx * (kappa + self.c) * u)


@pytest.mark.parametrize("name", ["linear", "cubic"])
def test_grad_mse_against_the_analytic_derivative(name):
  # d/du int (x^2 + c) u = x^2 + c and d/du int (u^2 + c) u = 3 u^2 + c, so
  # the metric is 0 for the exact functional and c^2 for the shifted one,
  # on either grid (trapezoid weights are divided out).
  with jax.enable_x64(True):
    for grid in (
      pde.interval_grid(50, -1.0, 1.0),
      pde.interval_grid(30, -2, 2),
    ):
      u = hns_toy.quadratics(jax.random.key(0), 4, grid.x, (-1.0, 1.0))
      exact, shifted = jax.jit(
        lambda u, grid=grid: [
          hns_toy.grad_mse(_Exact(name, c), None, u, grid, name)
          for c in (0.0, 0.3)
        ]
      )(u)
      np.testing.assert_allclose(exact, 0.0, atol=1e-20)
      np.testing.assert_allclose(shifted, 0.09, rtol=1e-10)


def test_a_run_in_a_stack_is_that_run_alone(tmp_path, fast_compile):
  # Run (lr, seed) draws its keys from its seed only, so the second run of a
  # learning-rate sweep equals that seed trained alone (vmapped or mapped).
  x = jnp.linspace(-1.0, 1.0, 16)
  data = {"x": x, "y": 3.0 * x + 0.5}

  def init_fn(key):
    return {"w": jax.random.normal(key, ()), "b": jnp.zeros(())}

  def loss_fn(params, batch, key):
    noise = 0.01 * jax.random.normal(key, batch["x"].shape)
    pred = params["w"] * batch["x"] + params["b"] + noise
    return jnp.mean((pred - batch["y"]) ** 2), {}

  config = config_lib.get_config("smoke").train
  tx = optax.adam(1.0)

  def train(part, lrs, seeds, sequential):
    swept, finite = _hns.train_runs(
      init_fn=init_fn,
      loss_fn=loss_fn,
      tx=tx,
      workdir=str(tmp_path / part),
      config=config,
      name=part,
      runs=tuple(f"r{i}" for i in range(len(lrs))),
      seeds=seeds,
      data=data,
      lrs=lrs,
      sequential=sequential,
    )
    assert finite.all()
    return swept.state.params

  alone = train("alone", [0.05], [1], False)
  for sequential in (False, True):
    stack = train(f"stack{sequential}", [0.01, 0.05], [0, 1], sequential)
    for k in ("w", "b"):
      np.testing.assert_allclose(stack[k][1], alone[k][0], rtol=1e-6)
      assert not np.allclose(stack[k][0], alone[k][0])


def test_smoke_run_tunes_both_models_and_pairs_seeds(tmp_path, fast_compile):
  # The cubic functional: its IKF runs take the sequential (lax.map) path.
  # (The linear IKF's u-independent derivative is tested in lib/pde.)
  config = config_lib.get_config("smoke")
  with config.unlocked():
    config.functionals = ("cubic",)
  r = hns_toy.run(config, str(tmp_path))
  cub = r["cubic"]
  for model in ("ikf", "mlp"):
    res = cub[model]
    sweep = res["lr_sweep"]
    best = int(np.argmin(sweep["select_grad_mse"]))
    assert res["lr"] == config.lrs[best]
    # Seed 0 at the chosen rate is the sweep's run; then num_seeds - 1 more.
    assert len(res["grad_mse_seeds"]) == config.num_seeds
    assert res["grad_mse_seeds"][0] == sweep["grad_mse"][best]
    assert res["grad_mse_lo"] <= res["grad_mse"] <= res["grad_mse_hi"]
    for part in ("lr_sweep", "seeds"):
      assert (tmp_path / f"cubic_{model}" / part / "metrics.jsonl").exists()
  # The ratio is the geometric mean of the per-seed ratios MLP / IKF.
  seeds = np.asarray(cub["mlp"]["grad_mse_seeds"]) / np.asarray(
    cub["ikf"]["grad_mse_seeds"]
  )
  np.testing.assert_allclose(cub["grad_mse_ratio_seeds"], seeds, rtol=1e-6)
  np.testing.assert_allclose(
    cub["grad_mse_ratio"], np.exp(np.mean(np.log(seeds))), rtol=1e-6
  )
  assert cub["grad_mse_ratio_lo"] <= cub["grad_mse_ratio"]
  assert cub["grad_mse_ratio"] <= cub["grad_mse_ratio_hi"]
  assert os.path.exists(tmp_path / "functional_derivatives.png")
  with open(tmp_path / "results.json") as f:
    assert json.load(f)["cubic"]["ikf"]["num_params"] > 0
  linear_not_run = "this run trains the cubic functional only"
  helpers.check_claim_keys(
    "hns_toy",
    tmp_path,
    absent={
      "hns_toy_ikf_grad_mse": linear_not_run,
      "hns_toy_ikf_vs_mlp": linear_not_run,
    },
  )


@pytest.mark.parametrize(
  "key,value,match",
  [
    ("functionals", ("quartic",), "config.functionals"),
    ("functionals", (), "config.functionals"),
    ("lrs", (1e-3, -1.0), "config.lrs"),
    ("num_seeds", 0, "config.num_seeds"),
    # num_train 0 was a traceback after training began; n_x 0 and lo >= hi
    # one-line errors without their key, after config.json.
    ("data.num_train", 0, r"config\.data\.num_train=0"),
    ("data.n_x", 0, r"config\.data\.n_x=0"),
    ("data.lo", 2.0, r"config\.data\.hi=1\.0 must be a finite number > 2"),
  ],
)
def test_bad_config_fails_before_any_data(tmp_path, key, value, match):
  config = config_lib.get_config("smoke")
  section, _, name = key.rpartition(".")
  with config.unlocked():
    (config[section] if section else config)[name] = value
  with pytest.raises(errors.ConfigError, match=match):
    hns_toy.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)


def test_quick_config_matches_paper_setting():
  config = config_lib.get_config("quick")
  assert (config.data.num_train, config.data.num_val) == (100, 10)
  assert (config.data.n_x, config.data.lo, config.data.hi) == (100, -1.0, 1.0)
  assert config.num_seeds >= 3 and len(config.lrs) >= 3
