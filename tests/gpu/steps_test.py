"""One training step on a GPU == the same step on CPU (Quartet, CD flow, HNS).

Each case builds its experiment's model, loss and a batch at smoke size on
CPU, then takes one `lib.train.make_train_step` step from the same state,
batch and key on `platform` and on CPU. The optimizer is SGD, so the update
is -lr * gradient and a gradient difference is not amplified (Adam's first
step is lr * sign(g): an ulp-sized gradient of the other sign would move a
parameter by 2 lr). Matmuls run at HIGHEST precision on both sides (JAX's
GPU default for float32 is TF32), so the two differ by summation order and
transcendental implementations only.

Tolerances: relative loss difference and relative L2 difference of the
parameter updates below 1e-5 / 1e-4 in fp32 (CD flow, HNS). Quartet quantizes
(QuEST RTN forward, SR backward): an ulp of difference on a rounding boundary
moves one code by a grid step (and on a GPU with the CUDA library built the
default path is the FFI one, whose FWHT rotation may move a boundary code,
tests/pallas_kernels/mxfp4_ffi_test.py), so 1e-3 / 5e-2.

On CPU (`cpu` case, CI) the body runs with CPU on both sides, so it stays
exercised, and checks what can fail there: the step's update against
-lr * the gradient taken apart from `make_train_step` (jax.grad of the loss
in a program of its own, no optimizer), and its loss against that one's. The
`gpu` case needs a GPU (tests/gpu/run.sh).
"""

import jax
import numpy as np
import optax
import pytest

from configs import cdflow_density as cdflow_config
from configs import hns_advection as hns_config
from configs import quartet_llm as quartet_config
from experiments import _quartet
from experiments import cdflow_density
from experiments import hns_advection
from lib import flows
from lib import models
from lib import train as train_lib
from lib.data import text
from lib.flows import density
from lib.pde import solver
from tests import helpers

LEARNING_RATE = 1e-2


def _step_on(platform, step, state, batch, key):
  """(loss, params after the step) of `step` run on `platform`."""
  with helpers.on(platform), jax.default_matmul_precision("highest"):
    new, metrics = step(*helpers.put((state, batch, key), platform))
  return float(metrics["loss"]), jax.device_get(new.params)


def _compare(name, platform, loss_fn, params, batch, key, loss_tol, step_tol):
  """One SGD step of `loss_fn` on CPU and on `platform`: loss and update."""
  tx = optax.sgd(LEARNING_RATE)
  step = jax.jit(train_lib.make_train_step(loss_fn, tx))
  state = train_lib.create_state(params, tx)
  loss_cpu, p_cpu = _step_on("cpu", step, state, batch, key)
  loss_dev, p_dev = _step_on(platform, step, state, batch, key)
  p0 = jax.device_get(params)

  def flat(tree):
    leaves = jax.tree.leaves(tree)
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in leaves])

  update_cpu, update_dev = flat(p_cpu) - flat(p0), flat(p_dev) - flat(p0)
  loss_diff = abs(loss_dev - loss_cpu) / abs(loss_cpu)
  step_diff = np.linalg.norm(update_dev - update_cpu) / np.linalg.norm(
    update_cpu
  )
  helpers.report(
    f"step_{name}_{platform}_vs_cpu",
    loss_cpu=loss_cpu,
    loss=loss_dev,
    loss_rel_diff=loss_diff,
    update_rel_l2_diff=step_diff,
  )
  assert np.isfinite(loss_cpu) and np.linalg.norm(update_cpu) > 0
  assert loss_diff <= loss_tol, (loss_cpu, loss_dev)
  assert step_diff <= step_tol, step_diff
  if platform == "cpu":  # both sides ran the same program: check the step
    with helpers.on("cpu"), jax.default_matmul_precision("highest"):
      (loss_ref, _), grad = jax.jit(jax.value_and_grad(loss_fn, has_aux=True))(
        params, batch, key
      )
    # Applied in the params' dtype as the step does (the update is read
    # back as a difference of float32 params, rounding included).
    p_ref = jax.tree.map(lambda q, g: q - LEARNING_RATE * g, params, grad)
    update_ref = flat(jax.device_get(p_ref)) - flat(p0)
    ref_diff = np.linalg.norm(update_cpu - update_ref) / np.linalg.norm(
      update_ref
    )
    assert abs(float(loss_ref) - loss_cpu) <= loss_tol * abs(loss_cpu)
    assert ref_diff <= step_tol, ref_diff


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_quartet_llama_step(platform, fast_compile):
  config = quartet_config.get_config("quick,smoke")
  llama = models.Llama(_quartet.model_config(config, "quartet"))
  d = config.data
  rng = np.random.default_rng(0)
  tokens = rng.integers(0, text.VOCAB_SIZE, (d.batch_size, d.seq_len + 1))
  with helpers.on("cpu"):
    params = jax.jit(llama.init)(
      jax.random.key(0), tokens[:1, :-1].astype(np.int32)
    )

  def loss_fn(params, batch, key):
    logits = llama.apply(params, batch[:, :-1], rngs={"quant": key})
    return models.next_token_loss(logits, batch[:, 1:]), {}

  batch = np.asarray(tokens, np.int32)
  _compare(
    "quartet_llama", platform, loss_fn, params, batch, jax.random.key(1),
    loss_tol=1e-3, step_tol=5e-2,
  )  # fmt: skip


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_cd_flow_step(platform, fast_compile):
  config = cdflow_config.get_config("quick,smoke")
  train_imgs, _ = cdflow_density.load_images(config)
  train_x = train_imgs.reshape(len(train_imgs), -1)
  v = config.vector
  model = flows.VectorFlow(
    dim=train_x.shape[1],
    num_steps=v.num_steps,
    linear="cd",
    hidden=v.hidden,
    num_hidden_layers=v.num_hidden_layers,
  )
  d = config.data
  dq = density.Dequantized(d.num_levels, d.logit_alpha, event_ndims=1)

  def loss_fn(params, y, key):
    del key
    return dq.loss(model, params, y), {}

  key = jax.random.key(0)
  with helpers.on("cpu"):
    params = jax.jit(dq.init, static_argnums=0)(
      model, key, train_x[: d.init_batch]
    )
    batch = jax.jit(dq.batch, static_argnums=2)(
      key, train_x, config.optim.batch_size
    )
  _compare(
    "cd_flow", platform, loss_fn, params, batch, key,
    loss_tol=1e-5, step_tol=1e-4,
  )  # fmt: skip


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_hns_step(platform, fast_compile):
  config = hns_config.get_config("smoke")
  p = config.pde
  with helpers.on("cpu"):
    grid, train, _ = hns_advection.make_data(config)
    model = solver.build_model("hns", config.hns, p.length)
    u, target = solver.training_targets(
      "hns", config.pde_name, train, grid, p.dt,
      label_stencil=config.label_stencil,
    )  # fmt: skip
    parts = solver.task_parts(
      "hns", model, grid, u, target, batch_size=config.batch_size
    )
    key = jax.random.key(0)
    params = jax.jit(parts["init_fn"])(key)
    batch = jax.jit(parts["batch_fn"])(parts["data"], key, 0, key)
  _compare(
    "hns", platform, parts["loss_fn"], params, batch, key,
    loss_tol=1e-5, step_tol=1e-4,
  )  # fmt: skip
