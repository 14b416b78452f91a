"""CDFlow density estimation: linear-mixing layers compared at equal depth.

Three parts (spec A, experiments E2-E4), the objectives in lib.flows.density:
  * vector: RealNVP-style flow on the 64-dim digits, K steps of [actnorm ->
    linear -> affine coupling], linear in {dense, cd, cd3, lu, permutation,
    identity}; test bits/dim, parameters, step time; seeds as one sweep.
  * image: multi-scale Glow-style flow on 8x8x1 digits (CD as the 1x1
    channel mixing) for cd vs dense vs lu.
  * periodic: a stationary Gaussian process on a ring, whose entropy is the
    optimal expected NLL; affine flows [actnorm -> linear], CD vs LU, scored
    exactly. Figures: samples per layer type, test bits/dim vs step.

Run: python -m experiments.cdflow_density --config configs/cdflow_density.py:quick \
  --workdir runs/cdflow_density

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 4, App. A.
"""

import math
import os

import jax
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import flows
from lib import train as train_lib
from lib.core import errors
from lib.core import num_params
from lib.core import rng
from lib.core import stats
from lib.core.threads import single_threaded_blas
from lib.data.digits import load_digits
from lib.data.digits import split_indices
from lib.flows import density


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  d, o = config.data, config.optim
  if d.images_npy and not os.path.exists(d.images_npy):
    raise errors.ConfigError(f"data.images_npy {d.images_npy!r} not found")
  _checks.integer(d.num_levels, "config.data.num_levels", minimum=2)
  _checks.fraction(d.test_fraction, "config.data.test_fraction")
  _checks.number(
    d.logit_alpha, "config.data.logit_alpha", at_least=0, below=0.5
  )
  _checks.integer(d.init_batch, "config.data.init_batch")
  _checks.integer(d.eval_draws, "config.data.eval_draws")
  _checks.number(o.learning_rate, "config.optim.learning_rate", above=0)
  _checks.integer(o.warmup_steps, "config.optim.warmup_steps", minimum=0)
  _checks.number(o.grad_clip, "config.optim.grad_clip", above=0)
  _checks.integer(config.num_samples, "config.num_samples")
  for part in ("vector", "image", "periodic"):
    if not (c := config[part]).enabled:
      continue
    _checks.names(
      c.linears,
      flows.LINEAR_KINDS,
      f"config.{part}.linears",
      match=flows.is_cd_kind,
    )
    _checks.integer(c.num_steps, f"config.{part}.num_steps")
  v, im, p = config.vector, config.image, config.periodic
  if v.enabled:
    _checks.integer(v.hidden, "config.vector.hidden")
    _checks.integer(v.num_hidden_layers, "config.vector.num_hidden_layers", 0)
    _checks.integers(v.seeds, "config.vector.seeds", minimum=0)
  if im.enabled:
    _checks.integer(im.num_levels, "config.image.num_levels")
    _checks.integer(im.hidden, "config.image.hidden")
    _checks.integer(im.train_steps, "config.image.train_steps", minimum=0)
  if p.enabled:
    _checks.integer(p.n, "config.periodic.n", minimum=2)
    _checks.number(p.lengthscale, "config.periodic.lengthscale", above=0)
    # noise > 0 keeps the circulant covariance positive definite.
    _checks.number(p.noise, "config.periodic.noise", above=0)
    _checks.number(p.learning_rate, "config.periodic.learning_rate", above=0)
    _checks.integer(p.train_steps, "config.periodic.train_steps", minimum=0)
    _checks.integer(p.num_test, "config.periodic.num_test")


def load_images(config) -> tuple[np.ndarray, np.ndarray]:
  """(train, test) integer-level images (N, H, W, C) as float32."""
  d = config.data
  if d.images_npy:
    images = density.load_level_images(
      d.images_npy, d.num_levels, name="data.images_npy"
    )
  else:
    images = load_digits()[0][..., None]
    if images.max() > d.num_levels - 1:
      raise errors.ConfigError(
        f"config.data.num_levels={d.num_levels}: the digits have grey levels "
        f"up to {int(images.max())}, so num_levels must be >= "
        f"{int(images.max()) + 1}"
      )
  train_idx, test_idx = split_indices(
    len(images), test_fraction=d.test_fraction, seed=d.split_seed
  )
  source = f"data.images_npy {d.images_npy!r}" if d.images_npy else "digits"
  if not (len(train_idx) and len(test_idx)):
    raise errors.ShapeError(
      f"{source} holds {len(images)} images: too few "
      f"for a train and a test split at data.test_fraction="
      f"{d.test_fraction:g} ({len(train_idx)} train, {len(test_idx)} test)"
    )
  f = 2**config.image.num_levels
  if config.image.enabled and (images.shape[1] % f or images.shape[2] % f):
    raise errors.ShapeError(
      f"{source} holds {images.shape[1]}x"
      f"{images.shape[2]} images; the image flow's config.image.num_levels="
      f"{config.image.num_levels} squeezes need height and width divisible "
      f"by {f} (or --config.image.enabled=False)"
    )
  return images[train_idx], images[test_idx]


# ------------------------------------------------------ digits training ---


def make_optimizer(learning_rate, o, num_steps):
  schedule = optax.warmup_cosine_decay_schedule(
    0.0,
    learning_rate,
    warmup_steps=min(o.warmup_steps, max(num_steps - 1, 1)),
    decay_steps=max(num_steps, 2),
  )
  return optax.chain(
    optax.clip_by_global_norm(o.grad_clip), optax.adam(schedule)
  )


def train_config(config, num_steps):
  """config.train with this run's step count."""
  every, evals = config.train.log_every, config.train.eval_every
  if 2 <= num_steps < 2 * every:  # >= 2 log lines: the first includes compile
    every = num_steps // 2
  ckpt = max(every, math.ceil(num_steps / every) * every)
  evals = evals and max(every, (evals // every) * every)
  over = dict(log_every=every, checkpoint_every=ckpt, eval_every=evals)
  return train_lib.phase_config(config.train, num_steps, **over)


def fit_density(config, workdir, model, dq, data, seeds, num_steps, name):
  """Maximum likelihood on dequantised digits, one vmapped member per seed.

  Seed s draws the keys a lone run with train.seed = s would draw; every
  member is evaluated on the same dequantisation noise (train.seed's).
  Returns (the sweep's result, the first seed's params as host arrays).
  """
  o, d = config.optim, config.data
  tx = make_optimizer(o.learning_rate, o, num_steps)
  init_x = data["train"][: d.init_batch]

  def loss_fn(params, y, key):
    del key
    loss = dq.loss(model, params, y)
    return loss, {"train_bpd": loss}

  def eval_fn(params, data):
    key = rng.root_key(config.train.seed)
    bpd = dq.heldout_bpd(model, params, data["test"], key, d.eval_draws)
    return {"test_bpd": bpd}

  task = train_lib.Task(
    init_fn=lambda key: dq.init(model, key, init_x),
    loss_fn=loss_fn,
    batch_fn=lambda data, key, step: dq.batch(key, data["train"], o.batch_size),
    data=data,
    eval_fn=eval_fn,
  )
  result = train_lib.fit_seeds(
    task,
    tx,
    seeds,
    workdir=os.path.join(workdir, name),
    config=train_config(config, num_steps),
    name=name,
    watch=("loss", "grad_norm"),
    # The seeds one after the other (lax.map), not vmapped: on jaxlib 0.10
    # vmapped dense or LU flows deadlock XLA's CPU thread pool on a 2-core
    # machine (see run_sweep's `vectorize`).
    vectorize=False,
  )
  params = jax.tree.map(lambda x: np.asarray(x)[0], result.state.params)
  return result, params


def summarize(result, name, params) -> dict:
  """Test/train bits/dim over seeds, sizes, step time, the first seed's curve."""
  runs = [f"{name}/{n}" for n in result.settings.names]
  last = {row["run"]: row for row in result.rows}
  # The first log line includes the compile time.
  rows = [row for row in result.rows if row["run"] == runs[0]][1:]
  rates = [row["steps_per_sec"] for row in rows if row.get("steps_per_sec")]
  bpds, curve = result.final("test_bpd"), result.evals["test_bpd"][:, 0]
  return {
    "test_bpd": float(np.mean(bpds)),
    "test_bpd_std": float(np.std(bpds)),
    "test_bpd_by_seed": np.asarray(bpds, np.float64).reshape(-1).tolist(),
    "train_bpd": float(
      np.mean([float(last[r].get("train_bpd", np.nan)) for r in runs])
    ),
    "params": num_params(params),
    "linear_params": density.mixing_param_count(params),
    # Per seed: the sweep steps its seeds one after the other.
    "step_ms": 1000.0 / float(np.median(rates)) / len(runs)
    if rates
    else np.nan,
    "curve": list(zip(result.steps.tolist(), curve.tolist())),
    "diverged_at": result.diverged_at.tolist(),
  }


def run_digits(config, workdir, part, images):
  """The vector (E2) or image (E3) flows per linear layer: (table, samples)."""
  c, d, vector = config[part], config.data, part == "vector"
  event = (-1,) if vector else images["train"].shape[1:]
  data = {k: x.reshape(len(x), *event) for k, x in images.items()}
  dq = density.Dequantized(d.num_levels, d.logit_alpha, len(event))
  seeds = c.seeds if vector else (config.train.seed,)
  out, samples = {}, {}
  sample_key = rng.stream(rng.root_key(config.train.seed), "samples")
  for linear in c.linears:
    if vector:
      shape, layers = data["train"].shape[1], c.num_hidden_layers
      model = flows.VectorFlow(shape, c.num_steps, linear, c.hidden, layers)
    else:
      kw = dict(hidden=c.hidden, learned_prior=c.learned_prior)
      model = flows.ImageFlow(event, c.num_levels, c.num_steps, linear, **kw)
    name = f"{part}_{linear}"
    steps = config.train.num_steps if vector else c.train_steps
    result, params = fit_density(
      config, workdir, model, dq, data, seeds, steps, name
    )
    out[linear] = summarize(result, name, params)
    draw = jax.jit(lambda p, k, m=model: dq.sample(m, p, k, config.num_samples))
    drawn = np.asarray(draw(params, sample_key))
    drawn = drawn.reshape(-1, *images["train"].shape[1:])[..., 0]  # (N, H, W)
    samples[f"{part} {linear}"] = drawn
    if not vector:
      out[linear].pop("curve")
    logging.info("%s: %s", name, out[linear])
  return out, samples


# ------------------------------------------------------- periodic proxy ---


def run_periodic(config, workdir) -> dict:
  p = config.periodic
  cov = density.ring_covariance(p.n, p.lengthscale, p.noise)
  chol = np.linalg.cholesky(cov).astype(np.float32)
  optimum = density.circulant_gaussian_entropy_per_dim(cov)
  out = {"optimum_nats_per_dim": optimum}

  def sample(key, num):
    return jax.random.normal(key, (num, p.n)) @ chol.T

  for linear in p.linears:
    bij = density.affine_flow(linear, p.n, p.num_steps)

    def init_fn(key, bij=bij):
      k1, k2 = jax.random.split(key)
      return bij.init(k1, sample(k2, 4 * p.batch_size))

    def batch_fn(data, key, step):
      del data, step
      return sample(key, p.batch_size)

    def loss_fn(params, batch, key, bij=bij):
      del key
      return density.nll_per_dim(bij, params, batch), {}

    def eval_fn(params, data, bij=bij):
      del data
      key = rng.stream(rng.root_key(config.train.seed), "periodic_test")
      return {
        "expected_nll": density.expected_nll_per_dim(bij, params, cov),
        "test_nll": density.nll_per_dim(bij, params, sample(key, p.num_test)),
      }

    name = f"periodic_{linear}"
    state, history = train_lib.fit(
      train_lib.Task(init_fn, loss_fn, batch_fn, {}, eval_fn),
      make_optimizer(p.learning_rate, config.optim, p.train_steps),
      workdir=os.path.join(workdir, name),
      config=train_config(config, p.train_steps),
      name=name,
    )
    final = history[-1]
    out[linear] = {
      "expected_nll": final["expected_nll"],
      "gap_nats_per_dim": final["expected_nll"] - optimum,
      "test_nll": final["test_nll"],
      "params": num_params(state.params),
    }
    logging.info("%s: gap %.5f nats/dim", name, out[linear]["gap_nats_per_dim"])
  return out


def samples_figure(workdir, samples, num_levels):
  from experiments._plot import plt

  rows = len(samples)
  cols = max(len(s) for s in samples.values())
  fig, axes = plt.subplots(
    rows, cols, figsize=(0.8 * cols + 1.5, 0.9 * rows), squeeze=False
  )
  for r, (title, imgs) in enumerate(samples.items()):
    for c in range(cols):
      ax = axes[r, c]
      ax.axis("off")
      if c < len(imgs):
        ax.imshow(imgs[c], cmap="gray_r", vmin=0, vmax=num_levels - 1)
    axes[r, 0].set_title(title, fontsize=7, loc="left")
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "samples.png"), dpi=100)


def curves_figure(workdir, vector_results):
  from experiments._plot import plt

  fig, ax = plt.subplots(figsize=(5, 3.5))
  for linear, r in vector_results.items():
    if r["curve"]:
      steps, bpd = zip(*r["curve"])
      ax.plot(steps, bpd, marker="o", label=linear)
  ax.set(xlabel="step", ylabel="test bits/dim", title="Vector flow on digits")
  ax.legend(fontsize=8)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "curves.png"), dpi=110)


# ------------------------------------------------------------------ run ---


def run(config, workdir) -> dict:
  with single_threaded_blas():
    return _run(config, workdir)


def _run(config, workdir) -> dict:
  check_config(config)
  # The user's images are read and checked before the workdir is written.
  images = dict(zip(("train", "test"), load_images(config)))
  train_lib.prepare_run(workdir, config)
  num_dims, k = int(np.prod(images["train"].shape[1:])), config.data.num_levels
  results = {
    # A uniform density on [0, 1)^D: the bookkeeping anchor log2(K).
    "uniform_bpd": float(flows.bits_per_dim(0.0, num_dims, k)),
    "num_train": len(images["train"]),
    "num_test": len(images["test"]),
  }
  samples = {}
  for part in ("vector", "image"):
    if config[part].enabled:
      out, drawn = run_digits(config, workdir, part, images)
      results[part], samples = out, {**samples, **drawn}
      # Test bits/dim minus the dense layer's, paired per seed (same seed,
      # same data order and dequantisation noise): the mean and its t band
      # over seeds (no band from one seed). The permutation row: how much
      # learned mixing is worth here (a fixed permutation has no mixing
      # parameters).
      for other in ("cd", "permutation"):
        if other in out and "dense" in out:
          results[f"{part}_{other}_minus_dense_bpd"] = stats.band(
            np.subtract(
              out[other]["test_bpd_by_seed"], out["dense"]["test_bpd_by_seed"]
            )
          )
      if part == "vector":
        results["best_vector_test_bpd"] = min(
          r["test_bpd"] for r in out.values()
        )
  if config.periodic.enabled:
    results["periodic"] = run_periodic(config, workdir)
    if cd := results["periodic"].get("cd"):
      results["periodic_cd_gap"] = cd["gap_nats_per_dim"]
  if samples:
    results["samples_figure"] = "samples.png"
  if "vector" in results:
    results["curves_figure"] = "curves.png"
  results = train_lib.write_results(workdir, results)
  if samples:
    train_lib.draw_figure(samples_figure, workdir, samples, k)
  if "vector" in results:
    train_lib.draw_figure(curves_figure, workdir, results["vector"])
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
