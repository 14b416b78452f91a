"""MXFP4 FFI bridge: correctness and speed of the GEMM and fused quantizer.

For each (M, N, K): x, W ~ N(0, 1) are QuEST-quantized by the jnp reference;
the FFI GEMM (`pallas_kernels.mxfp4.ffi.gemm`) is compared with the exact
fp32 product of the dequantized operands (`jnp.dot`, HIGHEST), and timed
against a plain BF16 `jnp.dot` of the unquantized x, W (the XLA baseline a
user would otherwise run). On Hopper the FFI GEMM is the dequantise + BF16
cuBLASLt fallback, so a ratio below 1 is expected; on B200 (10.x) it is
CUTLASS's block-scaled MXFP4 tensor-core GEMM. The fused quantizer is checked code for code
against the reference (RTN paths bit-exact without rotation), and
`quartet_linear(..., implementation="ffi")` against "xla" (values and grads).

The same for NVFP4 (`ffi.nvfp4_gemm`: cuBLASLt's VEC16_UE4M3 FP4 GEMM on
Blackwell, the documented FP4 path; dequantise + BF16 on Hopper).

Writes results.json: per shape and format max relative error, times (ms),
`speedup_vs_bf16_dot` = t(jnp.dot bf16) / t(ffi gemm) and the path the
shape took ("1_sm100": block-scaled FP4, "2_sm90": dequantise + BF16).

Run: python -m experiments.bench_mxfp4_ffi --config configs/bench_mxfp4_ffi.py --workdir runs/bench_mxfp4_ffi

References: Castro et al., "Quartet: Native FP4 Training Can Be Optimal for
Large Language Models", NeurIPS 2025.
"""

import functools

import jax
import jax.numpy as jnp
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import train as train_lib
from lib.core import rng
from lib.core import timing
from lib.core.errors import ConfigError
from lib.quant import quartet_linear
from pallas_kernels.mxfp4 import ffi
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.ffi import _loader


def _path() -> str:
  """The GEMM the FFI call actually ran (after at least one call)."""
  dev = jax.devices()[0]
  if dev.platform == "cpu":
    return "cpu"
  cc = getattr(dev, "compute_capability", "?")
  return f"{_loader.last_cuda_gemm_path()}_sm{cc}"


def _gemm_case(
  key, m, n, k, out_dtype, warmup, iters, quantize, ffi_gemm, dequantize
) -> dict:
  """One FFI GEMM against the exact product of its dequantized operands and
  timed against BF16 `jnp.dot` of the unquantized x, W (and the dequantized
  fp32 dot); `path` is the GEMM the FFI call took."""
  kx, kw = jax.random.split(key)
  x = jax.random.normal(kx, (m, k), jnp.float32)
  w = jax.random.normal(kw, (n, k), jnp.float32)
  quant = jax.jit(quantize)
  a, b = quant(x), quant(w)
  ffi_gemm = jax.jit(functools.partial(ffi_gemm, out_dtype=out_dtype))
  exact = jax.jit(
    lambda a, b: jnp.dot(
      dequantize(a), dequantize(b).T, precision=jax.lax.Precision.HIGHEST
    )
  )
  bf16_dot = jax.jit(
    lambda x, w: jnp.dot(
      x.astype(jnp.bfloat16),
      w.astype(jnp.bfloat16).T,
      preferred_element_type=out_dtype,
    )
  )
  y = ffi_gemm(a, b).astype(jnp.float32)
  path = _path()
  want = exact(a, b)
  rel = float(jnp.max(jnp.abs(y - want)) / jnp.max(jnp.abs(want)))
  t_ffi = 1e3 * timing.median_seconds(
    ffi_gemm, a, b, repeats=iters, warmup=warmup
  )
  t_dot = 1e3 * timing.median_seconds(
    bf16_dot, x, w, repeats=iters, warmup=warmup
  )
  t_exact = 1e3 * timing.median_seconds(
    exact, a, b, repeats=iters, warmup=warmup
  )
  return dict(
    max_rel_err=rel,
    path=path,
    ms_ffi=t_ffi,
    ms_bf16_dot=t_dot,
    ms_dequant_f32_dot=t_exact,
    tflops_ffi=2.0 * m * n * k / t_ffi / 1e9,
    speedup_vs_bf16_dot=t_dot / t_ffi,
    speedup_vs_dequant_dot=t_exact / t_ffi,
  )


def _mxfp4_gemm(a, b, out_dtype):
  return ffi.gemm(a.codes, a.scale, b.codes, b.scale, out_dtype=out_dtype)


# format -> (quantize, FFI GEMM, dequantize): MXFP4 (QuEST, Quartet's forward)
# and NVFP4 (two-level RTN; cuBLASLt's documented FP4 path on Blackwell).
FORMATS = {
  "gemm": (
    lambda v: reference.quantize_quest(v)[0],
    _mxfp4_gemm,
    reference.dequantize,
  ),
  "nvfp4_gemm": (
    reference.quantize_nvfp4,
    ffi.nvfp4_gemm,
    reference.dequantize_nvfp4,
  ),
}


def _quantize_case(key, rows, warmup, iters) -> dict:
  x = jax.random.normal(key, (rows, 4096), jnp.float32)
  seed = jnp.uint32(17)
  out = {}
  for method, rotate in (
    ("quest", True),
    ("quest", False),
    ("absmax_sr", True),
    ("absmax_sr", False),
  ):
    fq = jax.jit(
      lambda v, m=method, r=rotate: ffi.quantize(
        v, method=m, rotate=r, seed=seed
      )
    )
    if method == "quest":
      rq = jax.jit(
        lambda v, r=rotate: reference.quantize_quest(v, hadamard=r)[0]
      )
    else:
      rq = jax.jit(
        lambda v, r=rotate: reference.quantize_absmax(v, hadamard=r, seed=seed)
      )
    codes, scale, _ = fq(x)
    t = rq(x)
    name = f"{method}_{'rot' if rotate else 'norot'}"
    out[name] = dict(
      codes_equal=float(jnp.mean(codes == t.codes)),
      scales_equal=float(jnp.mean(scale == t.scale)),
      ms_ffi=1e3 * timing.median_seconds(fq, x, repeats=iters, warmup=warmup),
      ms_xla_reference=1e3
      * timing.median_seconds(rq, x, repeats=iters, warmup=warmup),
    )
  return out


def _quartet_linear_case(key, t, n, k) -> dict:
  """quartet_linear with implementation="ffi" vs "xla": values and grads."""
  kx, kw, ke, kk = jax.random.split(key, 4)
  x = jax.random.normal(kx, (t, k), jnp.float32)
  w = jax.random.normal(kw, (n, k), jnp.float32)
  e = jax.random.normal(ke, (t, n), jnp.float32)

  def vjp(impl):
    def f(x, w):
      return quartet_linear(x, w, kk, implementation=impl)

    y, back = jax.vjp(f, x, w)
    return (y, *back(e))

  outs = {i: jax.jit(lambda x, w, i=i: vjp(i))(x, w) for i in ("xla", "ffi")}
  rel = [
    float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
    for a, b in zip(outs["ffi"], outs["xla"])
  ]
  return dict(
    y_max_rel_diff=rel[0], dx_max_rel_diff=rel[1], dw_max_rel_diff=rel[2]
  )


def check_config(config) -> None:
  """Fails at once, naming the key, on a value the benchmark cannot run.

  MXFP4 groups 32 elements along K (and along N of the Quartet linear, whose
  backward contracts over N).
  """
  _checks.one_of(config.out_dtype, ("float32", "bfloat16"), "config.out_dtype")
  for shape in config.shapes:
    _checks.integers(shape, "config.shapes", length=3)
    _checks.multiple_of(shape[2], 32, f"config.shapes {tuple(shape)}: K")
  _checks.integers(config.linear_shape, "config.linear_shape", length=3)
  t, n, k = config.linear_shape
  _checks.multiple_of(n, 32, "config.linear_shape: N")
  _checks.multiple_of(k, 32, "config.linear_shape: K")
  _checks.integer(config.warmup, "config.warmup", minimum=0)
  _checks.integer(config.iters, "config.iters")
  _checks.integer(config.quantize_rows, "config.quantize_rows")


def run(config, workdir) -> dict:
  check_config(config)
  platform = "cpu" if jax.default_backend() == "cpu" else "CUDA"
  if not ffi.is_built(platform):
    flag = " --cuda" if platform == "CUDA" else ""
    raise ConfigError(
      f"the MXFP4 FFI library for {platform} is not built; run "
      f"`{ffi.BUILD_COMMAND}{flag}` first"
    )
  out_dtype = jnp.dtype(config.out_dtype)
  train_lib.prepare_run(workdir, config)
  root = rng.root_key(config.seed)
  results = dict(device=str(jax.devices()[0].device_kind))
  for name, fns in FORMATS.items():
    cases = {}
    for m, n, k in config.shapes:
      case = _gemm_case(
        rng.stream(root, f"{name}/{m}x{n}x{k}"),
        m,
        n,
        k,
        out_dtype,
        config.warmup,
        config.iters,
        *fns,
      )
      logging.info("%s %dx%dx%d: %s", name, m, n, k, case)
      cases[f"{m}x{n}x{k}"] = case
    results[name] = cases
  results["path"] = results["gemm"][next(iter(results["gemm"]))]["path"]
  results["quantize"] = _quantize_case(
    rng.stream(root, "quantize"),
    config.quantize_rows,
    config.warmup,
    config.iters,
  )
  logging.info("quantize: %s", results["quantize"])
  t, n, k = config.linear_shape
  results["quartet_linear"] = _quartet_linear_case(
    rng.stream(root, "quartet_linear"), t, n, k
  )
  logging.info("quartet_linear ffi vs xla: %s", results["quartet_linear"])
  return train_lib.write_results(workdir, results)


if __name__ == "__main__":
  _cli.main(run, check=check_config)
