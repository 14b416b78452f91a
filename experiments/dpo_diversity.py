"""DPO with diverse values: the samples-per-value law Q*(K) (Im & Li, NeurIPS 2025).

"Can DPO Learn Diverse Human Values? A Theoretical Scaling Law" (Shawn Im,
Sharon Li; arXiv 2408.03459): with preferences drawn from K value clusters,
last-layer DPO keeps its generalisation error fixed only if the number of
samples per value grows as Q = Theta(log K). K enters the theorems through
union bounds over the values, so the quantity that needs Q = Theta(log K) is
the worst value's error (every value right), not the mean error.

The default is the paper's data model (Sec. 3, Lemma 4.1, Thm 4.2/4.3,
App. B; spec extended_papers.md 4, "Correction"; `lib.alignment.value_pairs`):
value k has its own token pair (2k, 2k+1) of a vocabulary of 2K, embeddings
N(+-c_k + b, v^2 I) around orthonormal c_k with a shared offset b, Q pairs of
each sign per value, and T proportional to K (`config.time_grows_with_k`).
The last-layer policy logits = W g, W trained from W_ref by full-batch GD or
Adam on the mean DPO loss; each value's test accuracy is exact (Gaussian
clusters: `lib.alignment.population_accuracy`). For every K, seed and Q: the
mean and the worst accuracy over the values; Q* = the smallest Q reaching
`target_accuracy` (interpolated on log Q), for the mean and for the worst
value; fits Q* = a + b log K and Q* = a' + b' K per seed, for both.

Shared-token mode (`configs/dpo_diversity.py:quick,shared`): the earlier
simulation, one Yes/No pair for every value (V = 2; as the official code's
empirical setup with real LLM embeddings, not the theorems' setting): g =
mu_k + b nu_k + noise eps, a fixed T, test accuracy on sampled test pairs.
All values then feed one weight difference, and the other values' test noise
caps the reachable accuracy as K grows. Same summaries, same keys.

Llama mode (`configs/dpo_diversity.py:quick,llama`, shared tokens): the
embeddings g are read off the project's tiny Llama (its final normed hidden
state at the last token), trained first on a synthetic concept task
(`lib.alignment.concept_sequences`: a concept token, then fillers whose
distribution carries the concept and a +-1 stance); value k is concept k and
the preferred token is the stance. Same sweep, same fits.

Each (optimizer, K) is one `lib.train.train` run whose state stacks every
(seed, Q) pair (vmapped; Q < Q_max masks the rows past Q of each cluster, so
the Q's of one seed are nested subsets of one draw). Reruns resume.

Run: python -m experiments.dpo_diversity --config configs/dpo_diversity.py:quick \
  --workdir runs/dpo_diversity
"""

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
from lib.core import stats

OPTIMIZERS = ("gd", "adam")
EMBEDDINGS = ("synthetic", "llama")
DATA_MODELS = ("paper", "shared_tokens")


def check_config(config) -> None:
  """Fails at once, naming the key, on a value this experiment cannot run."""
  _checks.integers(config.num_clusters, "config.num_clusters")
  _checks.integers(config.per_cluster, "config.per_cluster")
  errors.check(
    list(config.per_cluster) == sorted(set(config.per_cluster)),
    errors.ConfigError,
    f"config.per_cluster must be strictly increasing, got {config.per_cluster}",
  )
  errors.check(
    config.fixed_q in config.per_cluster,
    errors.ConfigError,
    f"config.fixed_q={config.fixed_q} is not in config.per_cluster",
  )
  _checks.integer(config.dim, "config.dim", minimum=2)
  _checks.integer(config.test_per_cluster, "config.test_per_cluster")
  _checks.integer(config.seeds, "config.seeds")
  keys = ("mean_scale", "offset", "noise", "ref_scale", "gd_lr", "adam_lr")
  for key in keys:
    _checks.number(config[key], f"config.{key}", at_least=0)
  _checks.one_of(config.data_model, DATA_MODELS, "config.data_model")
  errors.check(
    isinstance(config.time_grows_with_k, bool),
    errors.ConfigError,
    f"config.time_grows_with_k must be True or False, got "
    f"{config.time_grows_with_k!r}",
  )
  if config.data_model == "paper":
    errors.check(
      config.dim >= max(config.num_clusters) + 1,
      errors.ConfigError,
      f"config.dim={config.dim}: {max(config.num_clusters)} orthonormal "
      f"value directions beside the offset need config.dim >= "
      f"{max(config.num_clusters) + 1}",
    )
  try:
    alignment.check_beta(config.beta)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"config.beta: {e}") from None
  _checks.one_of(config.loss, alignment.LOSSES, "config.loss")
  _checks.names(config.optimizers, OPTIMIZERS, "config.optimizers")
  _checks.fraction(config.target_accuracy, "config.target_accuracy")
  _checks.one_of(config.embeddings, EMBEDDINGS, "config.embeddings")
  if config.embeddings == "llama":
    errors.check(
      config.data_model == "shared_tokens",
      errors.ConfigError,
      "config.embeddings='llama' reads a Yes/No stance: it needs "
      f"config.data_model='shared_tokens', got {config.data_model!r}",
    )
    c = config.llama
    for key in ("d_model", "n_layers", "n_heads", "mlp_hidden", "seq_len"):
      _checks.integer(c[key], f"config.llama.{key}", minimum=2)
    _checks.integer(c.steps, "config.llama.steps")
    _checks.multiple_of(c.steps, config.train.log_every, "config.llama.steps")
    _checks.fraction(c.purity, "config.llama.purity", closed=True)
    errors.check(
      config.dim == c.d_model,
      errors.ConfigError,
      f"config.dim={config.dim} must equal config.llama.d_model={c.d_model} "
      "(the embedding width is the model's)",
    )
    if 2 * c.subset > c.filler_vocab:
      raise errors.ConfigError(
        f"config.llama.subset={c.subset}: two subsets need "
        f"config.llama.filler_vocab >= {2 * c.subset}"
      )


def _optimizer(config, name):
  if name == "gd":
    return optax.sgd(config.gd_lr)
  return optax.adam(config.adam_lr)


def train_concept_lm(config, workdir):
  """The tiny Llama trained on the concept task; returns an embedding fn.

  Returns (embed, world): embed(tokens [N, L]) -> [N, d] final normed hidden
  states at the last position (jitted); world: the concepts' filler subsets.
  """
  c = config.llama
  kmax = max(config.num_clusters)
  world = alignment.concept_world(
    rng.stream(rng.root_key(config.train.seed), "concept_world"),
    kmax,
    c.filler_vocab,
    c.subset,
  )
  llama = models.Llama(
    models.LlamaConfig(
      vocab_size=kmax + c.filler_vocab,
      d_model=c.d_model,
      n_layers=c.n_layers,
      n_heads=c.n_heads,
      mlp_hidden=c.mlp_hidden,
      max_len=c.seq_len,
      linear="dense",
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

  task = train_lib.Task(
    init_fn=lambda k: llama.init(k, np.zeros((1, c.seq_len), np.int32)),
    loss_fn=loss_fn,
    batch_fn=batch_fn,
    data={"world": world},
  )
  state, _ = train_lib.fit(
    task,
    optax.adam(c.lr),
    workdir=workdir,
    config=train_lib.phase_config(config.train, c.steps),
    name="dpo_diversity/concept_lm",
  )
  params = state.params

  @jax.jit
  def embed(tokens):
    _, inter = llama.apply(
      params,
      tokens,
      capture_intermediates=lambda m, _: m.name == "final_norm",
      mutable=["intermediates"],
    )
    return inter["intermediates"]["final_norm"]["__call__"][0][:, -1]

  return embed, world


def _lm_pairs(config, key, embed, world, num_clusters, per_cluster):
  """sample_pairs' layout with g read off the LM: cluster k = concept k."""
  c = config.llama
  k_b, k_t = jax.random.split(key)
  b = jax.random.rademacher(k_b, (num_clusters, per_cluster))
  concepts = jnp.repeat(jnp.arange(num_clusters), per_cluster)
  tokens = alignment.concept_sequences(
    k_t, world, concepts, b.reshape(-1), c.seq_len, c.filler_vocab, c.purity
  )
  y_w = jnp.where(b.reshape(-1) > 0, 0, 1).astype(jnp.int32)
  return {
    "g": embed(tokens),
    "y_w": y_w,
    "y_l": 1 - y_w,
    "cluster": concepts,
  }


def vocab_size(config, num_clusters: int) -> int:
  """V: a token pair per value in the paper model, one shared pair otherwise."""
  return 2 * num_clusters if config.data_model == "paper" else 2


def steps(config, num_clusters: int) -> int:
  """T for K values: train.num_steps, times K when time grows with K."""
  scale = num_clusters if config.time_grows_with_k else 1
  return config.train.num_steps * scale


def make_data(config, num_clusters: int, lm=None) -> dict:
  """Train and test pairs [S, ...] and the Q masks, one geometry per seed.

  The paper model: train [S, K*2Q_max] (`value_pairs`), test = the 2K cluster
  means (their accuracy is exact). Shared tokens: train [S, K*Q_max], test
  [S, K*n_test] sampled pairs. lm: (embed, world) of `train_concept_lm` in
  the llama mode, else None.
  """
  qmax = max(config.per_cluster)
  vocab = vocab_size(config, num_clusters)
  if config.data_model == "paper":

    def one_value_model(seed):
      key = jax.random.fold_in(jax.random.key(config.train.seed), seed)
      k_geo, k_train, k_ref = jax.random.split(key, 3)
      c, b = alignment.value_directions(
        k_geo, num_clusters, config.dim, config.offset
      )
      train = alignment.value_pairs(k_train, c, b, qmax, config.noise)
      # noise 0: the rows are the cluster means +-c_k + b themselves.
      means = alignment.value_pairs(k_train, c, b, 1, 0.0)
      w_ref = config.ref_scale * jax.random.normal(k_ref, (vocab, config.dim))
      return train, means, w_ref

    train, test, w_ref = jax.vmap(one_value_model)(jnp.arange(config.seeds))
    masks = jnp.stack(
      [
        alignment.first_q_mask(num_clusters, 2 * qmax, 2 * q)
        for q in config.per_cluster
      ]
    )
    return {"train": train, "test": test, "w_ref": w_ref, "masks": masks}
  if lm is not None:
    embed, world = lm
    trains, tests, refs = [], [], []
    for seed in range(config.seeds):
      key = jax.random.fold_in(jax.random.key(config.train.seed), seed)
      k_train, k_test, k_ref = jax.random.split(key, 3)
      trains.append(
        _lm_pairs(config, k_train, embed, world, num_clusters, qmax)
      )
      tests.append(
        _lm_pairs(
          config, k_test, embed, world, num_clusters, config.test_per_cluster
        )
      )
      refs.append(
        config.ref_scale * jax.random.normal(k_ref, (vocab, config.dim))
      )
    stack = lambda xs: jax.tree.map(lambda *a: jnp.stack(a), *xs)
    masks = jnp.stack(
      [
        alignment.first_q_mask(num_clusters, qmax, q)
        for q in config.per_cluster
      ]
    )
    return {
      "train": stack(trains),
      "test": stack(tests),
      "w_ref": jnp.stack(refs),
      "masks": masks,
    }

  def one(seed):
    key = jax.random.fold_in(jax.random.key(config.train.seed), seed)
    k_geo, k_train, k_test, k_ref = jax.random.split(key, 4)
    mu, nu = alignment.cluster_geometry(
      k_geo, num_clusters, config.dim, config.mean_scale
    )
    train = alignment.sample_pairs(k_train, mu, nu, qmax, config.noise)
    test = alignment.sample_pairs(
      k_test, mu, nu, config.test_per_cluster, config.noise
    )
    w_ref = config.ref_scale * jax.random.normal(k_ref, (vocab, config.dim))
    return train, test, w_ref

  train, test, w_ref = jax.vmap(one)(jnp.arange(config.seeds))
  masks = jnp.stack(
    [alignment.first_q_mask(num_clusters, qmax, q) for q in config.per_cluster]
  )
  return {"train": train, "test": test, "w_ref": w_ref, "masks": masks}


def train_k(config, optimizer: str, num_clusters: int, workdir: str, lm=None):
  """Per-value test accuracy [S, len(Q), K] after T steps, one optimizer, K."""
  data = make_data(config, num_clusters, lm)
  # Inputs checked once on the host: width, distinct tokens, ids in range.
  alignment.check_pairs(
    data["w_ref"][0],
    data["train"]["g"][0],
    data["train"]["y_w"][0],
    data["train"]["y_l"][0],
  )
  tx = _optimizer(config, optimizer)
  s, nq = config.seeds, len(config.per_cluster)
  beta, kind = float(config.beta), config.loss
  paper = config.data_model == "paper"

  def per_run_loss(w, w_ref, train, mask):
    if paper:  # value k's 2Q_max rows use tokens (2k, 2k+1): no gathers.
      r = alignment.value_block_margins(
        w,
        w_ref,
        train["g"].reshape(num_clusters, -1, config.dim),
        train["sign"].reshape(num_clusters, -1),
        beta,
      )
      return alignment.mean_loss(r.reshape(-1), beta, kind, mask)
    return alignment.loss(
      w, w_ref, train["g"], train["y_w"], train["y_l"], beta, kind, mask
    )

  def init_fn(key):
    del key
    w = jnp.repeat(data["w_ref"][:, None], nq, axis=1)  # [S, Q, V, d]
    return {"w": w, "opt": jax.vmap(jax.vmap(tx.init))(w)}

  def step_fn(state, d, key, step):
    del key, step

    def one_seed(w_q, opt_q, w_ref, train):
      def one_q(w, opt, mask):
        value, grad = jax.value_and_grad(per_run_loss)(w, w_ref, train, mask)
        updates, opt = tx.update(grad, opt, w)
        return optax.apply_updates(w, updates), opt, value, grad

      return jax.vmap(one_q)(w_q, opt_q, d["masks"])

    w, opt, value, grad = jax.vmap(one_seed)(
      state["w"], state["opt"], d["w_ref"], d["train"]
    )
    grad_norm = jnp.sqrt(jnp.sum(grad**2, axis=(-2, -1)))
    return {"w": w, "opt": opt}, {
      "loss": value.reshape(-1),
      "grad_norm": grad_norm.reshape(-1),
    }

  def value_accuracy(w, w_ref, test):
    """Accuracy of each value [K]: exact (paper) or on the test pairs."""
    if paper:
      right = alignment.population_accuracy(
        w, w_ref, test["g"], test["y_w"], test["y_l"], config.noise
      )
    else:
      r = alignment.margins(w, w_ref, test["g"], test["y_w"], test["y_l"], beta)
      right = (r > 0).astype(test["g"].dtype)
    total = jax.ops.segment_sum(right, test["cluster"], num_clusters)
    count = jax.ops.segment_sum(
      jnp.ones_like(right), test["cluster"], num_clusters
    )
    return total / count

  def accuracy(w, d):
    def one_seed(w_q, w_ref, test):
      return jax.vmap(lambda w1: value_accuracy(w1, w_ref, test))(w_q)

    return jax.vmap(one_seed)(w, d["w_ref"], d["test"])  # [S, Q, K]

  def eval_fn(state, d):
    acc = accuracy(state["w"], d)
    return {
      "test_accuracy": acc.mean(-1).reshape(-1),
      "worst_value_accuracy": acc.min(-1).reshape(-1),
    }

  runs = [f"seed{i}/q{q}" for i in range(s) for q in config.per_cluster]
  state, _ = train_lib.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=train_lib.phase_config(config.train, steps(config, num_clusters)),
    data=data,
    eval_fn=eval_fn,
    name=os.path.basename(os.path.dirname(workdir))
    + "/"
    + os.path.basename(workdir),
    runs=runs,
  )
  return np.asarray(accuracy(state["w"], data))


def q_star(per_cluster, accuracy, target: float) -> float:
  """Smallest Q with accuracy >= target, interpolated on log Q.

  Between the last grid point below the target and the first at or above it,
  log Q is interpolated linearly in accuracy. NaN when no Q reaches it.
  """
  q = np.asarray(per_cluster, np.float64)
  acc = np.asarray(accuracy, np.float64)
  hit = np.flatnonzero(acc >= target)
  if hit.size == 0:
    return float("nan")
  j = int(hit[0])
  if j == 0:
    return float(q[0])
  a0, a1 = acc[j - 1], acc[j]
  t = (target - a0) / (a1 - a0) if a1 > a0 else 1.0
  return float(np.exp(np.log(q[j - 1]) + t * (np.log(q[j]) - np.log(q[j - 1]))))


def fit_law(ks, qs) -> dict:
  """Least-squares fits Q = a + b log K and Q = a' + b' K on finite points."""
  ks, qs = np.asarray(ks, np.float64), np.asarray(qs, np.float64)
  ok = np.isfinite(qs)
  if ok.sum() < 3:
    nan = float("nan")
    return {
      "a": nan,
      "b": nan,
      "a_lin": nan,
      "b_lin": nan,
      "sse_log": nan,
      "sse_lin": nan,
      "points": int(ok.sum()),
    }
  out = {"points": int(ok.sum())}
  for name, feature in (("log", np.log(ks[ok])), ("lin", ks[ok])):
    design = np.stack([np.ones_like(feature), feature], axis=1)
    coef, *_ = np.linalg.lstsq(design, qs[ok], rcond=None)
    sse = float(np.sum((design @ coef - qs[ok]) ** 2))
    suffix = "" if name == "log" else "_lin"
    out[f"a{suffix}"], out[f"b{suffix}"] = float(coef[0]), float(coef[1])
    out[f"sse_{name}"] = sse
  return out


def law(config, curves: dict) -> dict:
  """curves[K] = accuracy [S, len(Q)] -> Q*, fits with seed bands, K trend.

  Q* per seed and K; per seed the fits Q* = a + b log K and a' + b' K and the
  difference of their residual sums of squares; `fit_change_rel`: the log-K
  fit's change from the first K to the last, b log(K_last / K_first), over
  the seed's mean finite Q* (0: flat). At `fixed_q`: the accuracy per K, the
  first K minus the last (paired per seed) and the largest rise of the seed
  mean from one K to the next (<= 0 when non-increasing).
  """
  ks = list(config.num_clusters)
  iq = list(config.per_cluster).index(config.fixed_q)
  stars = np.array(
    [
      [
        q_star(config.per_cluster, curves[k][s], config.target_accuracy)
        for k in ks
      ]
      for s in range(config.seeds)
    ]
  )  # [S, K]
  fits = [fit_law(ks, stars[s]) for s in range(config.seeds)]
  span = np.log(ks[-1] / ks[0])
  change = []
  for s, f in enumerate(fits):
    level = stars[s][np.isfinite(stars[s])]
    change.append(f["b"] * span / level.mean() if level.size else np.nan)
  at_q = np.array([curves[k][:, iq] for k in ks])  # [K, S]
  mean_k = at_q.mean(axis=1)
  return {
    "accuracy": {f"K{k}": [float(v) for v in curves[k].mean(0)] for k in ks},
    "q_star": {f"K{k}": stats.band(stars[:, i]) for i, k in enumerate(ks)},
    "q_star_reached_all": bool(np.all(np.isfinite(stars))),
    "fit_a": stats.band([f["a"] for f in fits]),
    "fit_b": stats.band([f["b"] for f in fits]),
    "fit_a_lin": stats.band([f["a_lin"] for f in fits]),
    "fit_b_lin": stats.band([f["b_lin"] for f in fits]),
    "sse_lin_minus_log": stats.band(
      [f["sse_lin"] - f["sse_log"] for f in fits]
    ),
    "fit_change_rel": stats.band(change),
    "accuracy_at_fixed_q": {
      f"K{k}": stats.band(at_q[i]) for i, k in enumerate(ks)
    },
    "first_minus_last_k": stats.band(at_q[0] - at_q[-1]),
    "max_rise_in_k": float(np.max(np.diff(mean_k))) if len(ks) > 1 else 0.0,
  }


def summarize(config, acc: dict) -> dict:
  """acc[opt][K] = per-value accuracy [S, len(Q), K] -> `law` of the mean
  over the values and of the worst value, per optimizer."""
  out = {}
  for opt, by_k in acc.items():
    out[opt] = {
      "mean": law(config, {k: a.mean(-1) for k, a in by_k.items()}),
      "worst": law(config, {k: a.min(-1) for k, a in by_k.items()}),
    }
  return out


def figures(workdir, config, summary) -> None:
  from experiments._plot import plt

  opts = list(summary)
  ks = np.asarray(config.num_clusters, np.float64)
  fig, axes = plt.subplots(
    1, len(opts), figsize=(5 * len(opts), 3.6), squeeze=False
  )
  for ax, opt in zip(axes[0], opts):
    for i, k in enumerate(config.num_clusters):
      color = f"C{i}"
      mean = summary[opt]["mean"]["accuracy"][f"K{k}"]
      worst = summary[opt]["worst"]["accuracy"][f"K{k}"]
      ax.semilogx(config.per_cluster, mean, color=color, marker="o", ms=3)
      ax.semilogx(config.per_cluster, worst, color=color, ls=":", lw=1)
      ax.plot([], [], color=color, label=f"K={k}")
    ax.plot([], [], color="k", label="mean over values")
    ax.plot([], [], color="k", ls=":", label="worst value")
    ax.axhline(config.target_accuracy, color="gray", ls=":", lw=1)
    ax.set(
      xlabel="Q (pairs per cluster)",
      ylabel="test reward accuracy",
      title=f"last-layer DPO ({config.data_model}), {opt}",
    )
    ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(
    fig, os.path.join(workdir, "accuracy_vs_q.png"), dpi=120
  )

  fig, axes = plt.subplots(
    1, len(opts), figsize=(5 * len(opts), 3.6), squeeze=False
  )
  grid = np.geomspace(ks.min(), ks.max(), 100)
  for ax, opt in zip(axes[0], opts):
    for which, color in (("mean", "C0"), ("worst", "C3")):
      q = summary[opt][which]["q_star"]
      mean = np.array([q[f"K{int(k)}"]["mean"] for k in ks])
      lo = np.array([q[f"K{int(k)}"]["lo"] for k in ks])
      hi = np.array([q[f"K{int(k)}"]["hi"] for k in ks])
      ok = np.isfinite(lo) & np.isfinite(hi)
      ax.errorbar(
        ks[ok],
        mean[ok],
        yerr=[mean[ok] - lo[ok], hi[ok] - mean[ok]],
        fmt="o",
        color=color,
        ms=4,
        capsize=2,
        label="Q*, mean over values" if which == "mean" else "Q*, worst value",
      )
      fit = fit_law(ks, mean)  # the two laws on the seed-mean Q*
      if np.isfinite(fit["b"]):
        ax.plot(grid, fit["a"] + fit["b"] * np.log(grid), color=color, lw=1)
        ax.plot(
          grid, fit["a_lin"] + fit["b_lin"] * grid, color=color, ls="--", lw=1
        )
    ax.plot([], [], color="k", lw=1, label="a + b log K")
    ax.plot([], [], color="k", ls="--", lw=1, label="a' + b' K")
    ax.set_xscale("log", base=2)
    ax.set(
      xlabel="K (values)",
      ylabel=f"Q* (accuracy {config.target_accuracy})",
      title=f"{opt} ({config.data_model}; seed mean, 95 % band)",
    )
    ax.legend(fontsize=7)
  fig.tight_layout()
  train_lib.save_figure(fig, os.path.join(workdir, "qstar_vs_k.png"), dpi=120)


def run(config, workdir) -> dict:
  check_config(config)
  train_lib.prepare_run(workdir, config)
  lm = None
  if config.embeddings == "llama":
    lm = train_concept_lm(config, os.path.join(workdir, "concept_lm"))
  acc = {}
  sweep = train_lib.Sweep(
    len(config.optimizers) * len(config.num_clusters), name="dpo_diversity"
  )
  for opt in config.optimizers:
    acc[opt] = {}
    for k in config.num_clusters:
      with sweep.run(f"{opt} K={k}"):
        acc[opt][k] = train_k(
          config, opt, k, os.path.join(workdir, opt, f"K{k}"), lm
        )
  summary = summarize(config, acc)
  for opt in config.optimizers:
    for which in ("mean", "worst"):
      s = summary[opt][which]
      logging.info(
        "%s, %s value: Q* = %s; b (log K) = %.3g [%.3g, %.3g]; "
        "SSE(lin) - SSE(log) = %.3g",
        opt,
        which,
        {k: round(v["mean"], 2) for k, v in s["q_star"].items()},
        s["fit_b"]["mean"],
        s["fit_b"]["lo"],
        s["fit_b"]["hi"],
        s["sse_lin_minus_log"]["mean"],
      )
  results = {
    **summary,
    "finite": bool(
      all(
        np.all(np.isfinite(a)) for by_k in acc.values() for a in by_k.values()
      )
    ),
    "setting": {
      "data_model": config.data_model,
      "num_clusters": list(config.num_clusters),
      "per_cluster": list(config.per_cluster),
      "target_accuracy": config.target_accuracy,
      "steps": {f"K{k}": steps(config, k) for k in config.num_clusters},
      "embeddings": config.embeddings,
    },
  }
  train_lib.write_results(workdir, results)
  train_lib.draw_figure(figures, workdir, config, summary)
  return results


if __name__ == "__main__":
  _cli.main(run, check=check_config)
