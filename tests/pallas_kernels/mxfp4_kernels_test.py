"""Pallas MXFP4 kernels in interpret mode == the pure-jnp reference (oracle 10).

Interpret mode is slow on CPU, so the shapes are small; they include
non-square operands and row counts that are not multiples of 128 (or 32).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lib import quant
from pallas_kernels.mxfp4 import gemm
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import quantize
from pallas_kernels.mxfp4 import reference


@pytest.mark.parametrize(
  "method,shape",
  [
    ("quest", (64, 256)),
    ("quest", (40, 96)),
    ("absmax_sr", (40, 256)),
    ("absmax_rtn", (24, 64)),
  ],
)
def test_quantize_kernel_equals_reference(method, shape):
  x = 3.0 * jax.random.normal(jax.random.key(0), shape)
  signs = quant.random_signs(jax.random.key(1))
  seed = jnp.uint32(1234)
  got, got_mask = quantize.quantize_pallas(
    x, method=method, signs=signs, seed=seed, interpret=True
  )
  if method == "quest":
    want, want_mask = reference.quantize_quest(x)
    np.testing.assert_array_equal(got_mask, want_mask)
  else:
    want = reference.quantize_absmax(
      x, signs=signs, seed=seed, stochastic=method == "absmax_sr"
    )
    assert np.all(got_mask)
  assert got.alpha_inv == want.alpha_inv
  np.testing.assert_array_equal(got.scale, want.scale)
  np.testing.assert_array_equal(got.codes, want.codes)


@pytest.mark.parametrize(
  "m,n,k,block_sizes",
  [
    (40, 96, 96, None),  # K = 3 groups, M not a multiple of 32
    (72, 64, 256, gemm.BlockSizes(block_m=32, block_n=32, block_k=128)),
  ],
)
def test_gemm_kernel_equals_reference(m, n, k, block_sizes):
  ka, kb = jax.random.split(jax.random.key(m + n + k))
  a, _ = reference.quantize_quest(jax.random.normal(ka, (m, k)))
  b = reference.quantize_absmax(
    jax.random.normal(kb, (n, k)), seed=jnp.uint32(5)
  )
  got = gemm.mx_matmul_pallas(a, b, block_sizes=block_sizes, interpret=True)
  want = (
    np.asarray(reference.dequantize(a), np.float64)
    @ np.asarray(reference.dequantize(b), np.float64).T
  )
  assert got.shape == (m, n)
  # Products of E2M1 x power-of-two values are exact; only the fp32
  # summation order differs.
  np.testing.assert_allclose(
    got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()
  )


def test_block_sizes_validate():
  with pytest.raises(ValueError, match="power of two"):
    gemm.BlockSizes(block_m=48)
  with pytest.raises(ValueError, match="block_k"):
    gemm.BlockSizes(block_k=96)


def test_ops_dispatch_rejects_unknown_implementation():
  x = jnp.ones((32, 32))
  with pytest.raises(ValueError, match="implementation"):
    ops.quantize_quest(x, implementation="cuda")


def test_quartet_linear_pallas_values_and_grads():
  """The whole custom_vjp with Pallas kernels == with the XLA reference."""
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

  got = jax.jit(lambda: run("pallas"))()
  want = jax.jit(lambda: run("xla"))()
  for g, r in zip(got, want):
    np.testing.assert_allclose(
      g, r, rtol=1e-5, atol=1e-5 * float(jnp.abs(r).max())
    )
