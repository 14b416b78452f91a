"""A table of bad inputs run through the command line as a user would.

Each must end with exit code 1, a last stderr line `error: ...` naming the
problem, and no Python traceback anywhere in stderr. The inputs: config keys
and values, data files, method names, library calls reached from a binary
(periodic grid, FFI library), the multi-process environment, and workdirs
whose checkpoints are damaged or belong to another model.
"""

import os
import re
import shutil
import socket

import numpy as np
import pytest

from lib.core import errors
from tests.helpers import run_binary
from tests.reliability.conftest import SIMPLICITY_BIAS
from tests.reliability.conftest import SIMPLICITY_BIAS_ARGS

SB = "experiments.simplicity_bias"
SB_SMOKE = (
  "--config=configs/simplicity_bias.py:quick,smoke",
  "--config.spurious.enabled=false",
)
CDF = "experiments.cdflow_density"
CDF_SMOKE = ("--config=configs/cdflow_density.py:quick,smoke",)
QLLM = "experiments.quartet_llm"
QLLM_SMOKE = ("--config=configs/quartet_llm.py:quick,smoke",)
HNS = "experiments.bench_hns"
HNS_SMOKE = ("--config=configs/bench_hns.py:quick,smoke",)
MX = "experiments.bench_mxfp4"
MX_SMOKE = ("--config=configs/bench_mxfp4.py:quick,smoke",)
ADV = "experiments.hns_advection"
ADV_SMOKE = ("--config=configs/hns_advection.py:quick,smoke",)


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _dist_env(pid: int) -> dict:
  return {
    "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{_free_port()}",
    "JAX_NUM_PROCESSES": "2",
    "JAX_PROCESS_ID": str(pid),
  }


def _files(tmp_path) -> dict:
  """Data files for the table: token and image arrays with bad values."""
  nan_tokens = np.arange(100, dtype=np.float32) % 200
  nan_tokens[7] = np.nan
  frac_tokens = np.arange(100, dtype=np.float64) % 200
  frac_tokens[3] = 2.5
  nan_images = np.zeros((40, 8, 8), np.float32)
  nan_images[1, 2, 3] = np.nan
  files = {
    "nan_tokens": nan_tokens,
    "frac_tokens": frac_tokens,
    "nan_images": nan_images,
  }
  paths = {}
  for name, arr in files.items():
    paths[name] = str(tmp_path / f"{name}.npy")
    np.save(paths[name], arr)
  paths["empty_dir"] = str(tmp_path / "empty")
  os.makedirs(paths["empty_dir"], exist_ok=True)
  return paths


# (id, module, args, env, pattern the last line must match after "error: ")
CASES = [
  ("unknown_key", SB, ("--config.train.lerning_rate=1",), {}, "lerning_rate"),
  (
    "negative_steps",
    SB,
    ("--config.train.num_steps=-1",),
    {},
    r"num_steps=-1 must be >= 0",
  ),
  (
    "zero_batch_size",
    CDF,
    ("--config.optim.batch_size=0",),
    {},
    r"optim\.batch_size=0 must be a positive integer",
  ),
  (
    "bad_optimizer_name",
    SB,
    ("--config.optimizers=('gd','adamw')",),
    {},
    r"config\.optimizers holds 'adamw'",
  ),
  (
    "negative_learning_rate",
    SB,
    ("--config.optim.adam_lr=-0.1",),
    {},
    r"config\.optim\.adam_lr=-0\.1 must be a finite number > 0",
  ),
  (
    "bad_linear_name",
    CDF,
    ("--config.vector.linears=('cd','lux')",),
    {},
    r"config\.vector\.linears holds 'lux'",
  ),
  (
    "missing_image_file",
    CDF,
    ("--config.data.images_npy=/no/such/images.npy",),
    {},
    r"images_npy '/no/such/images\.npy' not found",
  ),
  (
    "nan_image_file",
    CDF,
    ("--config.data.images_npy={nan_images}",),
    {},
    r"non-finite",
  ),
  (
    "missing_token_file",
    QLLM,
    ("--config.data.path=/no/such/tokens.npy",),
    {},
    r"'/no/such/tokens\.npy' does not exist",
  ),
  (
    "nan_token_file",
    QLLM,
    ("--config.data.path={nan_tokens}",),
    {},
    r"non-finite value \(nan\) at index 7",
  ),
  (
    "fractional_token_file",
    QLLM,
    ("--config.data.path={frac_tokens}",),
    {},
    r"non-integer value \(2\.5\) at index 3",
  ),
  (
    "periodic_grid_zero",
    ADV,
    ("--config.pde.n_x=0",),
    {},
    r"n_x|n >= 2",
  ),
  (
    "bad_stencil_name",
    HNS,
    ("--config.j_stencil=upwind",),
    {},
    r"config\.j_stencil='upwind' is not one of",
  ),
  (
    "bad_gemm_implementation",
    MX,
    ("--config.gemm_implementations=('xla','triton')",),
    {},
    r"gemm_implementations holds 'triton'",
  ),
  (
    "gemm_k_not_multiple_of_32",
    MX,
    ("--config.gemm_shapes=((64,48,64),)",),
    {},
    r"gemm_shapes \(64, 48, 64\): entry 1=48 must be a multiple of 32",
  ),
  (
    "ffi_library_not_built",
    QLLM,
    ("--config.implementation=ffi",),
    {"QUARTET_MXFP4_FFI_DIR": "{empty_dir}"},
    r"MXFP4 FFI library for cpu is not built .*build it with",
  ),
  (
    "distributed_without_coordinator",
    SB,
    ("--distributed",),
    {"JAX_NUM_PROCESSES": "2"},
    r"JAX_COORDINATOR_ADDRESS and JAX_PROCESS_ID not set",
  ),
  (
    "distributed_garbage_env",
    SB,
    ("--distributed",),
    {"JAX_NUM_PROCESSES": "two", "JAX_PROCESS_ID": "0"},
    r"JAX_NUM_PROCESSES='two' must be an integer",
  ),
  (
    "distributed_peer_never_starts",
    SB,
    ("--distributed", "--distributed_timeout_s=3"),
    "dist0",
    r"process 0 of 2 waited 3 s .* but process 1 of 2 never joined",
  ),
  (
    "distributed_coordinator_never_starts",
    SB,
    ("--distributed", "--distributed_timeout_s=3"),
    "dist1",
    r"process 1 of 2 could not reach the coordinator \(process 0\)",
  ),
]


def _fill(value, paths):
  return value.format(**paths) if isinstance(value, str) else value


def assert_one_line_error(proc, pattern: str) -> str:
  """Exit code 1, last stderr line `error: <pattern...>`, no traceback."""
  lines = [line for line in proc.stderr.splitlines() if line.strip()]
  last = lines[-1] if lines else ""
  assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  assert last.startswith("error: "), proc.stderr[-3000:]
  assert re.search(pattern, last), (pattern, last)
  return last


@pytest.mark.parametrize(
  "module,args,env,pattern",
  [case[1:] for case in CASES],
  ids=[case[0] for case in CASES],
)
def test_bad_input_is_one_line(tmp_path, module, args, env, pattern):
  paths = _files(tmp_path)
  smoke = {
    SB: SB_SMOKE,
    CDF: CDF_SMOKE,
    QLLM: QLLM_SMOKE,
    HNS: HNS_SMOKE,
    MX: MX_SMOKE,
    ADV: ADV_SMOKE,
  }[module]
  if isinstance(env, str):  # a fresh port per run
    env = _dist_env(int(env[-1]))
  env = {k: _fill(v, paths) for k, v in env.items()}
  args = [_fill(a, paths) for a in args]
  workdir = str(tmp_path / "run")
  proc = run_binary(
    module, *smoke, *args, f"--workdir={workdir}", env=env, timeout=240
  )
  assert_one_line_error(proc, pattern)


def _damaged_copy(reference, tmp_path) -> str:
  workdir = str(tmp_path / "run")
  shutil.copytree(reference, workdir)
  return workdir


def test_every_checkpoint_damaged_is_one_line(
  tmp_path, simplicity_bias_reference
):
  workdir = _damaged_copy(simplicity_bias_reference, tmp_path)
  ckpt = os.path.join(workdir, "adam", "ckpt")
  steps = sorted(os.listdir(ckpt))
  for step in steps:
    for root, _, files in os.walk(os.path.join(ckpt, step)):
      for f in files:
        if os.path.basename(root) == "d":
          open(os.path.join(root, f), "wb").close()
  proc = run_binary(
    SIMPLICITY_BIAS, *SIMPLICITY_BIAS_ARGS, f"--workdir={workdir}"
  )
  last = assert_one_line_error(proc, r"no readable checkpoint in .*adam/ckpt")
  assert ", ".join(steps) in last or ", ".join(sorted(steps, key=int)) in last
  # One warning per damaged step, each naming it.
  for step in steps:
    assert f"checkpoint step {step} in" in proc.stderr


def test_checkpoint_of_another_model_is_one_line(
  tmp_path, simplicity_bias_reference
):
  workdir = _damaged_copy(simplicity_bias_reference, tmp_path)
  proc = run_binary(
    SIMPLICITY_BIAS,
    *SIMPLICITY_BIAS_ARGS,
    "--config.model.m=32",
    "--config.allow_config_change=True",
    f"--workdir={workdir}",
  )
  assert_one_line_error(
    proc,
    r"written by another model \(leaf '1\.params\.W' has shape \(16, 2\) "
    r"there, \(32, 2\) here\); use a new --workdir",
  )


def test_library_errors_are_user_errors():
  """What the binaries reach: each is a type the CLI prints as one line."""
  import jax.numpy as jnp

  from experiments import _cli
  from lib import pde
  from pallas_kernels.mxfp4 import ops
  from pallas_kernels.mxfp4.ffi import _loader

  def user_error(fn):
    with pytest.raises(Exception) as e:
      fn()
    assert _cli.is_user_error(e.value, errors.UserError), repr(e.value)
    assert "\n" not in _cli.one_line(e.value)
    return str(e.value)

  assert "got 0" in user_error(lambda: pde.periodic_grid(0, 1.0))
  assert "got 2.5" in user_error(lambda: pde.periodic_grid(2.5, 1.0))
  assert "got nan" in user_error(lambda: pde.periodic_grid(8, float("nan")))
  a, _ = ops.quantize_quest(jnp.ones((4, 64)))
  b, _ = ops.quantize_quest(jnp.ones((3, 96)))
  message = user_error(lambda: ops.mx_matmul(a, b))
  assert "same K" in message and "[4, 64]" in message and "[3, 96]" in message
  message = user_error(lambda: ops.mx_matmul(a, a, implementation="x"))
  assert "unknown implementation 'x'" in message
  assert _cli.is_user_error(_loader.FfiLibraryNotBuiltError("x"))
  assert not _cli.is_user_error(ValueError("a bug"), errors.UserError)
