"""Pallas MXFP4 kernels in interpret mode == the pure-jnp reference (oracle 10).

Interpret mode is slow on CPU, so the shapes are small; they include
non-square operands and row counts that are not multiples of 128 (or 32).
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import quant
from pallas_kernels.mxfp4 import gemm
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import quantize
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.reference import MXTensor
from tests import helpers


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
@pytest.mark.parametrize(
  "method,shape",
  [
    ("quest", (64, 256)),
    ("quest", (40, 96)),
    ("absmax_sr", (40, 256)),
    ("absmax_rtn", (24, 64)),
  ],
)
def test_quantize_kernel_equals_reference(method, shape, platform):
  """Interpret mode on CPU; compiled through Triton on a GPU (`gpu` case).
  The oracle is the reference on CPU either way."""
  with helpers.on("cpu"):
    x = 3.0 * jax.random.normal(jax.random.key(0), shape)
    signs = quant.random_signs(jax.random.key(1))
    seed = jnp.uint32(1234)
    if method == "quest":
      want, want_mask = reference.quantize_quest(x)
    else:
      want = reference.quantize_absmax(
        x, signs=signs, seed=seed, stochastic=method == "absmax_sr"
      )
      want_mask = np.ones(shape, bool)
  x, signs, seed = helpers.put((x, signs, seed), platform)
  got, got_mask = quantize.quantize_pallas(
    x, method=method, signs=signs, seed=seed, interpret=platform == "cpu"
  )
  helpers.report(
    f"pallas_quantize_{method}_{shape[0]}x{shape[1]}_{platform}",
    codes_equal=np.mean(np.asarray(got.codes) == np.asarray(want.codes)),
    scales_equal=np.mean(np.asarray(got.scale) == np.asarray(want.scale)),
  )
  assert got.alpha_inv == want.alpha_inv
  np.testing.assert_array_equal(got_mask, want_mask)
  np.testing.assert_array_equal(got.scale, want.scale)
  np.testing.assert_array_equal(got.codes, want.codes)


def assert_within_fp32_sum(got, a, b):
  """got ~ dequant(a) dequant(b)^T (alpha included) to fp32 summation order:
  products of E2M1 x power-of-two values are exact, so |err| <= K 2^-24
  |A||B|^T. Returns the largest err / bound (<= 1)."""
  da = np.asarray(reference.dequantize(a), np.float64)
  db = np.asarray(reference.dequantize(b), np.float64)
  exact = da @ db.T
  bound = da.shape[-1] * 2.0**-24 * (np.abs(da) @ np.abs(db).T)
  err = np.abs(np.asarray(got, np.float64) - exact)
  ratio = float(np.max(err / (bound + 1e-30)))
  assert np.all(err <= bound + 1e-30), ratio
  return ratio


GEMM_CASES = [
  (40, 96, 96, None),  # K = 3 groups, M not a multiple of 32
  (72, 64, 256, gemm.BlockSizes(block_m=32, block_n=32, block_k=128)),
]
# The default 128 x 128 x 256 tiles over several K chunks: GPU only (too
# slow in interpret mode for CI).
GPU_GEMM_CASES = [(256, 384, 1024, None)]


@pytest.mark.parametrize(
  "m,n,k,block_sizes,platform",
  [(*c, "cpu") for c in GEMM_CASES]
  + [
    pytest.param(*c, "gpu", marks=pytest.mark.gpu)
    for c in GEMM_CASES + GPU_GEMM_CASES
  ],
)
def test_gemm_kernel_equals_reference(m, n, k, block_sizes, platform):
  with helpers.on("cpu"):
    ka, kb = jax.random.split(jax.random.key(m + n + k))
    a, _ = reference.quantize_quest(jax.random.normal(ka, (m, k)))
    b = reference.quantize_absmax(
      jax.random.normal(kb, (n, k)), seed=jnp.uint32(5)
    )
  got = gemm.mx_matmul_pallas(
    *helpers.put((a, b), platform),
    block_sizes=block_sizes,
    interpret=platform == "cpu",
  )
  assert got.shape == (m, n)
  ratio = assert_within_fp32_sum(got, a, b)
  helpers.report(
    f"pallas_gemm_{m}x{n}x{k}_{platform}", err_over_fp32_bound=ratio
  )


def test_block_sizes_validate():
  with pytest.raises(ValueError, match="power of two"):
    gemm.BlockSizes(block_m=48)
  with pytest.raises(ValueError, match="block_k"):
    gemm.BlockSizes(block_k=96)


def test_stochastic_rounding_names_a_missing_or_wrong_seed():
  x = jax.random.normal(jax.random.key(0), (4, 64))
  key = jax.random.key(3)
  with pytest.raises(ValueError, match="needs a seed"):
    reference.quantize_absmax(x)
  with pytest.raises(TypeError, match="seed_from_key"):  # a typed key
    reference.quantize_absmax(x, seed=key)
  with pytest.raises(TypeError, match="uint32 scalar"):
    reference.quantize_nvfp4(x, stochastic=True, seed=jnp.ones(2, jnp.uint32))
  with pytest.raises(TypeError, match="seed_from_key"):
    quantize.quantize_pallas(x, method="absmax_sr", seed=key, interpret=True)
  with pytest.raises(TypeError, match="jnp.uint32"):  # a Python int
    reference.quantize_absmax(x, seed=7)
  # The seed drawn from the key is the uint32 scalar it asks for.
  seed = reference.seed_from_key(key)
  got = reference.quantize_absmax(x, seed=seed)
  again = reference.quantize_absmax(x, seed=jnp.uint32(int(seed)))
  np.testing.assert_array_equal(got.codes, again.codes)


@pytest.mark.parametrize("implementation", [None, "xla", "pallas"])
def test_every_implementation_refuses_the_seeds_the_reference_refuses(
  implementation,
):
  # check_seed refuses a Python number; the jitted Pallas wrapper turned it
  # into a traced int32 and went on.
  x = jnp.ones((2, 64))
  for seed, pattern in (
    (7, "jnp.uint32"),
    (jax.random.key(0), "seed_from_key"),
  ):
    with pytest.raises(TypeError, match=pattern):
      ops.quantize_absmax(x, seed=seed, implementation=implementation)


def test_ops_dispatch_rejects_unknown_implementation():
  x = jnp.ones((32, 32))
  with pytest.raises(ValueError, match="implementation"):
    ops.quantize_quest(x, implementation="cuda")


@pytest.mark.parametrize("implementation", [None, "xla", "pallas"])
def test_mx_matmul_takes_leading_axes_of_a_in_every_implementation(
  implementation,
):
  # a [2, 3, K] holds 6 rows; the oracle is the float64 product of the
  # dequantized operands (MXFP4 products are exact, sums of 64 terms agree
  # to fp32 rounding).
  ka, kb = jax.random.split(jax.random.key(0))
  a, _ = ops.quantize_quest(jax.random.normal(ka, (2, 3, 64)))
  b = ops.quantize_absmax(jax.random.normal(kb, (5, 64)), seed=jnp.uint32(1))
  want = (
    np.asarray(reference.dequantize(a), np.float64)
    @ np.asarray(reference.dequantize(b), np.float64).T
  )
  got = ops.mx_matmul(a, b, implementation=implementation)
  assert got.shape == (2, 3, 5)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match=r"b \[N, K\]"):
    ops.mx_matmul(b, a, implementation=implementation)


@pytest.mark.parametrize("implementation", [None, "xla", "pallas"])
def test_no_rows_quantize_and_multiply_to_empty_results(implementation):
  # A batch of 0 rows (an empty shard, a filtered batch) is an empty
  # quantized tensor, and a product with 0 rows or 0 columns is the empty
  # [M, N] matrix, as jnp.dot gives; the kernels launched a grid of 0 blocks
  # and unpack_nibbles reshaped with -1 over 0 entries.
  kw = dict(implementation=implementation)
  x0 = jnp.zeros((0, 64))
  q, mask = ops.quantize_quest(x0, **kw)
  assert q.codes.shape == (0, 32) and q.scale.shape == (0, 2)
  assert mask.shape == (0, 64)
  bits = reference.pack_mask_bits(mask)
  assert bits.shape == (0, 8)
  assert reference.unpack_mask_bits(bits).shape == (0, 64)
  s0 = ops.quantize_absmax(x0, seed=jnp.uint32(1), **kw)
  r0 = ops.quantize_absmax(x0, stochastic=False, **kw)
  assert s0.codes.shape == r0.codes.shape == (0, 32)
  b, _ = ops.quantize_quest(jnp.ones((5, 64)), **kw)
  for a, w, shape in ((q, b, (0, 5)), (b, s0, (5, 0)), (q, r0, (0, 0))):
    y = ops.mx_matmul(a, w, **kw)
    assert y.shape == shape and y.dtype == jnp.float32
  assert ops.mx_matmul(
    MXTensor(q.codes.reshape(2, 0, 32), q.scale.reshape(2, 0, 2), 1), b, **kw
  ).shape == (2, 0, 5)


@pytest.mark.parametrize("implementation", [None, "pallas"])
def test_mx_matmul_names_operands_that_are_not_quantized(implementation):
  b, _ = ops.quantize_quest(jnp.ones((5, 64)))
  with pytest.raises(
    TypeError, match=r"a must be an MXTensor.*got an array of shape \(4, 64\)"
  ):
    ops.mx_matmul(jnp.ones((4, 64)), b, implementation=implementation)
  with pytest.raises(TypeError, match="b must be an MXTensor"):
    reference.mx_matmul(b, jnp.ones((4, 64)))


@pytest.mark.parametrize("implementation", [None, "pallas"])
def test_signs_of_another_shape_are_one_line(implementation):
  x = jnp.ones((2, 64))
  for shape in ((16,), (64,), (2, 32)):
    pattern = r"shape \[32\]; got shape " + re.escape(str(shape))
    with pytest.raises(ValueError, match=pattern):
      ops.quantize_absmax(
        x,
        signs=jnp.ones(shape),
        seed=jnp.uint32(1),
        implementation=implementation,
      )


def test_reference_rotation_and_matmul_check_their_shapes():
  # The reference is a public entry point too (lib.quant calls it directly):
  # signs of another shape broadcast into a wrong rotation or a deep jnp
  # error, and a 3-D b was transposed on every axis by `.T`.
  with pytest.raises(ValueError, match=r"shape \[32\]; got shape \(16,\)"):
    reference.rotation_matrix(jnp.ones(16))
  with pytest.raises(ValueError, match=r"shape \[32\]; got shape \(1, 32\)"):
    reference.rotate(jnp.ones((2, 32)), jnp.ones((1, 32)))
  a = reference.quantize_ocp(jnp.ones((4, 32)))
  b3 = reference.quantize_ocp(jnp.ones((2, 32, 32)))
  with pytest.raises(ValueError, match=r"b \[N, K\].*b \[2, 32, 32\]"):
    reference.mx_matmul(a, b3)


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
def test_quartet_linear_implementations_agree(platform):
  """The whole custom_vjp (forward GEMM, both backward GEMMs and their
  quantizers) with Pallas kernels and with the FFI == with the XLA reference,
  on the same inputs and keys."""
  helpers.ffi_library(platform)
  with helpers.on(platform):
    kx, kw, ke = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(kx, (40, 64))  # T = 40: padded to 64 for dW
    w = jax.random.normal(kw, (32, 64))
    e = jax.random.normal(ke, (40, 32))

    def run(implementation):
      def f(x, w):
        return quant.quartet_linear(
          x, w, jax.random.key(7), implementation=implementation
        )

      y, vjp = jax.vjp(f, x, w)
      return (y, *vjp(e))

    want = jax.jit(lambda: run("xla"))()
    for implementation in ("pallas", "ffi"):
      got = jax.jit(lambda i=implementation: run(i))()
      diffs = [
        float(jnp.max(jnp.abs(g - r)) / jnp.max(jnp.abs(r)))
        for g, r in zip(got, want)
      ]
      helpers.report(
        f"quartet_linear_{implementation}_vs_xla_{platform}",
        **dict(zip(("y", "dx", "dw"), diffs)),
      )
      for g, r in zip(got, want):
        np.testing.assert_allclose(
          g, r, rtol=1e-5, atol=1e-5 * float(jnp.abs(r).max())
        )
