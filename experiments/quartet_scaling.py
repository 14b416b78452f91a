"""Quartet (NeurIPS 2025): the precision scaling law and its efficiencies effN, effD.

Trains the byte-level Llama at every size of `config.sweep` under every method
(bf16 baseline first), reads validation loss at each step count of
`config.read_steps` (one (N, D) point each), fits the paper's law

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
from lib.core.errors import ConfigError
from lib.quant import scaling_law


def sizes(config) -> list[ml_collections.ConfigDict]:
  """The model sizes of the sweep; mlp_hidden = 8/3 d_model up to a multiple of 32."""
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
    hidden = -(-8 * d // (3 * 32)) * 32
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


def _check(config) -> None:
  if not config.methods or config.methods[0] != "bf16":
    raise ConfigError(
      f"config.methods must start with 'bf16' (it fits the base law); got "
      f"{tuple(config.methods)}"
    )
  steps, t = tuple(config.read_steps), config.train
  if not steps or t.eval_every <= 0 or any(s % t.eval_every for s in steps):
    raise ConfigError(
      f"config.read_steps {steps} must be multiples of config.train.eval_every "
      f"({t.eval_every} > 0)"
    )
  if max(steps) > t.num_steps:
    raise ConfigError(
      f"config.read_steps {steps} go past config.train.num_steps "
      f"({t.num_steps})"
    )


def sweep(config, workdir) -> list[dict]:
  """Trains every (size, method); returns one point per reading."""
  data = _quartet.load_data(config)
  tokens_per_step = config.data.batch_size * config.data.seq_len
  points = []
  for size in sizes(config):
    for method in config.methods:
      run_name = f"{method}_d{size.d_model}_l{size.n_layers}"
      task = _quartet.make_task(config, method, data, size)
      tx = _quartet.make_optimizer(config, size.learning_rate, constant=True)
      _, history = train_lib.fit(
        task,
        tx,
        workdir=os.path.join(workdir, run_name),
        config=config.train,
        name=f"{run_name}: ",
      )
      n = models.non_embedding_params(
        _quartet.model_config(config, method, size)
      )
      by_step = {h["step"]: h for h in history if "val_loss" in h}
      for s in config.read_steps:
        points.append(
          {
            "method": method,
            "d_model": size.d_model,
            "n_layers": size.n_layers,
            "n": n,
            "steps": s,
            "tokens": s * tokens_per_step,
            "val_loss": by_step[s]["val_loss"],
          }
        )
      logging.info(
        "%s: N %d, val loss %s",
        run_name,
        n,
        ", ".join(f"{by_step[s]['val_loss']:.4f}" for s in config.read_steps),
      )
  return points


def _arrays(points, method):
  p = [q for q in points if q["method"] == method]
  return tuple(
    np.array([q[k] for q in p], np.float64) for k in ("n", "tokens", "val_loss")
  )


def fit(config, points) -> dict:
  """The base law on bf16, then effN/effD per method with a bootstrap spread."""
  base_points = _arrays(points, "bf16")
  law, objective = scaling_law.fit_base(
    *base_points, steps=config.fit.base_steps
  )
  pred = np.asarray(scaling_law.loss(law, *base_points[:2]))
  base = {
    **law.values(),
    "huber_objective": objective,
    "rms_log_residual": float(
      np.sqrt(np.mean(np.log(pred / base_points[2]) ** 2))
    ),
  }
  schemes = {m: _arrays(points, m) for m in config.methods[1:]}
  boot = scaling_law.bootstrap(
    jax.random.key(config.fit.seed),
    base_points,
    schemes,
    samples=config.fit.bootstrap_samples,
    base_steps=config.fit.base_steps,
    eff_steps=config.fit.eff_steps,
  )
  effs = {}
  for method, scheme in schemes.items():
    e = dict(
      zip(
        ("eff_n", "eff_d"),
        scaling_law.fit_efficiency(law, *scheme, steps=config.fit.eff_steps),
      )
    )
    for k in ("eff_n", "eff_d"):
      # 16th-84th percentiles of the bootstrap (a +-1 sigma band).
      e[f"{k}_p16"], e[f"{k}_p84"] = (
        float(np.percentile(boot[method][k], q)) for q in (16, 84)
      )
    effs[method] = e
    logging.info(
      "%s: effN %.3f [%.3f, %.3f], effD %.3f [%.3f, %.3f]",
      method,
      *(e[k] for k in ("eff_n", "eff_n_p16", "eff_n_p84")),
      *(e[k] for k in ("eff_d", "eff_d_p16", "eff_d_p84")),
    )
  return {"base": base, "eff": effs, "law": law}


def fit_figure(path: str, points, law, effs) -> None:
  """Validation loss against tokens per size: points and the fitted curves."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

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
  fig.savefig(path, dpi=120)
  plt.close(fig)


def run(config, workdir) -> dict:
  """Sweeps, fits, draws; returns effN/effD per method and the base law."""
  _check(config)
  logging.info("devices: %s", jax.devices())
  points = sweep(config, workdir)
  fitted = fit(config, points)
  figure = os.path.join(workdir, "scaling_fit.png")
  fit_figure(figure, points, fitted["law"], fitted["eff"])
  largest = max(p["n"] for p in points)
  longest = max(config.read_steps)
  final = {
    p["method"]: p["val_loss"]
    for p in points
    if p["n"] == largest and p["steps"] == longest
  }
  results = {
    "points": points,
    "base": fitted["base"],
    "eff": fitted["eff"],
    "paper_eff": {"quartet": {"eff_n": 0.658, "eff_d": 0.822}},
    "gap_largest": {
      m: v - final["bf16"] for m, v in final.items() if m != "bf16"
    },
    "figure": figure,
  }
  train_lib.write_results(workdir, results)
  return results


if __name__ == "__main__":
  _cli.main(run)
