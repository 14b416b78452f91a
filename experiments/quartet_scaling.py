"""Quartet (NeurIPS 2025): the precision scaling law and its efficiencies effN, effD.

Trains the byte-level Llama at every size of `config.sweep` under every method
(bf16 baseline first) for each step count of `config.read_steps`, one
OneCycle run per (N, D) point as the authors' sweep (config.protocol; or one
constant-lr run read at every step count, ours), fits the paper's law

  L(N, D) = (A / (N effN)^alpha + B / (D effD)^beta)^gamma + E

to the baseline's points (Huber on log L), then each low-precision method's
(effN, effD) with the base frozen, with a bootstrap over points for the
spread. The paper's Quartet fit: effN 0.658, effD 0.822 (C4, 30M-200M models,
D/N 25-800). At CPU scale (27k-400k parameters, under a million bytes) the
law's exponents and the efficiencies are not the paper's: REPORT.md says so.

Run: python -m experiments.quartet_scaling \
  --config configs/quartet_scaling.py:quick --workdir runs/quartet_scaling
"""

import os

import jax
import ml_collections
import numpy as np
from absl import logging

from experiments import _cli
from experiments import _quartet
from lib import models
from lib import train as train_lib
from lib.core import rng
from lib.core.errors import ConfigError
from lib.quant import scaling_law


def sizes(config) -> list[ml_collections.ConfigDict]:
  """The model sizes of the sweep; mlp_hidden = `models.swiglu_hidden`."""
  s = config.sweep
  lengths = {len(s.d_model), len(s.n_layers), len(s.n_heads)}
  lengths.add(len(s.learning_rate))
  if len(lengths) != 1:
    raise ConfigError(
      "config.sweep.d_model, n_layers, n_heads and learning_rate must be "
      f"equally long; got {len(s.d_model)}, {len(s.n_layers)}, "
      f"{len(s.n_heads)}, {len(s.learning_rate)}"
    )
  out = []
  for d, layers, heads, lr in zip(
    s.d_model, s.n_layers, s.n_heads, s.learning_rate
  ):
    if d % 32:
      raise ConfigError(
        f"config.sweep.d_model {d} is not a multiple of 32 (the MXFP4 group)"
      )
    hidden = models.swiglu_hidden(d, s.mlp_multiple_of)
    if hidden % 32:
      raise ConfigError(
        f"config.sweep.mlp_multiple_of {s.mlp_multiple_of} gives mlp_hidden "
        f"{hidden} at d_model {d}, not a multiple of 32 (the MXFP4 group)"
      )
    out.append(
      ml_collections.ConfigDict(
        dict(
          d_model=d,
          n_layers=layers,
          n_heads=heads,
          mlp_hidden=hidden,
          learning_rate=lr,
        )
      )
    )
  return out


def check_config(config) -> None:
  """Validates methods, sweep, readings and fit settings before any training."""
  _quartet.check_config(config)
  if config.methods[0] != "bf16":
    raise ConfigError(
      f"config.methods must start with 'bf16' (it fits the base law); got "
      f"{tuple(config.methods)}"
    )
  train_lib.check_one_of(config.protocol, PROTOCOLS, "config.protocol")
  steps, t = tuple(config.read_steps), config.train
  if not steps or any(not isinstance(s, int) or s < 2 for s in steps):
    raise ConfigError(
      f"config.read_steps {steps} must be integers >= 2 (one (N, D) point each)"
    )
  if config.protocol == "readings" and (
    t.eval_every <= 0 or any(s % t.eval_every for s in steps)
  ):
    raise ConfigError(
      f"config.read_steps {steps} must be multiples of config.train.eval_every "
      f"({t.eval_every} > 0)"
    )
  if max(steps) > t.num_steps:
    raise ConfigError(
      f"config.read_steps {steps} go past config.train.num_steps "
      f"({t.num_steps})"
    )
  f = config.fit
  for key in ("base_steps", "eff_steps"):
    if not (isinstance(f[key], int) and f[key] > 0):
      raise ConfigError(f"config.fit.{key}={f[key]!r} must be an integer > 0")
  if not (isinstance(f.bootstrap_samples, int) and f.bootstrap_samples >= 2):
    raise ConfigError(
      f"config.fit.bootstrap_samples={f.bootstrap_samples!r} must be an "
      "integer >= 2 (the bands come from the bootstrap)"
    )
  if not (isinstance(f.band_level, float) and 0.0 < f.band_level < 1.0):
    raise ConfigError(
      f"config.fit.band_level={f.band_level!r} must be a float in (0, 1)"
    )
  try:
    scaling_law.check_gamma_range(f.gamma_range)
  except ConfigError as e:
    raise ConfigError(f"config.fit.{e}") from None
  points = len(sizes(config)) * len(steps)
  need = scaling_law.num_base_params(f.gamma_range)
  if points < need:
    raise ConfigError(
      f"the bf16 base law has {need} free parameters but config.sweep "
      f"({len(sizes(config))} sizes) x config.read_steps ({len(steps)}) give "
      f"{points} (N, D) points; add sizes or read steps"
    )


PROTOCOLS = ("run_per_point", "readings")


def _point_config(config, steps: int) -> ml_collections.ConfigDict:
  """`config` with a training run of `steps` steps, evaluated at its end."""
  c = ml_collections.ConfigDict(config.to_dict())
  t = c.train
  t.update(
    num_steps=steps,
    eval_every=steps,
    checkpoint_every=min(t.checkpoint_every, steps),
    log_every=min(t.log_every, steps),
  )
  return c


def sweep(config, workdir, data) -> list[dict]:
  """Trains every (size, method) over the seeds; one point per step count.

  config.protocol "run_per_point" (official): one run per (size, method,
  step count) under the OneCycle schedule of that many steps, read at its
  end (workdir <method>_d<d>_l<layers>/steps<s>). "readings" [ours]: one
  constant-lr run per (size, method) read at every step count.
  `data`: `_quartet.load_data(config)`.

  A point's loss is the mean over seeds; a point where any seed diverged
  keeps `val_loss` NaN and `finite_fraction` < 1 (it is left out of the fit
  and listed in results, not dropped silently).
  """
  tokens_per_step = config.data.batch_size * config.data.seq_len
  points = []
  per_point = config.protocol == "run_per_point"
  runs = [(size, m) for size in sizes(config) for m in config.methods]
  progress = train_lib.Sweep(
    len(runs) * (len(config.read_steps) if per_point else 1),
    name="quartet_scaling",
  )

  def train(c, method, size, run_dir, name):
    with progress.run(f"{name} ({config.seeds} seeds)"):
      return _quartet.train_method(
        c,
        method,
        data,
        workdir=run_dir,
        name=name,
        model=size,
        learning_rate=size.learning_rate,
        constant=not per_point,
        # One compiled step for a (size, method)'s runs of every length
        # (the main job's persistent compilation cache then compiles each
        # once).
        length_input=per_point and config.optim.schedule == "one_cycle",
      )["val_loss"]

  for size, method in runs:
    run_name = f"{method}_d{size.d_model}_l{size.n_layers}"
    run_dir = os.path.join(workdir, run_name)
    if per_point:
      val_loss = {
        s: train(
          _point_config(config, s),
          method,
          size,
          os.path.join(run_dir, f"steps{s}"),
          f"{run_name}_s{s}",
        )[s]
        for s in config.read_steps
      }
    else:
      val_loss = train(config, method, size, run_dir, run_name)
    n = models.non_embedding_params(_quartet.model_config(config, method, size))
    for s in config.read_steps:
      v = val_loss[s]
      finite = np.isfinite(v)
      points.append(
        {
          "method": method,
          "d_model": size.d_model,
          "n_layers": size.n_layers,
          "n": n,
          "steps": s,
          "tokens": s * tokens_per_step,
          "val_loss": float(np.mean(v)) if finite.all() else float("nan"),
          "val_loss_per_seed": v.tolist(),
          "finite_fraction": float(finite.mean()),
        }
      )
    logging.info(
      "%s: N %d, val loss (mean of %d seeds) %s",
      run_name,
      n,
      config.seeds,
      ", ".join(f"{np.mean(val_loss[s]):.4f}" for s in config.read_steps),
    )
  return points


def _arrays(points, method):
  p = [q for q in points if q["method"] == method and q["finite_fraction"] == 1]
  return tuple(
    np.array([q[k] for q in p], np.float64) for k in ("n", "tokens", "val_loss")
  )


def _spread(values) -> dict:
  v = np.asarray(values, np.float64)
  v = v[np.isfinite(v)]
  if not v.size:
    return {"p16": float("nan"), "p50": float("nan"), "p84": float("nan")}
  return dict(
    zip(("p16", "p50", "p84"), np.percentile(v, (16, 50, 84)).tolist())
  )


def plane_rms_log_residual(n, tokens, loss) -> float:
  """rms residual of the least-squares plane log L = c + a log N + b log D.

  A 3-parameter yardstick for the law's fit on the same points: a law that
  fits no better than a plane in (log N, log D) shows no curvature the points
  can confirm.
  """
  x = np.stack([np.ones_like(n), np.log(n), np.log(tokens)], axis=1)
  y = np.log(loss)
  coef, *_ = np.linalg.lstsq(x, y, rcond=None)
  return float(np.sqrt(np.mean((x @ coef - y) ** 2)))


def fit(config, points) -> dict:
  """The base law on bf16, then effN/effD per method, with bootstrap bands.

  One vmapped call fits the point estimate (replicate 0) and the bootstrap
  replicates with the same estimator; bands are `scaling_law.log_band`
  (percentile interval joined with a log-normal interval around the point).
  """
  f = config.fit
  gamma_range = scaling_law.check_gamma_range(f.gamma_range)
  base_points = _arrays(points, "bf16")
  schemes = {m: _arrays(points, m) for m in config.methods[1:]}
  logging.info(
    "fitting the base law on %d bf16 points and effN/effD of %s: point + %d "
    "bootstrap replicates, multi-start L-BFGS (one vmapped call)",
    len(base_points[0]),
    ", ".join(schemes) or "no scheme",
    f.bootstrap_samples,
  )
  fitted = scaling_law.fit(
    base_points,
    schemes,
    key=rng.root_key(f.seed),
    samples=f.bootstrap_samples,
    base_steps=f.base_steps,
    eff_steps=f.eff_steps,
    gamma_range=gamma_range,
  )
  law = fitted["law"]
  pred = np.asarray(scaling_law.loss(law, *base_points[:2]))
  free_gamma = gamma_range[1] > gamma_range[0]
  boot = fitted["boot_law"]
  rms = float(np.sqrt(np.mean(np.log(pred / base_points[2]) ** 2)))
  plane = plane_rms_log_residual(*base_points)
  base = {
    **law.values(),
    "gamma_range": list(gamma_range),
    "gamma_fixed": not free_gamma,
    "huber_objective": fitted["objective"],
    "rms_log_residual": rms,
    "plane_rms_log_residual": plane,
    "law_minus_plane_rms": rms - plane,
    "identifiability": scaling_law.identifiability(
      law, *base_points, free_gamma=free_gamma
    ),
    "bootstrap": {
      "alpha": _spread(boot.alpha),
      "beta": _spread(boot.beta),
      "E": _spread(np.exp(np.asarray(boot.log_e, np.float64))),
      **({"gamma": _spread(boot.gamma)} if free_gamma else {}),
    },
  }
  ident = base["identifiability"]
  logging.info(
    "base law %s; rms log residual %.4f (a plane in log N, log D: %.4f); "
    "Gauss-Newton condition %.3g, weakest direction se %.3g (log units)",
    {k: round(v, 4) for k, v in law.values().items()},
    base["rms_log_residual"],
    base["plane_rms_log_residual"],
    ident["condition_number"],
    ident["weakest_se"],
  )
  effs = {}
  for method in schemes:
    e = {"band_level": f.band_level, "paired": fitted["paired"][method]}
    for i, k in enumerate(("eff_n", "eff_d")):
      point = fitted["eff"][method][i]
      band = scaling_law.log_band(
        point, fitted["boot_eff"][method][k], f.band_level
      )
      e[k] = point
      e[f"{k}_lo"], e[f"{k}_hi"] = band["lo"], band["hi"]
      e[f"{k}_boot_median"] = band["median"]
      e[f"{k}_log_sd"] = band["log_sd"]
      e[f"{k}_boot_failed"] = band["failed"]
    effs[method] = e
    logging.info(
      "%s: effN %.3f [%.3f, %.3f], effD %.3f [%.3f, %.3f] (%.0f%% bands)",
      method,
      *(e[k] for k in ("eff_n", "eff_n_lo", "eff_n_hi")),
      *(e[k] for k in ("eff_d", "eff_d_lo", "eff_d_hi")),
      100 * f.band_level,
    )
  return {"base": base, "eff": effs, "law": law}


def fit_figure(path: str, points, law, effs) -> None:
  """Validation loss against tokens per size: points and the fitted curves."""
  from experiments._plot import plt

  fig, ax = plt.subplots(figsize=(7, 4.5))
  methods = sorted({p["method"] for p in points}, key=lambda m: m != "bf16")
  ns = sorted({p["n"] for p in points})
  colors = plt.cm.viridis(np.linspace(0, 0.85, len(ns)))
  markers = "osD^v<>"
  tokens = np.array(sorted({p["tokens"] for p in points}), np.float64)
  grid = np.geomspace(tokens.min(), tokens.max(), 50)
  for color, n in zip(colors, ns):
    for j, method in enumerate(methods):
      p = [q for q in points if q["n"] == n and q["method"] == method]
      ax.scatter(
        [q["tokens"] for q in p],
        [q["val_loss"] for q in p],
        color=color,
        marker=markers[j % len(markers)],
        label=f"{method}, N={n:,}" if len(ns) <= 4 else None,
      )
      e = effs.get(method, {"eff_n": 1.0, "eff_d": 1.0})
      curve = scaling_law.loss(
        law, np.full_like(grid, n), grid, e["eff_n"], e["eff_d"]
      )
      ax.plot(grid, np.asarray(curve), color=color, ls="-" if j == 0 else "--")
  ax.set_xscale("log")
  ax.set_xlabel("training tokens D (bytes)")
  ax.set_ylabel("validation loss (nats / byte)")
  title = ", ".join(
    f"{m}: effN {e['eff_n']:.2f}, effD {e['eff_d']:.2f}"
    for m, e in effs.items()
  )
  ax.set_title(
    f"Scaling-law fit (solid: bf16 base law; dashed: with effN, effD)\n{title}"
  )
  ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=120)


def run(config, workdir) -> dict:
  """Sweeps, fits, draws; returns effN/effD per method and the base law."""
  check_config(config)
  data = _quartet.load_data(config)  # a bad corpus: before the workdir
  train_lib.prepare_run(workdir, config)
  logging.info("devices: %s", jax.devices())
  points = sweep(config, workdir, data)
  fitted = fit(config, points)
  figure = os.path.join(workdir, "scaling_fit.png")
  largest = max(p["n"] for p in points)
  longest = max(config.read_steps)
  final = {
    p["method"]: p["val_loss"]
    for p in points
    if p["n"] == largest and p["steps"] == longest
  }
  results = {
    "seeds": config.seeds,
    "points": points,
    "diverged_points": [
      {k: p[k] for k in ("method", "n", "steps", "finite_fraction")}
      for p in points
      if p["finite_fraction"] < 1
    ],
    "base": fitted["base"],
    "eff": fitted["eff"],
    "paper_eff": {"quartet": {"eff_n": 0.658, "eff_d": 0.822}},
    "gap_largest": {
      m: v - final["bf16"] for m, v in final.items() if m != "bf16"
    },
    "figure": figure,
  }
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(
    fit_figure, figure, points, fitted["law"], fitted["eff"]
  )
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
