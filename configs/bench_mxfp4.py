r"""Quartet MXFP4 benchmark: linear fwd+bwd vs dense, quantizer GB/s, GEMM kernels.

Run (CPU, well under a minute):
  python -m experiments.bench_mxfp4 --config configs/bench_mxfp4.py:quick \
    --workdir runs/bench_mxfp4
On a GPU (default variant; < 2 min on an H200; the Pallas GEMM runs through
the Triton backend there, which has not been tried yet):
  python -m experiments.bench_mxfp4 --config configs/bench_mxfp4.py \
    --workdir runs/bench_mxfp4_gpu
Add ',smoke' for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="gpu", smoke=False)
  common.check_variant(arg.variant, ("gpu", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  # (T, K, N) of y[T, N] = x[T, K] W[N, K]^T; Llama-7B-like layers on a GPU.
  config.linear_shapes = ((4096, 4096, 4096), (4096, 4096, 11008))
  config.gemm_shapes = ((4096, 4096, 4096), (8192, 8192, 8192))
  config.quantize_shape = (8192, 8192)
  config.gemm_implementations = ("xla", "pallas")
  config.error_shape = (128, 4096, 128)  # the authors' notebook shape
  # Timed rounds per linear shape: at least `repeats`, and more (up to 10 x)
  # until `min_seconds` have passed; the ratio is the rounds' median.
  config.repeats = 10
  config.min_seconds = 0.0
  config.seed = 0
  if arg.variant == "quick":
    config.linear_shapes = ((512, 512, 512), (1024, 1024, 1024), (2048,) * 3)
    config.gemm_shapes = ((256, 256, 256),)
    config.quantize_shape = (2048, 2048)
    config.gemm_implementations = ("xla",)
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
  return common.lock(config)
