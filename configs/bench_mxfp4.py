r"""Quartet MXFP4 benchmark: linear fwd+bwd vs dense, quantizer GB/s, GEMM kernels.

Run (CPU, well under a minute):
  python -m experiments.bench_mxfp4 --config configs/bench_mxfp4.py:quick \
    --workdir runs/bench_mxfp4
On a GPU (the default variant, `gpu`; tests/gpu/run.sh runs it; build the
CUDA FFI library first for the "ffi" rows):
  python -m experiments.bench_mxfp4 --config configs/bench_mxfp4.py:gpu \
    --workdir runs/bench_mxfp4_gpu
Add ',smoke' for a seconds-long run (tests; `gpu,smoke` runs on CPU too).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="gpu", smoke=False)
  common.check_variant(arg.variant, ("gpu", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  # (T, K, N) of y[T, N] = x[T, K] W[N, K]^T. The GPU goal: Quartet fwd+bwd
  # with Pallas kernels <= 1.5x the bf16 dense layer at 8192^3.
  config.linear_shapes = ((4096, 4096, 4096), (8192, 8192, 8192))
  # quartet_linear implementations timed against dense ("" = None: the
  # default dispatch, FFI on a GPU when the CUDA library is built).
  config.linear_implementations = ("xla", "pallas", "ffi")
  # (M, K, N) GEMMs: packed operands, and quantize both + GEMM, vs bf16 dot.
  config.gemm_shapes = ((4096, 4096, 4096), (8192, 8192, 8192))
  config.gemm_implementations = ("xla", "pallas", "ffi")
  # Quantizer throughput against a copy's bandwidth measured in the run.
  config.quantize_shape = (8192, 8192)
  config.quantize_implementations = ("xla", "pallas", "ffi")
  config.error_shape = (128, 4096, 128)  # the authors' notebook shape
  # Timed rounds per linear shape: at least `repeats`, and more (up to 10 x)
  # until `min_seconds` have passed; the ratio is the rounds' median.
  config.repeats = 10
  config.min_seconds = 0.0
  config.seed = 0
  if arg.variant == "quick":
    config.linear_shapes = ((512, 512, 512), (1024, 1024, 1024), (2048,) * 3)
    config.linear_implementations = ("",)
    config.gemm_shapes = ((256, 256, 256),)
    config.quantize_shape = (2048, 2048)
    config.gemm_implementations = ("xla",)
    config.quantize_implementations = ("",)
    config.repeats = 5
    config.min_seconds = 4.0
  if arg.smoke:
    config.linear_shapes = ((64, 64, 64),)
    config.gemm_shapes = ((64, 64, 64),)
    config.quantize_shape = (64, 128)
    config.gemm_implementations = ("xla", "pallas")
    config.error_shape = (64, 64, 32)
    config.repeats = 1
    config.min_seconds = 0.0
    if arg.variant == "gpu":
      # Every section's implementations except Pallas in the linear and
      # quantizer rows (interpret mode: tens of seconds on a CPU; the GEMM
      # rows run Pallas, quantizer included), plus quick's "" (default
      # dispatch), so this one smoke run covers quick,smoke's paths too.
      config.linear_implementations = ("", "xla", "ffi")
      config.gemm_implementations = ("xla", "pallas", "ffi")
      config.quantize_implementations = ("", "xla", "ffi")
  return common.lock(config)
