"""DPO with diverse values: the samples-per-value law Q*(K) (Im & Li, NeurIPS 2025).

"Can DPO Learn Diverse Human Values? A Theoretical Scaling Law" (Shawn Im,
Sharon Li; arXiv 2408.03459): with preferences from K values, last-layer DPO
keeps its generalisation error fixed only if the samples per value grow as
Q = Theta(log K), a statement about the worst value's error (the theorems'
union bounds over values). The measurement is `lib.alignment.scaling`.

The default is the paper's data model (Sec. 3, Thm 4.2/4.3, App. B; spec
extended_papers.md 4, "Correction"; `lib.alignment.value_pairs`): value k
owns tokens (2k, 2k+1), embeddings N(+-c_k + b, v^2 I), Q pairs of each sign
per value, T proportional to K (`config.time_grows_with_k`); W trained from
W_ref by full-batch GD or Adam on the mean DPO loss; each value's accuracy is
exact. For every K, seed and Q: the mean and the worst accuracy over values,
Q* of each, and the fits Q* = a + b log K and a' + b' K per seed.
`:quick,shared`: one Yes/No pair for every value (V = 2, the official code's
empirical setup), g = mu_k + b nu_k + noise, a fixed T, sampled test pairs.
`:quick,llama` (shared tokens): g read off the tiny Llama trained first on a
concept task (`lib.alignment.concept_sequences`); value k is concept k.

Each K is one `lib.train.run_sweep` over (optimizer, seed, Q), one program;
Q < Q_max masks the rows past Q of each cluster. Reruns resume.

Run: python -m experiments.dpo_diversity --config configs/dpo_diversity.py:quick \
  --workdir runs/dpo_diversity
"""

import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from experiments import _checks
from experiments import _cli
from lib import alignment
from lib import models
from lib import train as train_lib
from lib.core import errors
from lib.core import rng

OPTIMIZERS = ("gd", "adam")
EMBEDDINGS = ("synthetic", "llama")
DATA_MODELS = ("paper", "shared_tokens")
DRAW_COMPILE = {"xla_backend_optimization_level": 1}


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  # T per run (x K with time_grows_with_k): 0 steps would train nothing and
  # fail late on the phase's checkpoint_every.
  _checks.integer(config.train.num_steps, "config.train.num_steps")
  _checks.integers(config.num_clusters, "config.num_clusters")
  _checks.integers(config.per_cluster, "config.per_cluster")
  q = config.per_cluster
  if list(q) != sorted(set(q)):
    raise errors.ConfigError(
      f"config.per_cluster must be strictly increasing, got {q}"
    )
  if config.fixed_q not in q:
    raise errors.ConfigError(
      f"config.fixed_q={config.fixed_q} is not in config.per_cluster"
    )
  _checks.integer(config.dim, "config.dim", minimum=2)
  for key in ("test_per_cluster", "seeds"):
    _checks.integer(config[key], f"config.{key}")
  for key in ("mean_scale", "offset", "noise", "ref_scale", "gd_lr", "adam_lr"):
    _checks.number(config[key], f"config.{key}", at_least=0)
  _checks.one_of(config.data_model, DATA_MODELS, "config.data_model")
  _checks.one_of(
    config.time_grows_with_k, (True, False), "config.time_grows_with_k"
  )
  kmax = max(config.num_clusters)
  if config.data_model == "paper" and config.dim < kmax + 1:
    raise errors.ConfigError(
      f"config.dim={config.dim}: {kmax} orthonormal value directions beside "
      f"the offset need config.dim >= {kmax + 1}"
    )
  try:
    alignment.check_beta(config.beta)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"config.beta: {e}") from None
  _checks.one_of(config.loss, alignment.LOSSES, "config.loss")
  _checks.names(config.optimizers, OPTIMIZERS, "config.optimizers")
  _checks.fraction(config.target_accuracy, "config.target_accuracy")
  _checks.one_of(config.embeddings, EMBEDDINGS, "config.embeddings")
  if config.embeddings != "llama":
    return
  c = config.llama
  if config.data_model != "shared_tokens":
    raise errors.ConfigError(
      "config.embeddings='llama' reads a Yes/No stance: it needs "
      f"config.data_model='shared_tokens', got {config.data_model!r}"
    )
  for key in ("d_model", "n_layers", "n_heads", "mlp_hidden", "seq_len"):
    _checks.integer(c[key], f"config.llama.{key}", minimum=2)
  _checks.integer(c.steps, "config.llama.steps")
  _checks.multiple_of(c.steps, config.train.log_every, "config.llama.steps")
  _checks.fraction(c.purity, "config.llama.purity", closed=True)
  errors.check(
    c.d_model % c.n_heads == 0 and c.d_model // c.n_heads % 2 == 0,
    errors.ConfigError,
    f"config.llama.d_model={c.d_model} must split into "
    f"config.llama.n_heads={c.n_heads} heads of an even size",
  )
  if config.dim != c.d_model:
    raise errors.ConfigError(
      f"config.dim={config.dim} must equal config.llama.d_model={c.d_model} "
      "(the embedding width is the model's)"
    )
  if 2 * c.subset > c.filler_vocab:
    raise errors.ConfigError(
      f"config.llama.subset={c.subset}: two subsets need "
      f"config.llama.filler_vocab >= {2 * c.subset}"
    )


def train_concept_lm(config, workdir):
  """The tiny Llama trained on the concept task; returns an embedding fn.

  Returns (embed, world): embed(tokens [N, L]) -> [N, d] final normed hidden
  states at the last position (jitted); world: the concepts' filler subsets.
  """
  c, kmax = config.llama, max(config.num_clusters)
  key = rng.stream(rng.root_key(config.train.seed), "concept_world")
  world = alignment.concept_world(key, kmax, c.filler_vocab, c.subset)
  sizes = ("d_model", "n_layers", "n_heads", "mlp_hidden")
  llama = models.Llama(
    models.LlamaConfig(
      vocab_size=kmax + c.filler_vocab,
      max_len=c.seq_len,
      linear="dense",
      **{k: c[k] for k in sizes},
    )
  )

  def batch_fn(data, key, step):
    del step
    k_c, k_s, k_t = jax.random.split(key, 3)
    concepts = jax.random.randint(k_c, (c.batch_size,), 0, kmax)
    stance = jax.random.rademacher(k_s, (c.batch_size,))
    return alignment.concept_sequences(
      k_t, data["world"], concepts, stance, c.seq_len, c.filler_vocab, c.purity
    )

  def loss_fn(params, tokens, key):
    del key
    logits = llama.apply(params, tokens[:, :-1])
    return models.next_token_loss(logits, tokens[:, 1:]), {}

  init_fn = lambda k: llama.init(k, np.zeros((1, c.seq_len), np.int32))
  task = train_lib.Task(init_fn, loss_fn, batch_fn, data={"world": world})
  config_lm = train_lib.phase_config(config.train, c.steps)
  name = "dpo_diversity/concept_lm"
  state, _ = train_lib.fit(
    task, optax.adam(c.lr), workdir=workdir, config=config_lm, name=name
  )

  @jax.jit
  def embed(tokens):
    _, inter = llama.apply(
      state.params,
      tokens,
      capture_intermediates=lambda m, _: m.name == "final_norm",
      mutable=["intermediates"],
    )
    return inter["intermediates"]["final_norm"]["__call__"][0][:, -1]

  return embed, world


def vocab_size(config, num_clusters: int) -> int:
  """V: a token pair per value in the paper model, one shared pair otherwise."""
  return 2 * num_clusters if config.data_model == "paper" else 2


def steps(config, num_clusters: int) -> int:
  """T for K values: train.num_steps, times K when time grows with K."""
  scale = num_clusters if config.time_grows_with_k else 1
  return config.train.num_steps * scale


def make_data(config, num_clusters: int, lm=None) -> dict:
  """Train and test pairs and W_ref [S, ...], one draw per seed (one program).

  Seed s's draw comes from the named stream ("seed", s), the same for every
  K. The paper model: `alignment.value_model` (test: the 2K cluster means,
  their accuracy exact). Shared tokens: `alignment.shared_token_model`, or,
  with lm = (embed, world) of `train_concept_lm`, `alignment.concept_pairs`.
  """
  qmax, n_test, c = max(config.per_cluster), config.test_per_cluster, config
  shape = (vocab_size(config, num_clusters), config.dim)

  def one(seed):
    key = rng.stream(rng.root_key(config.train.seed), "seed", seed)
    sizes = (num_clusters, c.dim, qmax)
    if config.data_model == "paper":
      train, test = alignment.value_model(
        key, *sizes, offset=c.offset, noise=c.noise
      )
    elif lm is not None:
      text = (c.llama.seq_len, c.llama.filler_vocab, c.llama.purity)
      pairs = lambda name, n: alignment.concept_pairs(
        rng.stream(key, name), *lm, num_clusters, n, *text
      )
      train, test = pairs("train", qmax), pairs("test", n_test)
    else:
      train, test = alignment.shared_token_model(
        key, *sizes, n_test, mean_scale=c.mean_scale, noise=c.noise
      )
    w_ref = c.ref_scale * jax.random.normal(rng.stream(key, "w_ref"), shape)
    return {"train": train, "test": test, "w_ref": w_ref}

  # Run once per K: on CPU, XLA's backend level 1 compiles it ~3x faster
  # and draws the default level's bits (each K of :quick, ,shared, ,llama).
  cpu = jax.default_backend() == "cpu"
  draw = jax.jit(jax.vmap(one), compiler_options=DRAW_COMPILE if cpu else None)
  return jax.device_get(draw(jnp.arange(config.seeds)))


def train_k(config, num_clusters: int, workdir: str, lm=None):
  """Mean and worst value accuracy [O, S, Q] and divergence, at K values.

  One `lib.train.run_sweep` over (optimizer, seed, Q), one program: member
  (o, s, Q) trains W from seed s's W_ref on the first Q pairs of each cluster
  of seed s's draw (so the Q's of a seed are nested subsets of one draw).
  Every member carries every optimizer's state and applies its own's update
  (the optimizers' states differ in shape, so one program needs them all).
  On CPU the members step one after the other (`vectorize=False`): vmapped,
  every step gathered each member's own copy of its seed's pairs (140 x 2 MB
  at K = 32); in turn, each reads its seed's slice. The same bits, less CPU.
  An accelerator keeps them vmapped (in parallel).
  """
  data = make_data(config, num_clusters, lm)
  train = data["train"]  # inputs checked once on the host
  alignment.check_pairs(
    data["w_ref"][0], train["g"][0], train["y_w"][0], train["y_l"][0]
  )
  opts, seeds, qs = config.optimizers, range(config.seeds), config.per_cluster
  names = [
    f"{o}/seed{s}/q{q}" for o, s, q in itertools.product(opts, seeds, qs)
  ]
  settings = train_lib.sweep_grid(names, opt=range(len(opts)), seed=seeds, q=qs)
  lrs = {"gd": (optax.sgd, config.gd_lr), "adam": (optax.adam, config.adam_lr)}
  txs = [lrs[name][0](lrs[name][1]) for name in opts]
  beta, kind = float(config.beta), config.loss
  paper = config.data_model == "paper"
  rows = 2 if paper else 1  # rows a pair of the Q's unit (paper: 2 signs)

  def loss_fn(w, w_ref, train, mask):
    if paper:  # value k's 2Q_max rows use tokens (2k, 2k+1): no gathers.
      args = (train["g"], train["sign"], beta, kind, mask)
      return alignment.value_block_loss(w, w_ref, *args)
    args = (train["g"], train["y_w"], train["y_l"], beta, kind, mask)
    return alignment.loss(w, w_ref, *args)

  def init_one(key, setting):
    del key
    w = jnp.asarray(data["w_ref"])[setting["seed"]]
    return {"w": w, "opt": tuple(tx.init(w) for tx in txs)}

  def step_one(member, d, key, step, setting):
    del key, step
    d = jax.tree.map(lambda x: x[setting["seed"]], d)
    qmax = rows * max(qs)
    mask = alignment.first_q_mask(num_clusters, qmax, rows * setting["q"])
    w = member["w"]
    value, grad = jax.value_and_grad(loss_fn)(w, d["w_ref"], d["train"], mask)
    moves = [tx.update(grad, o, w) for tx, o in zip(txs, member["opt"])]
    update = jnp.stack([u for u, _ in moves])[setting["opt"]]
    w, opt = optax.apply_updates(w, update), tuple(o for _, o in moves)
    grad_norm = jnp.sqrt(jnp.sum(grad**2))
    return {"w": w, "opt": opt}, {"loss": value, "grad_norm": grad_norm}

  def eval_one(member, d, setting):
    d = jax.tree.map(lambda x: x[setting["seed"]], d)
    noise = config.noise if paper else None  # paper: exact accuracy
    acc = alignment.value_accuracy(
      member["w"], d["w_ref"], d["test"], num_clusters, beta=beta, noise=noise
    )
    return {"test_accuracy": acc.mean(), "worst_value_accuracy": acc.min()}

  result = train_lib.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=workdir,
    config=train_lib.phase_config(config.train, steps(config, num_clusters)),
    data=data,
    eval_one=eval_one,
    name=f"dpo_diversity/K{num_clusters}",
    vectorize=jax.default_backend() != "cpu",
  )
  # float32 as the model computed them (the rows hold them as float64).
  mean = result.final("test_accuracy").astype(np.float32)
  worst = result.final("worst_value_accuracy").astype(np.float32)
  return mean, worst, result.diverged


def figures(workdir, config, summary) -> None:
  from experiments._plot import plt

  opts, ks = list(summary), np.asarray(config.num_clusters, np.float64)
  size = dict(figsize=(5 * len(opts), 3.6), squeeze=False)
  styles = {"mean": dict(marker="o", ms=3), "worst": dict(ls=":", lw=1)}
  fig, axes = plt.subplots(1, len(opts), **size)
  for ax, opt in zip(axes[0], opts):
    for i, k in enumerate(config.num_clusters):
      for which, style in styles.items():
        acc = summary[opt][which]["accuracy"][f"K{k}"]
        ax.semilogx(config.per_cluster, acc, color=f"C{i}", **style)
      ax.plot([], [], color=f"C{i}", label=f"K={k}")
    ax.plot([], [], color="k", label="mean over values")
    ax.plot([], [], color="k", ls=":", label="worst value")
    ax.axhline(config.target_accuracy, color="gray", ls=":", lw=1)
    ax.set(xlabel="Q (pairs per cluster)", ylabel="test reward accuracy")
    ax.set_title(f"last-layer DPO ({config.data_model}), {opt}")
    ax.legend(fontsize=7)
  fig.tight_layout()
  path = os.path.join(workdir, "accuracy_vs_q.png")
  train_lib.save_figure(fig, path, dpi=120)

  fig, axes = plt.subplots(1, len(opts), **size)
  grid = np.geomspace(ks.min(), ks.max(), 100)
  for ax, opt in zip(axes[0], opts):
    for which, color in (("mean", "C0"), ("worst", "C3")):
      q = summary[opt][which]["q_star"]
      mean, lo, hi = (
        np.array([q[f"K{int(k)}"][f] for k in ks]) for f in ("mean", "lo", "hi")
      )
      ok = np.isfinite(lo) & np.isfinite(hi)
      err = [mean[ok] - lo[ok], hi[ok] - mean[ok]]
      label = "Q*, mean over values" if which == "mean" else "Q*, worst value"
      marks = dict(fmt="o", color=color, ms=4, capsize=2, label=label)
      ax.errorbar(ks[ok], mean[ok], yerr=err, **marks)
      fit = alignment.fit_law(ks, mean)  # the two laws on the seed-mean Q*
      if np.isfinite(fit["b"]):
        ax.plot(grid, fit["a"] + fit["b"] * np.log(grid), color=color, lw=1)
        lin = fit["a_lin"] + fit["b_lin"] * grid
        ax.plot(grid, lin, color=color, ls="--", lw=1)
    ax.plot([], [], color="k", lw=1, label="a + b log K")
    ax.plot([], [], color="k", ls="--", lw=1, label="a' + b' K")
    ax.set_xscale("log", base=2)
    ylabel = f"Q* (accuracy {config.target_accuracy})"
    ax.set(xlabel="K (values)", ylabel=ylabel)
    ax.set_title(f"{opt} ({config.data_model}; seed mean, 95 % band)")
    ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "qstar_vs_k.png"), dpi=120)


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  lm = None
  if config.embeddings == "llama":
    lm = train_concept_lm(config, os.path.join(workdir, "concept_lm"))
  ks = config.num_clusters
  sweep = train_lib.Sweep(len(ks), name="dpo_diversity")
  per_k = []  # (mean, worst [O, S, Q], diverged) per K
  for k in ks:
    with sweep.run(f"K={k}"):
      per_k.append(train_k(config, k, os.path.join(workdir, f"K{k}"), lm))
  summary = {}
  for o, opt in enumerate(config.optimizers):
    summary[opt] = {}
    for i, which in enumerate(("mean", "worst")):
      acc = np.stack([out[i][o] for out in per_k], axis=1)  # [S, K, Q]
      q, target = config.per_cluster, config.target_accuracy
      s = alignment.scaling_law(ks, q, acc, target, config.fixed_q)
      summary[opt][which] = s
      logging.info(
        "%s, %s value: Q* = %s; b (log K) = %.3g [%.3g, %.3g]; "
        "SSE(lin) - SSE(log) = %.3g",
        *(opt, which, {k: round(v["mean"], 2) for k, v in s["q_star"].items()}),
        *(s["fit_b"][x] for x in ("mean", "lo", "hi")),
        s["sse_lin_minus_log"]["mean"],
      )
  finite = all(
    np.isfinite(mean).all() and np.isfinite(worst).all() and not diverged.any()
    for mean, worst, diverged in per_k
  )
  results = {
    **summary,
    "finite": bool(finite),
    "setting": {
      "data_model": config.data_model,
      "num_clusters": list(ks),
      "per_cluster": list(config.per_cluster),
      "target_accuracy": config.target_accuracy,
      "steps": {f"K{k}": steps(config, k) for k in ks},
      "embeddings": config.embeddings,
    },
  }
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figures, workdir, config, summary)
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
