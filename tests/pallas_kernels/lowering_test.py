"""Every Pallas kernel lowers for CUDA on a CPU machine, through Triton.

GPU readiness without a GPU: a kernel that would pick the wrong backend
(Mosaic GPU, the default for a `pallas_call` without compiler params) or has a
block shape the Triton lowering rejects fails here, in CI, not on a user's GPU.
Lowering only (no compile, no run): `lowering_platforms=("cuda",)`, for an
abstract NVIDIA H200 (sm_90, the GPU of our device runs): jax >= 0.11 reads the
compute capability Triton lowers for from the device, and without a GPU only an
abstract one gives it.
"""

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl

from pallas_kernels.mxfp4 import _triton
from pallas_kernels.mxfp4 import gemm
from pallas_kernels.mxfp4 import quantize

_TRITON = "@__gpu$xla.gpu.triton"


_H200 = jax.sharding.AbstractMesh(
  (1,),
  ("x",),
  abstract_device=jax.sharding.AbstractDevice(
    device_kind="NVIDIA H200", num_cores=None, platform="gpu"
  ),
)


def _lower_for_cuda(fn, *args) -> str:
  with jax.sharding.use_abstract_mesh(_H200):
    lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
  return lowered.as_text()


@pytest.mark.parametrize("method", quantize.METHODS)
@pytest.mark.parametrize("shape", [(128, 256), (40, 96)])
def test_quantize_kernel_lowers_for_cuda_with_triton(method, shape):
  x = jax.ShapeDtypeStruct(shape, jnp.float32)
  text = _lower_for_cuda(
    lambda x: quantize.quantize_pallas(
      x, method=method, seed=jnp.uint32(3), interpret=False
    ),
    x,
  )
  assert text.count(_TRITON) == 1


@pytest.mark.parametrize("mnk", [(128, 256, 512), (40, 72, 96)])
def test_gemm_kernel_lowers_for_cuda_with_triton(mnk):
  m, n, k = mnk
  a = jax.eval_shape(
    lambda x: quantize.quantize_pallas(x, interpret=True)[0],
    jax.ShapeDtypeStruct((m, k), jnp.float32),
  )
  b = jax.eval_shape(
    lambda x: quantize.quantize_pallas(x, interpret=True)[0],
    jax.ShapeDtypeStruct((n, k), jnp.float32),
  )
  text = _lower_for_cuda(
    lambda a, b: gemm.mx_matmul_pallas(a, b, interpret=False), a, b
  )
  assert text.count(_TRITON) == 1


def _add_one(n: int, block: int, params):
  def kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1

  spec = pl.BlockSpec((block, n), lambda i: (i, 0))
  return pl.pallas_call(
    kernel,
    out_shape=jax.ShapeDtypeStruct((n, n), jnp.float32),
    grid=(n // block,),
    in_specs=[spec],
    out_specs=spec,
    compiler_params=params,
  )


@pytest.mark.filterwarnings("ignore:Using ``pl.pallas_call`` for Mosaic GPU")
def test_the_check_can_fail():
  """What the kernel tests rely on: the CPU-side lowering rejects what a GPU
  would, and without params a call goes to jax's default GPU backend: Mosaic
  GPU on jax 0.10 (so our kernels pass Triton params), Triton on 0.11."""
  x = jax.ShapeDtypeStruct((48, 48), jnp.float32)
  with pytest.raises(ValueError, match="power of 2"):
    _lower_for_cuda(_add_one(48, 48, _triton.compiler_params(False)), x)
  x = jax.ShapeDtypeStruct((64, 64), jnp.float32)
  assert _TRITON in _lower_for_cuda(
    _add_one(64, 32, _triton.compiler_params(False)), x
  )
  default = _lower_for_cuda(_add_one(64, 32, None), x)
  if jax.__version_info__ < (0, 11):
    assert _TRITON not in default and "mosaic_gpu" in default
  else:
    assert _TRITON in default
