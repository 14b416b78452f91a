"""CDFlow density estimation: linear-mixing layers compared at equal depth.

Three parts (spec A, experiments E2-E4):
  * vector: RealNVP-style flow on the 64-dim digits, K steps of [actnorm ->
    linear -> affine coupling] with linear in {dense, cd (m=2), cd3, lu,
    permutation, identity}; test bits/dim, parameters, step time.
  * image: multi-scale Glow-style flow on 8x8x1 digits (squeeze/split, CD as
    the 1x1 channel mixing) for cd vs dense vs lu.
  * periodic: stationary Gaussian process on a ring (circulant covariance),
    whose optimal expected NLL is 1/2 sum_k log(2 pi e lambda_k); flows of
    [actnorm -> linear] steps, CD vs LU, evaluated exactly (the flow is
    affine, so its expected NLL under the true Gaussian is closed-form).

Figures: samples per layer type, learning curves (test bits/dim vs step).

Run: python -m experiments.cdflow_density --config configs/cdflow_density.py:quick \
  --workdir runs/cdflow_density

References:
  Feng & Liao, "CDFlow: Building Invertible Layers with Circulant and Diagonal
  Matrices", NeurIPS 2025 (arXiv:2510.25323), Sec. 4, App. A.
"""

import math
import os

import jax
import jax.numpy as jnp
import ml_collections
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
from lib.core.threads import single_threaded_blas
from lib.data.digits import load_digits
from lib.data.digits import split_indices

# -------------------------------------------------------------- checks ---


def _is_cd(name: str) -> bool:
  """'cd<m>' with m >= 1 diagonal factors (e.g. 'cd3'); 'cd' is in LINEAR_KINDS."""
  return name.startswith("cd") and name[2:].isdigit() and int(name[2:]) >= 1


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
  parts = {"vector": config.vector, "image": config.image}
  parts["periodic"] = config.periodic
  for part, c in parts.items():
    if not c.enabled:
      continue
    _checks.names(
      c.linears, flows.LINEAR_KINDS, f"config.{part}.linears", match=_is_cd
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


# ---------------------------------------------------------------- data ---


def load_images(config) -> tuple[np.ndarray, np.ndarray]:
  """(train, test) integer-level images (N, H, W, C) as float32."""
  d = config.data
  if d.images_npy:
    if not os.path.exists(d.images_npy):
      raise errors.ConfigError(f"data.images_npy {d.images_npy!r} not found")
    images = np.load(d.images_npy).astype(np.float32)
    if images.ndim == 3:
      images = images[..., None]
    if images.ndim != 4:
      raise errors.ShapeError(
        f"data.images_npy must hold (N, H, W) or (N, H, W, C), got "
        f"{images.shape}"
      )
    if not np.all(np.isfinite(images)):
      raise errors.NonFiniteError("data.images_npy has non-finite entries")
    if images.min() < 0 or images.max() > d.num_levels - 1:
      raise errors.ConfigError(
        f"data.images_npy values must lie in [0, {d.num_levels - 1}] "
        f"(data.num_levels={d.num_levels}); got [{images.min()}, "
        f"{images.max()}]"
      )
  else:
    images = load_digits()[0][..., None]
  train_idx, test_idx = split_indices(
    len(images), test_fraction=d.test_fraction, seed=d.split_seed
  )
  return images[train_idx], images[test_idx]


def preprocess(config, y, event_ndims):
  """Dequantised y in [0,1) -> flow input and its log-det per example."""
  alpha = config.data.logit_alpha
  if alpha <= 0:
    return y, jnp.zeros(y.shape[: y.ndim - event_ndims], y.dtype)
  return flows.logit_transform(y, alpha, event_ndims)


def postprocess(config, x):
  """Flow output -> image levels in [0, num_levels - 1] (for figures)."""
  alpha = config.data.logit_alpha
  y = flows.inverse_logit_transform(x, alpha) if alpha > 0 else x
  return jnp.clip(
    jnp.floor(y * config.data.num_levels), 0, config.data.num_levels - 1
  )


# ------------------------------------------------------ digits training ---


def make_optimizer(o, num_steps):
  schedule = optax.warmup_cosine_decay_schedule(
    0.0,
    o.learning_rate,
    warmup_steps=min(o.warmup_steps, max(num_steps - 1, 1)),
    decay_steps=max(num_steps, 2),
  )
  return optax.chain(
    optax.clip_by_global_norm(o.grad_clip), optax.adam(schedule)
  )


def train_config(config, *, num_steps, seed):
  """config.train with this run's step count and seed."""
  c = ml_collections.ConfigDict(config.train.to_dict())
  c.seed = seed
  c.num_steps = num_steps
  every = c.log_every
  if 2 <= num_steps < 2 * every:  # >= 2 log lines: the first includes compile
    every = c.log_every = num_steps // 2
  c.checkpoint_every = max(every, math.ceil(num_steps / every) * every)
  if c.eval_every:
    c.eval_every = max(every, (c.eval_every // every) * every)
  return c


def density_task(config, model, train_x, test_x, *, event_ndims):
  """Maximum likelihood on dequantised digits; loss = train bits/dim."""
  d = config.data
  num_dims = int(np.prod(train_x.shape[1:]))
  batch_size = config.optim.batch_size
  init_x = train_x[: min(d.init_batch, len(train_x))]

  def bpd(params, y):
    x, ld = preprocess(config, y, event_ndims)
    return flows.bits_per_dim(
      model.log_prob(params, x) + ld, num_dims, d.num_levels
    )

  def init_fn(key):
    k_init, k_deq = jax.random.split(key)
    y = flows.uniform_dequantize(k_deq, jnp.asarray(init_x), d.num_levels)
    return model.init(k_init, preprocess(config, y, event_ndims)[0])

  def batch_fn(data, key, step):
    del step
    k_idx, k_deq = jax.random.split(key)
    idx = jax.random.randint(k_idx, (batch_size,), 0, data["train"].shape[0])
    return flows.uniform_dequantize(k_deq, data["train"][idx], d.num_levels)

  def loss_fn(params, batch, key):
    del key
    loss = jnp.mean(bpd(params, batch))
    return loss, {"train_bpd": loss}

  def eval_fn(params, data):
    # Fixed dequantisation draws so every evaluation sees the same noise.
    eval_root = rng.root_key(config.train.seed)
    draws = [
      jnp.mean(
        bpd(
          params,
          flows.uniform_dequantize(
            rng.stream(eval_root, "dequantize", i),
            data["test"],
            d.num_levels,
          ),
        )
      )
      for i in range(d.eval_draws)
    ]
    return {"test_bpd": jnp.mean(jnp.stack(draws))}

  data = {"train": train_x, "test": test_x}
  return train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)


def fit_density(
  config, model, train_x, test_x, *, event_ndims, workdir, name, num_steps, seed
):
  task = density_task(config, model, train_x, test_x, event_ndims=event_ndims)
  state, history = train_lib.fit(
    task,
    make_optimizer(config.optim, num_steps),
    workdir=workdir,
    config=train_config(config, num_steps=num_steps, seed=seed),
    name=name,
  )
  rates = [h["steps_per_sec"] for h in history[1:] if h.get("steps_per_sec")]
  curve = [(h["step"], h["test_bpd"]) for h in history if "test_bpd" in h]
  # num_steps=0 leaves one evaluation row of the initial model, no train_bpd.
  final = history[-1] if history else {}
  return state.params, {
    "test_bpd": final.get("test_bpd", float("nan")),
    "train_bpd": final.get("train_bpd", float("nan")),
    "params": num_params(state.params),
    "linear_params": 0,
    "step_ms": 1000.0 / float(np.median(rates)) if rates else float("nan"),
    "curve": curve,
  }


def draw_samples(config, model, params, temperature=0.8) -> np.ndarray:
  """Samples at a reduced temperature (Glow), as integer levels."""
  fn = jax.jit(
    lambda p, k: postprocess(
      config, model.sample(p, k, config.num_samples, temperature)
    )
  )
  key = rng.stream(rng.root_key(config.train.seed), "samples")
  return np.asarray(fn(params, key))


def linear_param_count(model, params) -> int:
  """Trainable parameters of the mixing layers (signs/permutations excluded)."""
  frozen = ("diag_sign", "perm", "sign")
  count = 0
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    keys = [getattr(k, "key", None) for k in path]
    if any(k in frozen for k in keys):
      continue
    if any(
      k
      in (
        "log_abs_diag",
        "log_abs_eig",
        "phase",
        "weight",
        "lower",
        "upper",
        "log_s",
        "diag",
        "eig_re",
        "eig_im",
      )
      for k in keys
    ):
      count += leaf.size
  return count


def run_vector(config, workdir, train_imgs, test_imgs, results, samples):
  v = config.vector
  train_x = train_imgs.reshape(len(train_imgs), -1)
  test_x = test_imgs.reshape(len(test_imgs), -1)
  out = {}
  for linear in v.linears:
    model = flows.VectorFlow(
      dim=train_x.shape[1],
      num_steps=v.num_steps,
      linear=linear,
      hidden=v.hidden,
      num_hidden_layers=v.num_hidden_layers,
    )
    runs = []
    for seed in v.seeds:
      name = f"vector_{linear}_s{seed}"
      params, r = fit_density(
        config,
        model,
        train_x,
        test_x,
        event_ndims=1,
        workdir=os.path.join(workdir, name),
        name=name,
        num_steps=config.train.num_steps,
        seed=seed,
      )
      r["linear_params"] = linear_param_count(model, params)
      runs.append(r)
      if seed == v.seeds[0]:
        samples[f"vector {linear}"] = draw_samples(
          config, model, params
        ).reshape(-1, *train_imgs.shape[1:3])
      logging.info("%s: test bpd %.4f", name, r["test_bpd"])
    bpds = [r["test_bpd"] for r in runs]
    out[linear] = {
      "test_bpd": float(np.mean(bpds)),
      "test_bpd_std": float(np.std(bpds)),
      "train_bpd": float(np.mean([r["train_bpd"] for r in runs])),
      "params": runs[0]["params"],
      "linear_params": runs[0]["linear_params"],
      "step_ms": float(np.mean([r["step_ms"] for r in runs])),
      "curve": runs[0]["curve"],
    }
  results["vector"] = out
  if "cd" in out and "dense" in out:
    results["vector_cd_minus_dense_bpd"] = (
      out["cd"]["test_bpd"] - out["dense"]["test_bpd"]
    )
  results["best_vector_test_bpd"] = min(r["test_bpd"] for r in out.values())


def run_image(config, workdir, train_imgs, test_imgs, results, samples):
  im = config.image
  out = {}
  for linear in im.linears:
    model = flows.ImageFlow(
      image_shape=tuple(train_imgs.shape[1:]),
      num_levels=im.num_levels,
      num_steps=im.num_steps,
      linear=linear,
      hidden=im.hidden,
      learned_prior=im.learned_prior,
    )
    name = f"image_{linear}"
    params, r = fit_density(
      config,
      model,
      train_imgs,
      test_imgs,
      event_ndims=3,
      workdir=os.path.join(workdir, name),
      name=name,
      num_steps=im.train_steps,
      seed=config.train.seed,
    )
    r["linear_params"] = linear_param_count(model, params)
    samples[f"image {linear}"] = draw_samples(config, model, params)[..., 0]
    r.pop("curve")
    out[linear] = r
    logging.info("%s: test bpd %.4f", name, r["test_bpd"])
  results["image"] = out
  if "cd" in out and "dense" in out:
    results["image_cd_minus_dense_bpd"] = (
      out["cd"]["test_bpd"] - out["dense"]["test_bpd"]
    )


# ------------------------------------------------------- periodic proxy ---


def ring_covariance(p) -> np.ndarray:
  """Circulant covariance of a periodic RBF kernel on n points of a ring."""
  n = p.n
  dist = np.arange(n) / n
  col = np.exp(-2 * np.sin(np.pi * dist) ** 2 / p.lengthscale**2)
  col[0] += p.noise
  idx = (np.arange(n)[:, None] - np.arange(n)[None, :]) % n
  return col[idx]


def gaussian_optimum_nats_per_dim(cov) -> float:
  """Entropy of N(0, cov) per dim = 1/2 mean_k log(2 pi e lambda_k)."""
  lam = np.real(np.fft.fft(cov[:, 0]))  # circulant eigenvalues
  return float(0.5 * np.mean(np.log(2 * np.pi * np.e * lam)))


def expected_nll_per_dim(bij, params, cov) -> jax.Array:
  """E_{x ~ N(0, cov)}[-log q(x)] / n for the affine flow x = A z + b."""
  n = cov.shape[0]
  b = bij.forward(params, jnp.zeros((1, n)))[0]
  a = jax.jacfwd(lambda z: bij.forward(params, z[None])[0])(jnp.zeros(n))
  s = a @ a.T
  _, logdet = jnp.linalg.slogdet(2 * jnp.pi * s)
  quad = jnp.trace(jnp.linalg.solve(s, cov)) + b @ jnp.linalg.solve(s, b)
  return 0.5 * (quad + logdet) / n


def run_periodic(config, workdir, results):
  p = config.periodic
  cov = ring_covariance(p)
  chol = np.linalg.cholesky(cov).astype(np.float32)
  optimum = gaussian_optimum_nats_per_dim(cov)
  out = {"optimum_nats_per_dim": optimum}
  for linear in p.linears:
    layers = []
    for _ in range(p.num_steps):
      layers += [
        flows.ActNorm(num_channels=p.n),
        flows.make_linear(linear, p.n),
      ]
    bij = flows.chain(layers)

    def sample(key, num):
      return jax.random.normal(key, (num, p.n)) @ chol.T

    def init_fn(key, bij=bij):
      k1, k2 = jax.random.split(key)
      return bij.init(k1, sample(k2, 4 * p.batch_size))

    def batch_fn(data, key, step):
      del data, step
      return sample(key, p.batch_size)

    def loss_fn(params, batch, key, bij=bij):
      del key
      z, ld = bij.inverse_and_log_det(params, batch)
      nll = -jnp.mean(flows.standard_normal_log_prob(z, 1) + ld) / p.n
      return nll, {}

    def eval_fn(params, data, bij=bij):
      del data
      return {"expected_nll": expected_nll_per_dim(bij, params, cov)}

    task = train_lib.Task(init_fn, loss_fn, batch_fn, {}, eval_fn)
    opt = config.optim.copy_and_resolve_references()
    opt.learning_rate = p.learning_rate
    state, history = train_lib.fit(
      task,
      make_optimizer(opt, p.train_steps),
      workdir=os.path.join(workdir, f"periodic_{linear}"),
      config=train_config(
        config, num_steps=p.train_steps, seed=config.train.seed
      ),
      name=f"periodic_{linear}",
    )
    exact = float(expected_nll_per_dim(bij, state.params, cov))
    test = sample(
      rng.stream(rng.root_key(config.train.seed), "periodic_test"), p.num_test
    )
    z, ld = bij.inverse_and_log_det(state.params, test)
    test_nll = float(-jnp.mean(flows.standard_normal_log_prob(z, 1) + ld) / p.n)
    out[linear] = {
      "expected_nll": exact,
      "gap_nats_per_dim": exact - optimum,
      "test_nll": test_nll,
      "params": num_params(state.params),
    }
    logging.info("periodic %s: gap %.5f nats/dim", linear, exact - optimum)
  results["periodic"] = out
  if "cd" in out:
    results["periodic_cd_gap"] = out["cd"]["gap_nats_per_dim"]


# -------------------------------------------------------------- figures ---


def samples_figure(path, samples, num_levels):
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
  train_lib.save_figure(fig, path, dpi=100)


def curves_figure(path, vector_results):
  from experiments._plot import plt

  fig, ax = plt.subplots(figsize=(5, 3.5))
  for linear, r in vector_results.items():
    if r["curve"]:
      steps, bpd = zip(*r["curve"])
      ax.plot(steps, bpd, marker="o", label=linear)
  ax.set_xlabel("step")
  ax.set_ylabel("test bits/dim")
  ax.set_title("Vector flow on digits")
  ax.legend(fontsize=8)
  fig.tight_layout()
  train_lib.save_figure(fig, path, dpi=110)


# ------------------------------------------------------------------ run ---


def run(config, workdir) -> dict:
  with single_threaded_blas():
    return _run(config, workdir)


def _run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  train_imgs, test_imgs = load_images(config)
  num_dims = int(np.prod(train_imgs.shape[1:]))
  results = {
    # A uniform density on [0, 1)^D: the bookkeeping anchor log2(K).
    "uniform_bpd": float(
      flows.bits_per_dim(0.0, num_dims, config.data.num_levels)
    ),
    "num_train": len(train_imgs),
    "num_test": len(test_imgs),
  }
  samples = {}
  if config.vector.enabled:
    run_vector(config, workdir, train_imgs, test_imgs, results, samples)
  if config.image.enabled:
    run_image(config, workdir, train_imgs, test_imgs, results, samples)
  if config.periodic.enabled:
    run_periodic(config, workdir, results)
  if samples:
    results["samples_figure"] = "samples.png"
    samples_figure(
      os.path.join(workdir, "samples.png"), samples, config.data.num_levels
    )
  if "vector" in results:
    results["curves_figure"] = "curves.png"
    curves_figure(os.path.join(workdir, "curves.png"), results["vector"])
  _log_table(results)
  return train_lib.write_results(workdir, results)


def _log_table(results):
  for part in ("vector", "image"):
    for linear, r in results.get(part, {}).items():
      logging.info(
        "%-6s %-12s test bpd %.4f  params %7d  linear params %6d  %.2f ms/step",
        part,
        linear,
        r["test_bpd"],
        r["params"],
        r["linear_params"],
        r["step_ms"],
      )


if __name__ == "__main__":
  _cli.main(run, check=check_config)
