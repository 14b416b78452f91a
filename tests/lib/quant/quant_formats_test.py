"""Oracles 1-4 and 6 of the Quartet spec (7.7): E2M1, E8M0, packing, OCP, swizzle."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from lib import quant
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.errors import MxInputError


def test_e2m1_code_table_ties_and_saturation():
  table = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
  got = quant.e2m1_decode(jnp.arange(16, dtype=jnp.uint8))
  np.testing.assert_array_equal(got, np.array(table, np.float32))
  assert np.signbit(got[8])  # code 8 is -0
  ties = jnp.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 100.0])
  np.testing.assert_array_equal(
    quant.e2m1_decode(quant.e2m1_encode_rne(ties)), [0, 1, 1, 2, 2, 4, 4, 6, 6]
  )


def test_rne_rounder_equals_float4_cast():
  x = jax.random.uniform(jax.random.key(0), (100_000,), minval=-8, maxval=8)
  want = np.asarray(x).astype(ml_dtypes.float4_e2m1fn).astype(np.float32)
  got = jax.jit(lambda x: quant.e2m1_decode(quant.e2m1_encode_rne(x)))(x)
  np.testing.assert_array_equal(np.abs(got), np.abs(want))
  np.testing.assert_array_equal(got[want != 0], want[want != 0])


def test_stochastic_rounding_is_unbiased_on_a_uniform_grid():
  a = jnp.array([0.1, 0.3, 0.8, 1.2, 1.9, 2.2, 3.7, 4.5, 5.9, -2.6, 6.0])
  u = (jnp.arange(4096, dtype=jnp.float32) + 0.5) / 4096
  q = jax.jit(lambda a, u: quant.e2m1_decode(quant.e2m1_encode_sr(a, u)))(
    a[:, None], u[None, :]
  )
  np.testing.assert_allclose(q.mean(axis=1), a, atol=1e-3)
  # Every draw is one of the two bracketing grid points.
  lo = np.array([0, 0, 0.5, 1, 1.5, 2, 3, 4, 4, -2, 6])
  hi = np.array([0.5, 0.5, 1, 1.5, 2, 3, 4, 6, 6, -3, 6])
  q = np.asarray(q)
  assert np.all((q == lo[:, None]) | (q == hi[:, None]))


def test_e8m0_bytes_and_floor_log2():
  # Byte 0 is the subnormal 2^-127, which XLA:CPU flushes to zero.
  b = np.arange(1, 255, dtype=np.uint8)
  want = b.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
  got = reference.scale_value(jnp.asarray(b))
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(got, 2.0 ** (b - 127.0))
  assert np.isnan(reference.scale_value(jnp.uint8(255)))
  v = np.exp(np.random.default_rng(0).uniform(-60, 60, 10_000)).astype(
    np.float32
  )
  v = np.concatenate([v, 2.0 ** np.arange(-100, 100, dtype=np.float32)])
  np.testing.assert_array_equal(
    reference.floor_log2(jnp.asarray(v)),
    np.floor(np.log2(v.astype(np.float64))),
  )
  e = jnp.arange(-126, 128)
  np.testing.assert_array_equal(
    reference.exp2_int(e), 2.0 ** np.arange(-126, 128.0)
  )


def test_packing_matches_bitcast_and_round_trips():
  codes = quant.e2m1_encode_rne(jnp.array([0.5, 1.0]))
  assert int(quant.pack_nibbles(codes)[0]) == 0x21
  f4 = jnp.array([[0.5, 1.0], [-6.0, 3.0]], jnp.float4_e2m1fn)
  want = jax.lax.bitcast_convert_type(f4, jnp.uint8)
  got = quant.pack_nibbles(quant.e2m1_encode_rne(f4.astype(jnp.float32)))
  np.testing.assert_array_equal(got[:, 0], want)
  u8 = jnp.arange(256, dtype=jnp.uint8)
  np.testing.assert_array_equal(
    quant.pack_nibbles(quant.unpack_nibbles(u8)), u8
  )
  back = jax.lax.bitcast_convert_type(u8, jnp.float4_e2m1fn)  # [256, 2]
  np.testing.assert_array_equal(
    quant.e2m1_decode(quant.unpack_nibbles(u8)).reshape(256, 2),
    back.astype(jnp.float32),
  )
  m = jax.random.bernoulli(jax.random.key(1), 0.5, (4, 64))
  bits = reference.pack_mask_bits(m)
  assert bits.shape == (4, 8)
  np.testing.assert_array_equal(reference.unpack_mask_bits(bits), m)
  assert int(reference.pack_mask_bits(jnp.arange(8) == 3)[0]) == 8


def test_ocp_absmax_and_quest_on_the_worked_block():
  v = (0.1 * jnp.arange(1, 33, dtype=jnp.float32))[None]
  t = jax.jit(quant.quantize_ocp)(v)
  assert float(reference.scale_value(t.scale)[0, 0]) == 0.5  # amax 3.2
  codes = quant.e2m1_decode(quant.unpack_nibbles(t.codes))[0]
  np.testing.assert_array_equal(codes[:8], [0, 0.5, 0.5, 1, 1, 1, 1.5, 1.5])
  np.testing.assert_array_equal(quant.dequantize(t)[0, -4:], [3.0] * 4)
  qt, mask = jax.jit(lambda v: reference.quantize_quest(v, hadamard=False))(v)
  sigma = np.std(0.1 * np.arange(1, 33))
  np.testing.assert_allclose(sigma, 0.9233, atol=1e-4)
  assert float(reference.scale_value(qt.scale)[0, 0]) == 0.25
  # |v / 0.25| = 0.4 i < 6  <=>  i < 15.
  np.testing.assert_array_equal(mask[0, :14], True)
  np.testing.assert_array_equal(mask[0, 15:], False)


def test_scale_swizzle_layout():
  s = jnp.arange(512).reshape(128, 4)
  np.testing.assert_array_equal(
    quant.to_blocked(s)[:16],
    [0, 1, 2, 3, 128, 129, 130, 131, 256, 257, 258, 259, 384, 385, 386, 387],
  )
  # Padding: 130 x 5 scales -> two 128-row tiles x two 4-column tiles.
  assert quant.to_blocked(jnp.ones((130, 5))).shape == (4 * 512,)


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: reference.pack_nibbles(jnp.zeros((2, 5), jnp.uint8)), "even"),
    (lambda: reference.pack_mask_bits(jnp.zeros((3, 12), bool)), "of 8"),
    (lambda: reference.to_blocked(jnp.zeros((2, 3, 4))), "2-D"),
    (lambda: reference.to_blocked(jnp.zeros(5)), "2-D"),
    (lambda: reference.from_blocked(jnp.zeros(100), 130, 5), "2048 entries"),
  ],
  ids=["odd_nibbles", "mask_bits", "to_blocked_3d", "to_blocked_1d", "flat"],
)
def test_packing_and_swizzle_name_the_shape_they_need(call, match):
  # Each was a raw reshape or unpacking error deep inside.
  with pytest.raises(MxInputError, match=match):
    call()
  # The blocked layout of a [130, 5] scale: 2 x 2 tiles of 128 x 4 = 2048.
  s = jnp.arange(650.0).reshape(130, 5)
  np.testing.assert_array_equal(
    reference.from_blocked(reference.to_blocked(s), 130, 5), s
  )


def test_nvfp4_round_trip_and_error():
  grid = jnp.array([0, 0.5, 1, 1.5, 2, 3, 4, 6] * 2, jnp.float32)
  x = jnp.stack([grid * 2.0**3, -grid * 0.25])
  round_trip = jax.jit(
    lambda x, s: quant.dequantize_nvfp4(quant.quantize_nvfp4(x, s))
  )
  np.testing.assert_array_equal(round_trip(x, 1.0), x)
  g = jax.random.normal(jax.random.key(0), (256, 256))
  q = jax.jit(lambda g: quant.dequantize_nvfp4(quant.quantize_nvfp4(g)))(g)
  err = float(jnp.mean((q - g) ** 2) / jnp.mean(g * g))
  # 16-element E4M3 blocks beat 32-element power-of-two MXFP4 (0.0132).
  assert 0.005 < err < 0.0132
  with pytest.raises(ValueError, match="16"):
    quant.quantize_nvfp4(jnp.ones((2, 24)))


def test_non_multiple_of_32_is_rejected():
  with pytest.raises(ValueError, match="multiple of 32"):
    reference.quantize_quest(jnp.ones((4, 48)))
  with pytest.raises(ValueError, match="multiple of 32"):
    reference.quantize_absmax(jnp.ones((4, 40)), seed=jnp.uint32(0))


def test_non_finite_group_gets_nan_scale_only_there():
  x = jnp.ones((2, 64)).at[0, 3].set(jnp.inf).at[1, 40].set(jnp.nan)
  quest = jax.jit(lambda x: reference.quantize_quest(x)[0])
  absmax = jax.jit(lambda x: reference.quantize_absmax(x, seed=jnp.uint32(1)))
  for t in (quest(x), absmax(x)):
    np.testing.assert_array_equal(
      t.scale == 255, [[True, False], [False, True]]
    )
    d = jax.jit(reference.dequantize)(t)
    assert np.all(np.isnan(d[0, :32])) and np.all(np.isfinite(d[0, 32:]))
    assert np.all(np.isnan(d[1, 32:])) and np.all(np.isfinite(d[1, :32]))
