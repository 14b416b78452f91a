"""MXFP4 FFI bridge: CPU handlers vs the jnp reference; CUDA compile check.

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

import os
import shutil
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pallas_kernels.mxfp4 import ffi
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.ffi import _loader
from pallas_kernels.mxfp4.ffi import build
from tests import helpers

E2M1 = np.array(
  [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float64
)


@pytest.fixture(scope="module", autouse=True)
def cpu_library():
  if shutil.which("g++") is None:
    pytest.skip("g++ not found")
  # The documented build; a no-op when CI already ran it.
  return build.build_cpu()


def _data(shape, seed=0):
  rng = np.random.default_rng(seed)
  # Per-row magnitudes over 3 decades so many scale exponents occur.
  scale = 10.0 ** rng.uniform(-2, 1, shape[:-1] + (1,))
  return jnp.asarray((rng.standard_normal(shape) * scale).astype(np.float32))


def _np_dequant(codes, scale):
  """Exact float64 dequantization, independent of both implementations."""
  c = np.asarray(codes)
  un = np.stack([c & 15, c >> 4], -1).reshape(*c.shape[:-1], -1)
  s = 2.0 ** (np.asarray(scale).astype(np.float64) - 127)
  return E2M1[un] * np.repeat(s, 32, axis=-1)


def test_cpu_library_exports_handlers(cpu_library):
  nm = shutil.which("nm")
  if nm is None:
    pytest.skip("nm not found")
  out = subprocess.run(
    [nm, "-D", "--defined-only", str(cpu_library)],
    capture_output=True,
    text=True,
    check=True,
  ).stdout
  assert "QuartetMxfp4GemmCpu" in out
  assert "QuartetNvfp4GemmCpu" in out
  assert "QuartetMxfp4QuantizeCpu" in out


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
@pytest.mark.parametrize("out_dtype", [jnp.float32, jnp.bfloat16])
@pytest.mark.parametrize("alpha", [1.0, 1.0 / 9.0])
def test_gemm_matches_exact_product(out_dtype, alpha, platform):
  """The CPU handler; on a GPU (`gpu` case) the CUDA one (dequantise + BF16
  cuBLASLt on Hopper, CUTLASS FP4 on Blackwell), same bound."""
  helpers.ffi_library(platform)
  a, _ = reference.quantize_quest(_data((64, 256), 1))
  b, _ = reference.quantize_quest(_data((96, 256), 2))
  y = jax.jit(
    lambda a, b: ffi.gemm(
      a.codes, a.scale, b.codes, b.scale, alpha=alpha, out_dtype=out_dtype
    )
  )(*helpers.put((a, b), platform))
  assert y.shape == (64, 96) and y.dtype == out_dtype
  da, db = _np_dequant(a.codes, a.scale), _np_dequant(b.codes, b.scale)
  exact = alpha * (da @ db.T)
  # fp32 accumulation of K=256 exact products: error <= K eps sum|a||b|.
  bound = 256 * 2.0**-24 * alpha * (np.abs(da) @ np.abs(db).T)
  if out_dtype == jnp.bfloat16:
    bound = bound + 2.0**-8 * np.abs(exact)
  err = np.abs(np.asarray(y, np.float64) - exact)
  ratio = float(np.max(err / (bound + 1e-30)))
  path = helpers.cuda_gemm_path() if platform == "gpu" else "cpu"
  helpers.report(
    f"ffi_mxfp4_gemm_{jnp.dtype(out_dtype).name}_alpha{alpha:.3g}_{platform}",
    err_over_fp32_bound=ratio,
    path=path,
  )
  assert np.all(err <= bound + 1e-30), ratio


def test_gemm_matches_reference_mx_matmul():
  a = reference.quantize_absmax(_data((32, 128), 3), stochastic=False)
  b = reference.quantize_absmax(_data((64, 128), 4), stochastic=False)
  want = reference.mx_matmul(a, b)  # alpha 1/9 via alpha_inv = 3 each
  got = ffi.gemm(a.codes, a.scale, b.codes, b.scale, alpha=1.0 / 9.0)
  np.testing.assert_allclose(
    got, want, rtol=1e-5, atol=1e-6 * float(jnp.max(jnp.abs(want)))
  )


def test_gemm_batches_and_vmaps():
  a, _ = reference.quantize_quest(_data((3, 32, 64), 5))
  b, _ = reference.quantize_quest(_data((3, 64, 64), 6))
  per = [
    ffi.gemm(a.codes[i], a.scale[i], b.codes[i], b.scale[i]) for i in range(3)
  ]
  batched = ffi.gemm(a.codes, a.scale, b.codes, b.scale)
  vmapped = jax.vmap(ffi.gemm)(a.codes, a.scale, b.codes, b.scale)
  # vmap with an unbatched B broadcasts it to every example.
  shared = jax.vmap(ffi.gemm, in_axes=(0, 0, None, None))(
    a.codes, a.scale, b.codes[0], b.scale[0]
  )
  for i in range(3):
    np.testing.assert_array_equal(batched[i], per[i])
    np.testing.assert_array_equal(vmapped[i], per[i])
  np.testing.assert_array_equal(
    shared[1], ffi.gemm(a.codes[1], a.scale[1], b.codes[0], b.scale[0])
  )


def _reference_quantize(x, method, rotate, seed):
  if method == "quest":
    t, mask = reference.quantize_quest(x, hadamard=rotate)
    return t.codes, t.scale, mask
  t = reference.quantize_absmax(
    x, hadamard=rotate, stochastic=method == "absmax_sr", seed=seed
  )
  return t.codes, t.scale, None


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])
@pytest.mark.parametrize("method", ["quest", "absmax", "absmax_sr"])
def test_quantize_bit_exact_without_rotation(method, dtype, platform):
  helpers.ffi_library(platform)
  x = _data((96, 256), 7).astype(dtype)
  # Special cases too: a zero group, an absmax tie (amax 4 -> 3 * 1 / 4 =
  # 0.75, halfway between codes 1 and 2), a NaN group.
  tie = jnp.zeros(32).at[:4].set(jnp.asarray([4.0, 1.0, -1.0, 0.5]))
  x = x.at[0, :32].set(0.0).at[1, :32].set(tie.astype(dtype))
  x = x.at[2, 32:64].set(jnp.nan)
  seed = jnp.uint32(12345)
  codes, scale, mask = jax.jit(
    lambda x: ffi.quantize(x, method=method, rotate=False, seed=seed)
  )(helpers.put(x, platform))
  with helpers.on("cpu"):
    want_c, want_s, want_m = _reference_quantize(
      helpers.put(x, "cpu"), method, False, seed
    )
  helpers.report(
    f"ffi_quantize_{method}_{jnp.dtype(dtype).name}_norot_{platform}",
    codes_equal=np.mean(np.asarray(codes) == np.asarray(want_c)),
    scales_equal=np.mean(np.asarray(scale) == np.asarray(want_s)),
  )
  np.testing.assert_array_equal(scale, want_s)
  np.testing.assert_array_equal(codes, want_c)
  if want_m is not None:
    np.testing.assert_array_equal(mask, want_m)
  assert int(scale[2, 1]) == 255  # the NaN group is flagged as E8M0 NaN


@pytest.mark.parametrize("platform", helpers.PLATFORMS)
@pytest.mark.parametrize("method", ["quest", "absmax", "absmax_sr"])
def test_quantize_with_rotation_matches_reference(method, platform):
  # The kernel rotates by a fast Walsh-Hadamard transform, the reference by a
  # 32x32 matmul: the rotated fp32 values can differ in the last ulp, so a
  # code may move to its grid neighbour when a value sits on a boundary.
  helpers.ffi_library(platform)
  with helpers.on("cpu"):
    x = _data((128, 512), 8)
    signs = jnp.where(jnp.arange(32) % 3 == 0, -1.0, 1.0)
    seed = jnp.uint32(7)
    if method == "quest":
      t, _ = reference.quantize_quest(x)
    else:
      t = reference.quantize_absmax(
        x, signs=signs, seed=seed, stochastic=method == "absmax_sr"
      )
  with helpers.on(platform):
    codes, scale, _ = ffi.quantize(
      *helpers.put((x,), platform),
      method=method,
      signs=signs if method != "quest" else None,
      seed=seed,
    )
  helpers.report(
    f"ffi_quantize_{method}_rot_{platform}",
    codes_equal=np.mean(np.asarray(codes) == np.asarray(t.codes)),
    scales_equal=np.mean(np.asarray(scale) == np.asarray(t.scale)),
  )
  assert np.mean(np.asarray(scale) == np.asarray(t.scale)) >= 0.999
  assert np.mean(np.asarray(codes) == np.asarray(t.codes)) >= 0.999
  got = _np_dequant(codes, scale)
  want = _np_dequant(t.codes, t.scale)
  step = np.repeat(2.0 ** (np.asarray(t.scale, np.float64) - 127), 32, -1)
  assert np.all(np.abs(got - want) <= 2 * step)


def test_stochastic_rounding_unbiased_and_deterministic():
  x = _data((8, 256), 10)
  quant = jax.jit(lambda s: ffi.quantize(x, method="absmax_sr", seed=s))
  c1, s1, _ = quant(jnp.uint32(1))
  c1b, _, _ = quant(jnp.uint32(1))
  c2, _, _ = quant(jnp.uint32(2))
  np.testing.assert_array_equal(c1, c1b)
  assert np.mean(np.asarray(c1) != np.asarray(c2)) > 0.1
  # vmap over seeds exercises the batching rule (sequential over seeds).
  n = 512
  codes, scales, _ = jax.jit(
    jax.vmap(lambda s: ffi.quantize(x, method="absmax_sr", seed=s))
  )(jnp.arange(n, dtype=jnp.uint32))
  np.testing.assert_array_equal(codes[1], c1)
  deq = _np_dequant(codes, scales) / 3.0
  # The unbiased target: the rotated x itself (scale is data-only, so fixed).
  target = np.asarray(reference.rotate(x), np.float64)
  one = np.sum((deq[0] - target) ** 2) / np.sum(target**2)
  mean = np.sum((deq.mean(0) - target) ** 2) / np.sum(target**2)
  # Unbiased: the error of the mean of n draws falls like 1/n.
  assert mean < 3.0 * one / n, (one, mean)
  assert one > 1e-3  # SR really is noisy


def test_vmap_over_x_equals_per_example_reference():
  x = _data((4, 16, 64), 11)
  seed = jnp.uint32(3)
  codes, scale, _ = jax.vmap(
    lambda v: ffi.quantize(v, method="absmax_sr", rotate=False, seed=seed)
  )(x)
  for i in range(4):
    t = reference.quantize_absmax(x[i], hadamard=False, seed=seed)
    np.testing.assert_array_equal(codes[i], t.codes)
    np.testing.assert_array_equal(scale[i], t.scale)


def test_bad_input_raises():
  with pytest.raises(ValueError, match="multiple of 32"):
    ffi.quantize(jnp.zeros((4, 48)))
  with pytest.raises(ValueError, match="seed"):
    ffi.quantize(jnp.zeros((4, 64)), method="absmax_sr")
  with pytest.raises(ValueError, match="method"):
    ffi.quantize(jnp.zeros((4, 64)), method="nearest")
  u8 = jnp.zeros((4, 16), jnp.uint8)
  with pytest.raises(ValueError, match="inconsistent"):
    ffi.gemm(u8, jnp.zeros((4, 2), jnp.uint8), u8, jnp.zeros((4, 2), jnp.uint8))
  with pytest.raises(TypeError, match="uint8"):
    ffi.gemm(
      u8.astype(jnp.int8),
      jnp.zeros((4, 1), jnp.uint8),
      u8,
      jnp.zeros((4, 1), jnp.uint8),
    )


def test_handlers_check_shapes_themselves():
  # Past the Python checks: the shared C++ checks (ffi_shapes.h) that both the
  # CPU and CUDA handlers run must reject inconsistent operands by name.
  ffi.quantize(jnp.zeros((4, 64)))  # registers the targets
  u8, f32 = jnp.zeros((4, 16), jnp.uint8), jnp.ones((), jnp.float32)
  scales = lambda *shape: jnp.zeros(shape, jnp.uint8)
  cases = [
    # K = 32 needs one E8M0 scale per row; two given.
    (
      _loader.GEMM_TARGET,
      "quartet_mxfp4_gemm: inconsistent",
      (u8, scales(4, 2), u8, scales(4, 2)),
      {"alpha": np.float32(1)},
    ),
    (
      _loader.GEMM_TARGET,
      "quartet_mxfp4_gemm: operands must",
      (u8[None], scales(4, 1), u8, scales(4, 1)),
      {"alpha": np.float32(1)},
    ),
    # K = 32 is two NVFP4 groups; the blocked scales need 128 x 4 padding.
    (
      _loader.NVFP4_GEMM_TARGET,
      "quartet_nvfp4_gemm: inconsistent",
      (u8, scales(8), f32, u8, scales(8), f32),
      {},
    ),
  ]
  for target, message, args, attrs in cases:
    call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct((4, 4), jnp.float32))
    with pytest.raises(Exception, match=message):
      jax.block_until_ready(call(*args, **attrs))


def test_missing_library_says_how_to_build(monkeypatch, tmp_path):
  monkeypatch.setenv("QUARTET_MXFP4_FFI_DIR", str(tmp_path))
  monkeypatch.setattr(_loader, "_registered", set())
  assert not ffi.is_built("cpu")
  with pytest.raises(
    ffi.FfiLibraryNotBuiltError,
    match="python -m pallas_kernels.mxfp4.ffi.build",
  ):
    ffi.quantize(jnp.zeros((4, 64)))


def test_cuda_library_compiles_and_exports(tmp_path):
  import ctypes  # pylint: disable=g-import-not-at-top
  import time  # pylint: disable=g-import-not-at-top

  # In CI (CI=true) this compile must happen, with the real cublasLt.h (from
  # the nvidia-cublas wheel of requirements-dev.txt), so that the hand-written
  # cuBLASLt enums are static_assert-ed against it rather than skipped.
  in_ci = os.environ.get("CI", "").lower() in ("1", "true")
  if build.find_nvcc() is None:
    assert not in_ci, "CI needs nvcc for the CUDA compile test"
    pytest.skip("nvcc not found")
  if in_ci:
    assert build.find_cublas_include() is not None, "cublasLt.h not found"
    # ... and the Blackwell MXFP4 GEMM (CUTLASS, sm_100a) must compile too.
    assert build.find_cutlass_include() is not None, "CUTLASS not found"
  start = time.perf_counter()
  path = build.build_cuda(tmp_path, force=True)  # sm_90a, sm_100a, sm_120a
  print(f"nvcc build: {time.perf_counter() - start:.1f}s")
  if shutil.which("nm"):
    out = subprocess.run(
      ["nm", "-D", "--defined-only", str(path)],
      capture_output=True,
      text=True,
      check=True,
    ).stdout
    assert "QuartetMxfp4GemmCuda" in out
    assert "QuartetMxfp4QuantizeCuda" in out
    assert "QuartetNvfp4GemmCuda" in out
    if build.find_cutlass_include() is not None:  # linked in, not exported
      local = subprocess.run(
        ["nm", "-C", str(path)], capture_output=True, text=True, check=True
      ).stdout
      assert "QuartetCutlassMxfp4Gemm(" in local  # sm_100a
      assert "QuartetCutlassMxfp4GemmSm120(" in local  # sm_120a
  # Static cudart + dlopen'ed cuBLASLt: loads even without a GPU or cuBLAS.
  lib = ctypes.cdll.LoadLibrary(str(path))
  assert lib.QuartetMxfp4GemmCuda and lib.QuartetMxfp4QuantizeCuda
  assert lib.QuartetNvfp4GemmCuda


def test_selected_dispatch_rules():
  assert ffi.selected("ffi")  # the CPU library is built by the fixture
  assert not ffi.selected(None)  # on CPU, None keeps the XLA reference
  assert not ffi.selected("xla") and not ffi.selected("pallas")


def test_ops_dispatch_ffi_equals_reference():
  x = _data((64, 128), 12)
  t_ffi, m_ffi = ops.quantize_quest(x, implementation="ffi")
  t_ref, m_ref = ops.quantize_quest(x, implementation="xla")
  # Rotated: FWHT vs the reference's matmul may move a boundary code.
  assert np.mean(np.asarray(t_ffi.codes) == np.asarray(t_ref.codes)) > 0.999
  assert np.mean(np.asarray(t_ffi.scale) == np.asarray(t_ref.scale)) > 0.99
  assert np.mean(np.asarray(m_ffi) == np.asarray(m_ref)) > 0.999
  seed = jnp.uint32(4)
  q_ffi = ops.quantize_absmax(
    x, hadamard=False, seed=seed, implementation="ffi"
  )
  q_ref = ops.quantize_absmax(
    x, hadamard=False, seed=seed, implementation="xla"
  )
  np.testing.assert_array_equal(q_ffi.codes, q_ref.codes)
  assert q_ffi.alpha_inv == 3
  np.testing.assert_allclose(
    ops.mx_matmul(q_ffi, q_ffi, implementation="ffi"),
    ops.mx_matmul(q_ref, q_ref, implementation="xla"),
    rtol=1e-5,
    atol=1e-5,
  )


def test_quartet_linear_ffi_matches_xla_outputs_and_gradients():
  from lib.quant import quartet_linear  # pylint: disable=g-import-not-at-top

  x = _data((64, 256), 13)
  w = _data((96, 256), 14)
  key = jax.random.key(0)

  def loss(impl):
    def f(x, w):
      y = quartet_linear(x, w, key, implementation=impl)
      return jnp.sum(y * jnp.cos(y)), y

    return jax.jit(jax.value_and_grad(f, argnums=(0, 1), has_aux=True))

  (_, y_xla), g_xla = loss("xla")(x, w)
  (_, y_ffi), g_ffi = loss("ffi")(x, w)
  scale = float(jnp.max(jnp.abs(y_xla)))
  np.testing.assert_allclose(y_ffi, y_xla, rtol=1e-5, atol=1e-6 * scale)
  # Same codes everywhere (a flipped code would move a gradient entry by a
  # grid step, ~1e-2 relative); only fp32 summation order differs.
  for a, b in zip(g_ffi, g_xla):
    tol = 1e-5 * float(jnp.max(jnp.abs(b)))
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=tol)
