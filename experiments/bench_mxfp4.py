"""Quartet MXFP4 benchmark: ratios measured side by side in one run.

* linear: Quartet linear (QuEST fwd, SR bwd, all GEMMs MXFP4) fwd+bwd time over
  a dense fp32/bf16 linear's (on a CPU or Hopper there is no FP4 MMA, so this
  is the emulation overhead, > 1; the paper's speedups need Blackwell), per
  implementation in `config.linear_implementations`.
* quantize: fused rotate + quantize throughput in GB/s of input read, and its
  traffic (bytes read + written) as a fraction of a copy's bandwidth (`x + 1`,
  read + write) measured in the same run, per implementation.
* gemm: MXFP4 GEMM over packed operands (XLA dequant+dot, the Pallas
  dequant-GEMM, the FFI where listed) time over a bf16 `jnp.dot` of the same
  shape; and quantize both operands + GEMM (`*_quantize_gemm_over_bf16`) from
  the same unquantized inputs the dot reads.
* errors: relative squared errors of the Quartet linear layer against the
  exact fp64 product on Gaussian data (the authors' notebook asserts y ~ 5.7e-2
  and dX/dW ~ 1.2e-1 with an RTN backward), with a speed number alongside.

An implementation that fails (no Triton, FFI library not built) leaves an
`*_error` entry with the one-line reason instead of its timing.

Run: python -m experiments.bench_mxfp4 --config configs/bench_mxfp4.py:quick \
  --workdir runs/bench_mxfp4
"""

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import quant
from lib import train as train_lib
from lib.core import rng
from lib.core import timing
from pallas_kernels.mxfp4 import ops


def _linear_fwd_bwd(linear_fn):
  def f(x, w, e, key):
    y, vjp = jax.vjp(lambda x, w: linear_fn(x, w, key), x, w)
    return y, *vjp(e)

  return jax.jit(f)


def _error(e: Exception) -> str:
  return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def bench_linear(config, dtype) -> dict:
  """Rows "T{t}_K{k}_N{n}" (implementation "": the default dispatch) or
  "T{t}_K{k}_N{n}_{implementation}"."""
  out = {}
  for t, k, n in config.linear_shapes:
    keys = jax.random.split(rng.root_key(config.seed), 4)
    x = jax.random.normal(keys[0], (t, k), dtype)
    w = jax.random.normal(keys[1], (n, k), dtype)
    e = jax.random.normal(keys[2], (t, n), dtype)
    dense = _linear_fwd_bwd(lambda x, w, key: x @ w.T)
    for impl in config.linear_implementations:
      name = f"T{t}_K{k}_N{n}" + (f"_{impl}" if impl else "")
      quartet = _linear_fwd_bwd(
        lambda x, w, key, impl=impl: quant.quartet_linear(
          x, w, key, implementation=impl or None
        )
      )
      try:
        # Each round times both, back to back (dense first), until
        # config.repeats rounds and config.min_seconds have passed.
        rounds = timing.interleaved(
          {
            "dense": (dense, (x, w, e, keys[3])),
            "quartet": (quartet, (x, w, e, keys[3])),
          },
          repeats=config.repeats,
          min_seconds=config.min_seconds,
        )
        td, tq = (float(np.median(rounds[k])) for k in ("dense", "quartet"))
        ratios = rounds["quartet"] / rounds["dense"]
      except Exception as err:  # noqa: BLE001 (report, do not die)
        out[name] = {"error": _error(err)}
        logging.warning("linear %s: %s", name, out[name]["error"])
        continue
      q25, q50, q75 = np.percentile(ratios, [25, 50, 75])
      out[name] = {
        "implementation": impl or "default",
        "dense_ms": 1e3 * td,
        "quartet_ms": 1e3 * tq,
        # The median of the rounds' ratios (each round times both, back to
        # back) and its interquartile range: steadier under load than a
        # ratio of two medians.
        "quartet_over_dense": float(q50),
        "ratio_iqr": [float(q25), float(q75)],
        "rounds": len(ratios),
      }
      logging.info("linear %s: %s", name, out[name])
  return out


def _nbytes(tree) -> int:
  return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree))


def bench_quantize(config) -> dict:
  """Input GB/s of each quantizer, and its traffic (bytes read + written)
  over the bandwidth of a copy of the same array (`x + 1`: read + write)."""
  x = jax.random.normal(rng.root_key(config.seed), config.quantize_shape)
  gb = x.size * 4 / 1e9
  copy = jax.jit(lambda x: x + 1.0)
  out = {
    "copy_gbps": 2 * gb / timing.median_seconds(copy, x, repeats=config.repeats)
  }
  signs = quant.random_signs(rng.stream(rng.root_key(config.seed), "signs"))
  for impl in config.quantize_implementations:
    prefix = f"{impl}_" if impl else ""
    fns = {
      "quest": jax.jit(
        lambda x, i=impl: ops.quantize_quest(x, implementation=i or None)
      ),
      "absmax_sr": jax.jit(
        lambda x, i=impl: ops.quantize_absmax(
          x, signs=signs, seed=jnp.uint32(1), implementation=i or None
        )
      ),
    }
    for method, fn in fns.items():
      try:
        seconds = timing.median_seconds(fn, x, repeats=config.repeats)
      except Exception as err:  # noqa: BLE001 (report, do not die)
        out[f"{prefix}{method}_error"] = _error(err)
        logging.warning("quantize %s%s: %s", prefix, method, _error(err))
        continue
      traffic = (x.nbytes + _nbytes(jax.eval_shape(fn, x))) / 1e9 / seconds
      out[f"{prefix}{method}_gbps"] = gb / seconds
      out[f"{prefix}{method}_traffic_gbps"] = traffic
      out[f"{prefix}{method}_fraction_of_copy"] = traffic / out["copy_gbps"]
  logging.info("quantize: %s", out)
  return out


def _quantize_gemm(a, b, implementation):
  """QuEST-quantize both operands, then the MXFP4 GEMM: what a forward pays."""
  qa, _ = ops.quantize_quest(a, implementation=implementation)
  qb, _ = ops.quantize_quest(b, implementation=implementation)
  return ops.mx_matmul(qa, qb, implementation=implementation)


def bench_gemm(config, dtype) -> dict:
  out = {}
  for m, k, n in config.gemm_shapes:
    ka, kb = jax.random.split(rng.root_key(config.seed))
    a32, b32 = jax.random.normal(ka, (m, k)), jax.random.normal(kb, (n, k))
    a, _ = ops.quantize_quest(a32)
    b, _ = ops.quantize_quest(b32)
    a16, b16 = a32.astype(jnp.bfloat16), b32.astype(jnp.bfloat16)
    ain, bin_ = a32.astype(dtype), b32.astype(dtype)
    bf16 = jax.jit(
      lambda a, b: jnp.dot(a, b.T, preferred_element_type=jnp.float32)
    )
    t_ref = timing.median_seconds(bf16, a16, b16, repeats=config.repeats)
    row = {"bf16_ms": 1e3 * t_ref, "tflops_bf16": 2 * m * n * k / t_ref / 1e12}
    for impl in config.gemm_implementations:
      cases = {
        "": (
          jax.jit(
            lambda a, b, impl=impl: ops.mx_matmul(a, b, implementation=impl)
          ),
          (a, b),
        ),
        "_quantize_gemm": (
          jax.jit(lambda a, b, impl=impl: _quantize_gemm(a, b, impl)),
          (ain, bin_),
        ),
      }
      for suffix, (fn, args) in cases.items():
        try:
          t = timing.median_seconds(fn, *args, repeats=config.repeats)
        except Exception as e:  # noqa: BLE001 (report, do not die)
          row[f"{impl}{suffix}_error"] = _error(e)
          continue
        row[f"{impl}{suffix}_ms"] = 1e3 * t
        row[f"{impl}{suffix}_over_bf16"] = t / t_ref
    out[f"M{m}_K{k}_N{n}"] = row
    logging.info("gemm %s: %s", (m, k, n), row)
  return out


def linear_errors(config) -> dict:
  """Relative squared errors of y, dX, dW vs fp64 (x, W, e ~ N(0, 1))."""
  t, k, n = config.error_shape
  keys = jax.random.split(rng.root_key(config.seed), 4)
  x = jax.random.normal(keys[0], (t, k))
  w = jax.random.normal(keys[1], (n, k))
  e = jax.random.normal(keys[2], (t, n))
  x64, w64, e64 = (np.asarray(a, np.float64) for a in (x, w, e))
  exact = (x64 @ w64.T, e64 @ w64, e64.T @ x64)

  def rel(a, b):
    return float(np.sum((np.asarray(a, np.float64) - b) ** 2) / np.sum(b**2))

  out = {}
  for backward in ("rtn", "sr"):
    fn = _linear_fwd_bwd(
      lambda x, w, key, b=backward: quant.quartet_linear(x, w, key, backward=b)
    )
    y, dx, dw = fn(x, w, e, keys[3])
    out["y"] = rel(y, exact[0])
    out[f"dx_{backward}"] = rel(dx, exact[1])
    out[f"dw_{backward}"] = rel(dw, exact[2])
  return out


def check_config(config) -> None:
  """Fails at once, naming the key, on a value the benchmark cannot run.

  MXFP4 groups 32 elements along every contraction axis: K of each GEMM, and
  N of the Quartet linear (its backward contracts over N).
  """
  known = tuple(i for i in ops.IMPLEMENTATIONS if i)
  _checks.names(
    config.gemm_implementations, known, "config.gemm_implementations"
  )
  for key in ("linear_implementations", "quantize_implementations"):
    _checks.names(config[key], ("", *known), f"config.{key}")
  for key in ("linear_shapes", "gemm_shapes"):
    for shape in config[key]:
      _checks.integers(shape, f"config.{key}", length=3)
      _check_groups(shape, key, (1, 2) if key == "linear_shapes" else (1,))
  _checks.integers(config.error_shape, "config.error_shape", length=3)
  _check_groups(config.error_shape, "error_shape", (1, 2))
  _checks.integers(config.quantize_shape, "config.quantize_shape", length=2)
  _check_groups(config.quantize_shape, "quantize_shape", (1,))
  _checks.integer(config.repeats, "config.repeats")
  _checks.number(config.min_seconds, "config.min_seconds", at_least=0.0)


def _check_groups(shape, key, axes) -> None:
  """Entries `axes` of `shape` must be multiples of the MXFP4 group (32)."""
  for axis in axes:
    _checks.multiple_of(
      shape[axis], 32, f"config.{key} {tuple(shape)}: entry {axis}"
    )


def run(config, workdir) -> dict:
  """Runs the three benchmarks; writes results.json; returns it."""
  check_config(config)
  train_lib.prepare_run(workdir, config)
  backend = jax.default_backend()
  dtype = jnp.bfloat16 if backend == "gpu" else jnp.float32
  linear = bench_linear(config, dtype)
  results = {
    "backend": backend,
    "device": str(jax.devices()[0].device_kind),
    "jax_version": jax.__version__,
    "linear": linear,
    "quantize": bench_quantize(config),
    "gemm": bench_gemm(config, dtype),
    "errors": linear_errors(config),
    "linear_ratio_max": max(
      (v["quartet_over_dense"] for v in linear.values() if "error" not in v),
      default=float("nan"),
    ),
  }
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
