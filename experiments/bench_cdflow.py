"""CDFlow efficiency: log-det and inverse of the CD layer vs a dense matrix.

For each channel count n, times (median of `repeats` interleaved rounds of jitted calls, each
applying the op `inner` times in a `lax.fori_loop` whose iterations depend on
each other, so XLA cannot hoist them):
  * log-det: CD's O(mn) sum of logs vs `jnp.linalg.slogdet(W)` (O(n^3));
  * inverse of a batch of vectors: CD's FFT solve vs `jnp.linalg.solve(W, .)`,
    vs the dense layer's own inverse (`inv(W)` and one matmul, each call)
    and vs a matmul with a precomputed `inv(W)`;
  * forward: CD's mat-vec vs a dense matmul;
  * forward with log-det under grad (the paper's Fig. 4 forward): the
    layer's forward and log-det, differentiated with respect to its
    parameters, CD against `lib.flows.DenseLinear` (x W^T and slogdet).
CD's inverse and forward run with `implementation="auto"` (what a user gets:
the FFT chain, or W and W^-1 materialised from the O(n) parameters and one
matmul, chosen by n and batch); both explicit paths are timed too, so the
table `lib.flows.cd_linear.DENSE_MAX_N` can be checked against this machine
(`auto_path` per n, `fft_faster_than_dense_*`).
Writes bench.json (times and ratios dense/CD; > 1 means CD is faster) and a
log-log figure. The paper (A800 GPU, PyTorch) reports 4.31x (log-det) and
1.17x (inverse) at n = 96.

Run: python -m experiments.bench_cdflow --config configs/bench_cdflow.py:quick \
  --workdir runs/bench_cdflow

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 4.4, Fig. 4.
"""

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import flows
from lib import train as train_lib
from lib.core import rng
from lib.core import stats as stats_lib
from lib.core import timing
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


def forward_log_det_grad(bijector):
  """op(params, x, ct): the layer's forward with its log-det, under grad.

  The paper's Fig. 4 times a flow layer's forward with the log-det in
  PyTorch with autograd on. JAX keeps no tape, so "under grad" is the
  gradient itself: value_and_grad of <y, ct> + sum(log-det) with respect to
  the layer's parameters (the data `x` enters as a constant, as a
  benchmark's random input does). `ct` is a random cotangent, not ones, so
  XLA cannot fold the weight gradient's matmul into a column sum. Returns
  one element that depends on the value and on every gradient entry, so
  none of it is dead code.
  """

  def loss(params, x, ct):
    y, ld = bijector.forward_and_log_det(params, x)
    return jnp.sum(y * ct) + jnp.sum(ld)

  def op(params, x, ct):
    value, grads = jax.value_and_grad(loss)(params, x, ct)
    return (value + sum(jnp.sum(g) for g in jax.tree.leaves(grads)))[None]

  return op


def _ratio(rounds, slow: str, fast: str) -> tuple[float, float, float]:
  """slow / fast time, paired per round: geometric mean and its t band."""
  return stats_lib.ratio_interval(rounds[slow], rounds[fast])


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _inputs(key, n, m, batch):
  """Random layer parameters (spread log-scales), W, W^-1 and a batch y: one
  program per size (eagerly, each of these ~40 ops compiles on its own)."""
  k_p, k_y, k_w = jax.random.split(key, 3)
  layer = flows.CDLinear(num_channels=n, m=m)
  params = layer.init(k_p)
  params["log_abs_diag"] = 0.1 * jax.random.normal(
    k_w, params["log_abs_diag"].shape
  )
  params["log_abs_eig"] = 0.1 * jax.random.normal(
    k_w, params["log_abs_eig"].shape
  )
  w = layer.dense_matrix(params)
  k_y, k_ct = jax.random.split(k_y)
  return (
    params,
    w,
    jnp.linalg.inv(w),
    jax.random.normal(k_y, (batch, n)),
    jax.random.normal(k_ct, (batch, n)),
  )


# Timed apart from the batch ops (see bench_size).
_MICRO_OPS = ("cd_logdet", "dense_logdet")


def bench_size(n, config) -> dict:
  layer = flows.CDLinear(num_channels=n, m=config.m)
  fft = flows.CDLinear(num_channels=n, m=config.m, implementation="fft")
  dense = flows.CDLinear(num_channels=n, m=config.m, implementation="dense")
  params, w, w_inv, y, ct = _inputs(
    rng.stream(rng.root_key(config.seed), "inputs"), n, config.m, config.batch
  )

  cd_grad = forward_log_det_grad(layer)
  dense_grad = forward_log_det_grad(flows.DenseLinear(num_channels=n))

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
    # The dense layer's own inverse pass (lib.flows.linear): inv(W), then
    # one matmul, each call (W changes every training step).
    "dense_layer_inverse": (
      lambda a, c: (a[1] + c) @ jnp.linalg.inv(a[0] + c).T,
      (w, y),
    ),
    "cd_forward": (lambda a, c: layer.forward(a[0], a[1] + c), (params, y)),
    "cd_inverse_fft": (lambda a, c: fft.inverse(a[0], a[1] + c), (params, y)),
    "cd_inverse_dense": (
      lambda a, c: dense.inverse(a[0], a[1] + c),
      (params, y),
    ),
    "cd_forward_fft": (lambda a, c: fft.forward(a[0], a[1] + c), (params, y)),
    "cd_forward_dense": (
      lambda a, c: dense.forward(a[0], a[1] + c),
      (params, y),
    ),
    "dense_forward": (lambda a, c: (a[1] + c) @ a[0].T, (w, y)),
    "cd_forward_log_det_grad": (
      lambda a, c: cd_grad(shift(a[0], c), a[1] + c, a[2]),
      (params, y, ct),
    ),
    "dense_forward_log_det_grad": (
      lambda a, c: dense_grad({"weight": a[0] + c}, a[1] + c, a[2]),
      (w, y, ct),
    ),
  }
  fns = {
    name: (_looped(op, config.inner), arg) for name, (op, arg) in ops.items()
  }
  # Two groups, each interleaved: the microsecond log-dets apart from the
  # batch ops (a log-det timed right after a 4096 x n matmul measures the
  # thread pool waking up, not the op).
  rounds = {}
  for micro in (True, False):
    part = {k: v for k, v in fns.items() if (k in _MICRO_OPS) == micro}
    rounds.update(
      timing.interleaved(
        {k: (fn, (arg,)) for k, (fn, arg) in part.items()},
        repeats=config.repeats,
      )
    )
  times = {k: float(np.median(v)) / config.inner for k, v in rounds.items()}
  out = {f"{k}_ms": 1e3 * v for k, v in times.items()}
  # Speedups: dense / CD time paired per round (geometric mean), with the
  # 95 % band over rounds (`_lo`, `_hi`): parity inside it is "unresolved".
  for key, slow, fast in (
    ("logdet_speedup", "dense_logdet", "cd_logdet"),
    ("inverse_speedup_vs_solve", "dense_solve", "cd_inverse"),
    ("inverse_speedup_vs_precomputed", "dense_inv_matmul", "cd_inverse"),
    ("inverse_speedup_vs_dense_layer", "dense_layer_inverse", "cd_inverse"),
    ("forward_speedup", "dense_forward", "cd_forward"),
    (
      "forward_log_det_grad_speedup",
      "dense_forward_log_det_grad",
      "cd_forward_log_det_grad",
    ),
  ):
    out[key], out[f"{key}_lo"], out[f"{key}_hi"] = _ratio(rounds, slow, fast)
  out["auto_path"] = "dense" if layer.use_dense(y) else "fft"
  out["fft_faster_than_dense_forward"] = (
    times["cd_forward_dense"] / times["cd_forward_fft"]
  )
  out["fft_faster_than_dense_inverse"] = (
    times["cd_inverse_dense"] / times["cd_inverse_fft"]
  )
  return out


def figure(path, per_n):
  import matplotlib.ticker

  from experiments._plot import plt

  sizes = sorted(per_n)
  fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
  panels = {
    "log-det": ("cd_logdet", "dense_logdet"),
    "inverse (batch)": ("cd_inverse", "dense_solve", "dense_inv_matmul"),
    "forward (batch)": ("cd_forward", "dense_forward"),
    "forward + log-det, grad (batch)": (
      "cd_forward_log_det_grad",
      "dense_forward_log_det_grad",
    ),
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
      "  forward x%.2f, with log-det under grad x%.2f  (auto: %s; "
      "fft/dense-path time %.2f fwd, %.2f inv)",
      n,
      r["logdet_speedup"],
      r["inverse_speedup_vs_solve"],
      r["inverse_speedup_vs_precomputed"],
      r["forward_speedup"],
      r["forward_log_det_grad_speedup"],
      r["auto_path"],
      1 / r["fft_faster_than_dense_forward"],
      1 / r["fft_faster_than_dense_inverse"],
    )
  ref = per_n.get(config.reference_n, per_n[min(config.sizes)])
  big = per_n[max(config.sizes)]
  results = {
    "backend": jax.default_backend(),
    "device": str(jax.devices()[0].device_kind),
    "jax_version": jax.__version__,
    "blas_threads": 1,
    "batch": config.batch,
    "m": config.m,
    "reference_n": config.reference_n,
    "logdet_speedup_ref": ref["logdet_speedup"],
    "logdet_speedup_ref_lo": ref["logdet_speedup_lo"],
    "logdet_speedup_ref_hi": ref["logdet_speedup_hi"],
    "inverse_speedup_ref": ref["inverse_speedup_vs_solve"],
    "inverse_speedup_ref_lo": ref["inverse_speedup_vs_solve_lo"],
    "inverse_speedup_ref_hi": ref["inverse_speedup_vs_solve_hi"],
    "inverse_vs_precomputed_ref": ref["inverse_speedup_vs_precomputed"],
    "inverse_vs_dense_layer_ref": ref["inverse_speedup_vs_dense_layer"],
    "inverse_vs_dense_layer_ref_lo": ref["inverse_speedup_vs_dense_layer_lo"],
    "inverse_vs_dense_layer_ref_hi": ref["inverse_speedup_vs_dense_layer_hi"],
    "forward_speedup_ref": ref["forward_speedup"],
    "forward_speedup_ref_lo": ref["forward_speedup_lo"],
    "forward_speedup_ref_hi": ref["forward_speedup_hi"],
    "forward_log_det_grad_speedup_ref": ref["forward_log_det_grad_speedup"],
    "forward_log_det_grad_speedup_ref_lo": ref[
      "forward_log_det_grad_speedup_lo"
    ],
    "forward_log_det_grad_speedup_ref_hi": ref[
      "forward_log_det_grad_speedup_hi"
    ],
    "auto_path_ref": ref["auto_path"],
    # Does the advantage grow with n? ratio at the largest n / at reference n.
    "logdet_speedup_growth": big["logdet_speedup"] / ref["logdet_speedup"],
    "inverse_speedup_growth": big["inverse_speedup_vs_solve"]
    / ref["inverse_speedup_vs_solve"],
    # The acceptance bar: every ratio >= 1 at every n.
    "min_forward_speedup": min(r["forward_speedup"] for r in per_n.values()),
    "min_inverse_speedup": min(
      r["inverse_speedup_vs_solve"] for r in per_n.values()
    ),
    "per_n": {str(n): r for n, r in per_n.items()},
    "figure": "bench_cdflow.png",
  }
  train_lib.write_json(os.path.join(workdir, "bench.json"), results)
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(
    figure, os.path.join(workdir, "bench_cdflow.png"), per_n
  )
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
