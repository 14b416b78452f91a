"""quartet_linear(fmt="nvfp4"): the NVFP4 quantizers and the three GEMMs.

Oracles: E[SR quantize] = x (Monte Carlo, error of the mean ~ error / n);
the exact fp64 product; the bf16-backward gradient as the expectation of
the SR backward; the FFI GEMM against the jnp reference.
"""

import functools
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import quant
from lib.core import errors
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.ffi import build

T, K, N = 128, 512, 128


@functools.cache
def _data():
  k = jax.random.split(jax.random.key(0), 3)
  return tuple(
    jax.random.normal(kk, s) for kk, s in zip(k, ((T, K), (N, K), (T, N)))
  )


def _rel(a, b):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  return float(np.sum((a - b) ** 2) / np.sum(b**2))


@functools.partial(
  jax.jit, static_argnames=("forward", "backward", "fmt", "implementation")
)
def _value_and_grads(
  x, w, e, key, forward=None, backward="sr", fmt="nvfp4", implementation=None
):
  def f(x, w):
    return quant.quartet_linear(
      x,
      w,
      key,
      forward=forward,
      backward=backward,
      fmt=fmt,
      implementation=implementation,
    )

  y, vjp = jax.vjp(f, x, w)
  return (y, *vjp(e))


def test_stochastic_nvfp4_is_unbiased_and_never_saturates():
  x = jax.random.normal(jax.random.key(1), (32, 256)) * 3.0
  seeds = jnp.arange(256, dtype=jnp.uint32)
  q = jax.vmap(lambda s: quant.quantize_nvfp4(x, stochastic=True, seed=s))(
    seeds
  )
  deq = jax.vmap(reference.dequantize_nvfp4)(q)
  one = _rel(deq[0], x)
  assert _rel(deq.mean(0), x) < 2.0 * one / 256
  # Block scales rounded up: every block's amax fits 6 * s_b * s_g.
  t = jax.tree.map(lambda v: v[0], q)
  cap = 6.0 * np.asarray(t.scale, np.float32) * float(t.global_scale)
  amax = np.abs(np.asarray(x)).reshape(32, -1, 16).max(-1)
  assert np.all(amax <= cap * (1 + 1e-6))
  with pytest.raises(ValueError, match="seed"):
    quant.quantize_nvfp4(x, stochastic=True)


def test_nvfp4_forward_beats_mxfp4_quest_on_gaussian_data():
  x, w, e = _data()
  exact = np.asarray(x, np.float64) @ np.asarray(w, np.float64).T
  key = jax.random.key(0)
  y_nv = _value_and_grads(x, w, e, key)[0]
  y_mx = _value_and_grads(x, w, e, key, forward="quest", fmt="mxfp4")[0]
  # 16-element E4M3-scaled blocks quantize finer than 32-element E8M0 ones.
  assert _rel(y_nv, exact) < _rel(y_mx, exact) < 0.07
  assert _rel(y_nv, exact) < 0.03


def test_nvfp4_stochastic_backward_is_unbiased():
  x, w, e = _data()
  _, dx_exact, dw_exact = _value_and_grads(
    x, w, e, jax.random.key(0), backward="bf16"
  )
  keys = jax.random.split(jax.random.key(2), 16)
  _, dxs, dws = jax.lax.map(
    lambda k: _value_and_grads(x, w, e, k, backward="sr"), keys
  )
  one_x, one_w = _rel(dxs[0], dx_exact), _rel(dws[0], dw_exact)
  assert 0 < one_x < 0.1 and 0 < one_w < 0.1
  np.testing.assert_allclose(_rel(dxs.mean(0), dx_exact), one_x / 16, rtol=0.3)
  np.testing.assert_allclose(_rel(dws.mean(0), dw_exact), one_w / 16, rtol=0.3)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found")
def test_ffi_gemms_equal_the_reference_in_training():
  build.build_cpu()
  x, w, e = (v[:64, :256] for v in _data())
  w = w[:64]
  e = e[:64, :64]
  key = jax.random.key(5)
  got = _value_and_grads(x, w, e, key, implementation="ffi")
  want = _value_and_grads(x, w, e, key, implementation="xla")
  for g, r in zip(got, want):
    np.testing.assert_allclose(
      g, r, rtol=1e-4, atol=1e-4 * float(jnp.abs(r).max())
    )


def test_quartet_dense_trains_in_nvfp4():
  k = jax.random.split(jax.random.key(3), 3)
  x = jax.random.normal(k[0], (256, 64))
  target = x @ jax.random.normal(k[1], (64, 32)) / 8.0
  layer = quant.QuartetDense(32, fmt="nvfp4")
  params = layer.init({"params": k[2]}, x)
  opt = optax.adam(1e-2)
  state = opt.init(params)

  def loss(p, key):
    y = layer.apply(p, x, rngs={"quant": key})
    return jnp.mean((y - target) ** 2)

  @jax.jit
  def step(p, s, key):
    value, g = jax.value_and_grad(loss)(p, key)
    u, s = opt.update(g, s)
    return optax.apply_updates(p, u), s, value

  first = None
  for i in range(150):
    params, state, value = step(params, state, jax.random.key(i))
    first = value if first is None else first
  assert np.isfinite(value) and value < 0.05 * first


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(fmt="nvfp4", forward="quest"), "not one of \\('rtn', 'bf16'\\)"),
    (dict(fmt="fp8"), "fmt='fp8' is not one of"),
  ],
)
def test_bad_format_arguments_are_one_line(kwargs, match):
  x, w, _ = _data()
  with pytest.raises(errors.ConfigError, match=match):
    quant.quartet_linear(x, w, jax.random.key(0), **kwargs)
