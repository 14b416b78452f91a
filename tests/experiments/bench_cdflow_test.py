"""bench_cdflow smoke: tiny sizes, checks the JSON and figure (no timing claims)."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from configs import bench_cdflow as config_lib
from experiments import bench_cdflow
from lib import flows
from tests import helpers


def test_smoke_writes_ratios_and_figure(tmp_path):
  config = config_lib.get_config("gpu,smoke")
  r = bench_cdflow.run(config, str(tmp_path))
  assert set(r["per_n"]) == {str(n) for n in config.sizes}
  for row in r["per_n"].values():
    for key in (
      "logdet_speedup",
      "inverse_speedup_vs_solve",
      "forward_speedup",
      "forward_log_det_grad_speedup",
    ):
      assert row[key] > 0
  with open(tmp_path / "bench.json") as f:
    assert json.load(f)["reference_n"] == config.reference_n
  assert os.path.exists(tmp_path / "bench_cdflow.png")
  helpers.check_claim_keys("bench_cdflow", tmp_path)


def test_gpu_smoke_is_the_smoke_run():
  """`gpu,smoke` (run above, on CPU) and `smoke` differ only in name, so
  the one smoke run covers both; `gpu` itself parses and passes the checks."""
  diff = helpers.config_differences(
    config_lib.get_config("gpu,smoke"), config_lib.get_config("smoke")
  )
  assert set(diff) == {"variant"}, diff
  bench_cdflow.check_config(config_lib.get_config("gpu"))


def test_forward_log_det_grad_matches_its_closed_form():
  """For the dense layer, value + every gradient entry in closed form:
  L = <x W^T, ct> + B log|det W| has dL/dW = ct^T x + B W^-T (float64)."""
  with jax.enable_x64(True):
    k_w, k_x, k_c = jax.random.split(jax.random.key(0), 3)
    n, batch = 6, 5
    w = jax.random.normal(k_w, (n, n), jnp.float64) + 3 * jnp.eye(n)
    x = jax.random.normal(k_x, (batch, n), jnp.float64)
    ct = jax.random.normal(k_c, (batch, n), jnp.float64)
    op = bench_cdflow.forward_log_det_grad(flows.DenseLinear(num_channels=n))
    got = op({"weight": w}, x, ct)
    w_np, x_np, ct_np = (np.asarray(a) for a in (w, x, ct))
    value = np.sum((x_np @ w_np.T) * ct_np) + batch * np.log(
      abs(np.linalg.det(w_np))
    )
    grad = ct_np.T @ x_np + batch * np.linalg.inv(w_np).T
    assert got.shape == (1,)
    np.testing.assert_allclose(float(got[0]), value + grad.sum(), rtol=1e-10)
