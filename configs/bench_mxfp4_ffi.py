r"""MXFP4 FFI bridge check: the CUDA (or CPU) GEMM and quantizer vs jnp.

Run on a GPU host (build first; nvcc >= 12.8 and the nvidia-cublas wheel):
  python -m pallas_kernels.mxfp4.ffi.build --cuda
  python -m experiments.bench_mxfp4_ffi --config configs/bench_mxfp4_ffi.py \
    --workdir runs/bench_mxfp4_ffi
On Hopper the GEMM is the dequantise + BF16 fallback, on Blackwell (CC 10.x /
12.x) the cuBLASLt block-scaled FP4 GEMM. Variants: (default) `gpu`: GPU
shapes (tests/gpu/run.sh); quick: CPU-sized shapes for the CPU library; add
',smoke' for seconds (tests; `gpu,smoke` runs on the CPU library too).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="gpu", smoke=False)
  common.check_variant(arg.variant, ("gpu", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0
  # (M, N, K) of y[M, N] = x[M, K] W[N, K]^T: Llama-7B-like projections at
  # 8192 tokens, plus a square one.
  config.shapes = ((8192, 4096, 4096), (8192, 11008, 4096), (8192, 4096, 11008))
  config.out_dtype = "bfloat16"
  config.warmup = 3
  config.iters = 20
  # Rows of the quantizer check (x [rows, 4096]).
  config.quantize_rows = 8192
  # (T, N, K) of the quartet_linear ffi-vs-xla check.
  config.linear_shape = (2048, 4096, 4096)
  if arg.variant == "quick":
    config.shapes = ((256, 256, 512),)
    config.out_dtype = "float32"
    config.warmup, config.iters = 1, 3
    config.quantize_rows = 256
    config.linear_shape = (128, 256, 256)
  if arg.smoke:
    config.shapes = ((64, 96, 128),)
    config.out_dtype = "float32"
    config.warmup, config.iters = 1, 1
    config.quantize_rows = 32
    config.linear_shape = (64, 64, 128)
  return common.lock(config)
