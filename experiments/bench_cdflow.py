"""CDFlow efficiency: log-det and inverse of the CD layer vs a dense matrix.

For each channel count n, times (median of `repeats` jitted calls, each
applying the op `inner` times in a `lax.fori_loop` whose iterations depend on
each other, so XLA cannot hoist them):
  * log-det: CD's O(mn) sum of logs vs `jnp.linalg.slogdet(W)` (O(n^3));
  * inverse of a batch of vectors: CD's FFT solve vs `jnp.linalg.solve(W, .)`
    and vs a matmul with a precomputed `inv(W)`;
  * forward: CD's FFT mat-vec vs a dense matmul.
Writes bench.json (times and ratios dense/CD; > 1 means CD is faster) and a
log-log figure. The paper (A800 GPU, PyTorch) reports 4.31x (log-det) and
1.17x (inverse) at n = 96.

Run: python -m experiments.bench_cdflow --config configs/bench_cdflow.py:quick \
  --workdir runs/bench_cdflow

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 4.4, Fig. 4.
"""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import flows
from lib import train as train_lib
from lib.core.threads import single_threaded_blas


def _looped(op, inner):
  """jit(f) applying `op(arg, carry)` `inner` times with a carried scalar.

  The carry (~0) enters every iteration's input, so the iterations are
  sequential and none can be hoisted or deduplicated.
  """

  def f(arg):
    def body(_, carry):
      out = op(arg, carry)
      return carry + 1e-30 * jnp.sum(out[..., :1]).astype(carry.dtype)

    return jax.lax.fori_loop(0, inner, body, jnp.zeros((), jnp.float32))

  return jax.jit(f)


def _time(fn, arg, repeats) -> float:
  """Median seconds per call after one warm-up (compile) call."""
  jax.block_until_ready(fn(arg))
  times = []
  for _ in range(repeats):
    t = time.perf_counter()
    jax.block_until_ready(fn(arg))
    times.append(time.perf_counter() - t)
  return float(np.median(times))


def bench_size(n, config) -> dict:
  key = jax.random.key(config.seed)
  k_p, k_y, k_w = jax.random.split(key, 3)
  layer = flows.CDLinear(num_channels=n, m=config.m)
  params = layer.init(k_p)
  # Generic (non-orthogonal) CD weights; the dense baseline uses the same W.
  params["log_abs_diag"] = 0.1 * jax.random.normal(
    k_w, params["log_abs_diag"].shape
  )
  params["log_abs_eig"] = 0.1 * jax.random.normal(
    k_w, params["log_abs_eig"].shape
  )
  w = layer.dense_matrix(params)
  w_inv = jnp.linalg.inv(w)
  y = jax.random.normal(k_y, (config.batch, n))

  def shift(tree, c):
    return jax.tree.map(lambda v: v + c, tree)

  ops = {
    "cd_logdet": (
      lambda p, c: layer.log_abs_det_matrix(shift(p, c))[None],
      params,
    ),
    "dense_logdet": (lambda w, c: jnp.linalg.slogdet(w + c)[1][None], w),
    "cd_inverse": (lambda a, c: layer.inverse(a[0], a[1] + c), (params, y)),
    "dense_solve": (
      lambda a, c: jnp.linalg.solve(a[0], (a[1] + c).T).T,
      (w, y),
    ),
    "dense_inv_matmul": (lambda a, c: (a[1] + c) @ a[0].T, (w_inv, y)),
    "cd_forward": (lambda a, c: layer.forward(a[0], a[1] + c), (params, y)),
    "dense_forward": (lambda a, c: (a[1] + c) @ a[0].T, (w, y)),
  }
  times = {
    name: _time(_looped(op, config.inner), arg, config.repeats) / config.inner
    for name, (op, arg) in ops.items()
  }
  out = {f"{k}_ms": 1e3 * v for k, v in times.items()}
  out["logdet_speedup"] = times["dense_logdet"] / times["cd_logdet"]
  out["inverse_speedup_vs_solve"] = times["dense_solve"] / times["cd_inverse"]
  out["inverse_speedup_vs_precomputed"] = (
    times["dense_inv_matmul"] / times["cd_inverse"]
  )
  out["forward_speedup"] = times["dense_forward"] / times["cd_forward"]
  return out


def figure(path, per_n):
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  import matplotlib.ticker  # noqa: F401  (matplotlib.ticker.NullLocator)

  sizes = sorted(per_n)
  fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
  panels = {
    "log-det": ("cd_logdet", "dense_logdet"),
    "inverse (batch)": ("cd_inverse", "dense_solve", "dense_inv_matmul"),
    "forward (batch)": ("cd_forward", "dense_forward"),
  }
  for ax, (title, names) in zip(axes, panels.items()):
    for name in names:
      ax.loglog(
        sizes, [per_n[n][f"{name}_ms"] for n in sizes], "o-", label=name
      )
    ax.set_xticks(sizes, [str(n) for n in sizes], fontsize=7)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("channels n")
    ax.set_ylabel("ms per op")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


def run(config, workdir) -> dict:
  # One BLAS thread for the dense baseline too: n <= 1024 LU/solves gain
  # little from threads here and multi-threaded OpenBLAS stalls under load.
  with single_threaded_blas():
    return _run(config, workdir)


def check_config(config) -> None:
  """Fails at once, naming the key, on a value the benchmark cannot run."""
  _checks.integers(config.sizes, "config.sizes", minimum=2)
  _checks.integer(config.batch, "config.batch")
  _checks.integer(config.m, "config.m")
  _checks.integer(config.repeats, "config.repeats")
  _checks.integer(config.inner, "config.inner")
  _checks.integer(config.reference_n, "config.reference_n", minimum=2)


def _run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  per_n = {}
  for n in config.sizes:
    per_n[n] = bench_size(n, config)
    r = per_n[n]
    logging.info(
      "n=%4d  logdet x%.1f  inverse x%.2f (solve) x%.2f (precomputed inv)"
      "  forward x%.2f",
      n,
      r["logdet_speedup"],
      r["inverse_speedup_vs_solve"],
      r["inverse_speedup_vs_precomputed"],
      r["forward_speedup"],
    )
  ref = per_n.get(config.reference_n, per_n[min(config.sizes)])
  big = per_n[max(config.sizes)]
  results = {
    "backend": jax.default_backend(),
    "blas_threads": 1,
    "batch": config.batch,
    "m": config.m,
    "reference_n": config.reference_n,
    "logdet_speedup_ref": ref["logdet_speedup"],
    "inverse_speedup_ref": ref["inverse_speedup_vs_solve"],
    "inverse_vs_precomputed_ref": ref["inverse_speedup_vs_precomputed"],
    "forward_speedup_ref": ref["forward_speedup"],
    # Does the advantage grow with n? ratio at the largest n / at reference n.
    "logdet_speedup_growth": big["logdet_speedup"] / ref["logdet_speedup"],
    "inverse_speedup_growth": big["inverse_speedup_vs_solve"]
    / ref["inverse_speedup_vs_solve"],
    "per_n": {str(n): r for n, r in per_n.items()},
    "figure": "bench_cdflow.png",
  }
  train_lib.write_json(os.path.join(workdir, "bench.json"), results)
  figure(os.path.join(workdir, "bench_cdflow.png"), per_n)
  return train_lib.write_results(workdir, results)


if __name__ == "__main__":
  _cli.main(run)
