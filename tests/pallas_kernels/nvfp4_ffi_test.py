"""NVFP4 (E2M1 + E4M3 per 16 + fp32 tensor scale): layout and CPU GEMM.

Oracles: the spec's swizzle formula (quartet_fp4.md section 2.2: within a
128 x 4 tile, element (r, c) of the 32 x 16 sub-tile holds
scale[r + 32 (c // 4), c % 4]) written out in numpy; E4M3 values from
ml_dtypes; float64 products of independently decoded operands.
"""

import shutil

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from lib import quant
from pallas_kernels.mxfp4 import ffi
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.errors import MxInputError
from pallas_kernels.mxfp4.ffi import build
from tests import helpers

E2M1 = np.array(
  [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64
)


@pytest.fixture(scope="module", autouse=True)
def cpu_library():
  if shutil.which("g++") is None:
    pytest.skip("g++ not found")
  return build.build_cpu()


def _spec_swizzle(scale: np.ndarray) -> np.ndarray:
  """The spec's layout, element by element (independent of to_blocked)."""
  rows, cols = scale.shape
  rb, cb = -(-rows // 128), -(-cols // 4)
  out = np.zeros(rb * cb * 512, scale.dtype)
  for t_r in range(rb):
    for t_c in range(cb):
      base = (t_r * cb + t_c) * 512
      for i in range(32):
        for j in range(16):
          r, c = t_r * 128 + i + 32 * (j // 4), t_c * 4 + j % 4
          if r < rows and c < cols:
            out[base + i * 16 + j] = scale[r, c]
  return out


def _np_dequant(t) -> np.ndarray:
  """float64 e2m1(code) * e4m3(block scale) * tensor scale."""
  c = np.asarray(t.codes)
  un = np.stack([c & 15, c >> 4], -1).reshape(*c.shape[:-1], -1)
  s = np.asarray(t.scale).astype(ml_dtypes.float8_e4m3fn).astype(np.float64)
  return E2M1[un] * np.repeat(s, 16, axis=-1) * float(t.global_scale)


@pytest.mark.parametrize("rows, cols", [(128, 4), (130, 5), (7, 9), (300, 2)])
def test_swizzle_matches_the_spec_and_inverts(rows, cols):
  s = np.arange(rows * cols, dtype=np.int32).reshape(rows, cols) + 1
  flat = np.asarray(reference.to_blocked(jnp.asarray(s)))
  np.testing.assert_array_equal(flat, _spec_swizzle(s))
  np.testing.assert_array_equal(
    reference.from_blocked(jnp.asarray(flat), rows, cols), s
  )
  r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
  np.testing.assert_array_equal(flat[reference.blocked_index(r, c, cols)], s)


def _grid_operand(rows, k, seed):
  """Values on the E2M1 grid times a power of two per 16-block in [1/8, 8]:
  quantization is exact and every fp32 sum of products is exact."""
  rng = np.random.default_rng(seed)
  v = rng.choice(E2M1, size=(rows, k))
  v[:, ::16] = 6.0  # each block's amax is 6: block scale = its power of two
  p = 2.0 ** rng.integers(-3, 4, size=(rows, k // 16))
  return jnp.asarray(v * np.repeat(p, 16, axis=-1), jnp.float32)


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_cpu_gemm_is_bit_exact_with_swizzled_scales(platform):
  """The CPU handler; on a GPU (`gpu` case) the CUDA one: every product and
  sum is exact here, so the BF16 (Hopper) and FP4 (Blackwell) paths too."""
  helpers.ffi_library(platform)
  with helpers.on("cpu"):
    # 130 rows and K/16 = 5 scale columns: two tile rows, padded tile columns.
    a = quant.quantize_nvfp4(_grid_operand(130, 80, 0), 1.0)
    b = quant.quantize_nvfp4(_grid_operand(40, 80, 1), 0.5)
    want = reference.nvfp4_matmul(a, b)
  np.testing.assert_array_equal(_np_dequant(a), _grid_operand(130, 80, 0))
  exact = _np_dequant(a) @ _np_dequant(b).T
  got = jax.jit(ffi.nvfp4_gemm)(*helpers.put((a, b), platform))
  helpers.report(
    f"ffi_nvfp4_gemm_grid_{platform}",
    max_abs_err=np.max(np.abs(np.asarray(got, np.float64) - exact)),
    path=helpers.cuda_gemm_path() if platform == "gpu" else "cpu",
  )
  np.testing.assert_array_equal(np.asarray(got, np.float64), exact)
  np.testing.assert_array_equal(want, got)


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_cpu_gemm_general_data_within_fp32_summation_bound(platform):
  helpers.ffi_library(platform)
  rng = np.random.default_rng(3)
  x = jnp.asarray(rng.standard_normal((64, 256)) * 3, jnp.float32)
  w = jnp.asarray(rng.standard_normal((48, 256)) * 0.1, jnp.float32)
  a, b = quant.quantize_nvfp4(x), quant.quantize_nvfp4(w)
  da, db = _np_dequant(a), _np_dequant(b)
  exact = da @ db.T
  bound = 256 * 2.0**-23 * (np.abs(da) @ np.abs(db).T) + 1e-30
  for out_dtype, extra in ((jnp.float32, 0.0), (jnp.bfloat16, 2.0**-8)):
    got = np.asarray(
      ffi.nvfp4_gemm(*helpers.put((a, b), platform), out_dtype=out_dtype),
      np.float64,
    )
    err = np.abs(got - exact)
    helpers.report(
      f"ffi_nvfp4_gemm_{jnp.dtype(out_dtype).name}_{platform}",
      err_over_bound=np.max(err / (bound + extra * np.abs(exact))),
    )
    assert np.all(err <= bound + extra * np.abs(exact))
  # The quantized product is close to the float one (NVFP4 error level).
  rel = np.linalg.norm(exact - np.asarray(x @ w.T)) / np.linalg.norm(x @ w.T)
  assert rel < 0.2


def test_cpu_gemm_batches_and_vmaps():
  xs = jnp.stack([_grid_operand(32, 64, s) for s in range(3)])
  a = jax.vmap(lambda x: quant.quantize_nvfp4(x, 1.0))(xs)
  b = quant.quantize_nvfp4(_grid_operand(16, 64, 9), 2.0)
  per = [
    ffi.nvfp4_gemm(jax.tree.map(lambda v, i=i: v[i], a), b) for i in range(3)
  ]
  vmapped = jax.vmap(ffi.nvfp4_gemm, in_axes=(0, None))(a, b)
  for i in range(3):
    np.testing.assert_array_equal(vmapped[i], per[i])


def test_bad_nvfp4_input_is_one_line():
  a = quant.quantize_nvfp4(jnp.ones((4, 32)))
  b = quant.quantize_nvfp4(jnp.ones((4, 48)))
  with pytest.raises(MxInputError, match="contraction sizes differ"):
    ffi.nvfp4_gemm(a, b)
  with pytest.raises(ValueError, match="multiple of 16"):
    quant.quantize_nvfp4(jnp.ones((2, 24)))
