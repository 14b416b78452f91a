r"""DPO with diverse values: last-layer DPO on K value clusters, Q pairs each.

Run (the CPU reproduction, < 1 min on 2 cores):
  python -m experiments.dpo_diversity --config configs/dpo_diversity.py:quick \
    --workdir runs/dpo_diversity
Variants: (default) 10 seeds; quick: 5 seeds (what the reproduce report runs);
  add ',llama' for the second mode (embeddings of the tiny Llama trained on a
  concept-token task instead of Gaussian clusters); add ',smoke' for a
  seconds-long run.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False, llama=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  # Synthetic value clusters (spec: extended_papers.md 4): g = mu_k + b nu_k
  # + noise eps, |mu_k| = mean_scale, nu_k unit _|_ mu_k; V = 2 tokens.
  config.num_clusters = (1, 2, 4, 8, 16, 32)  # K
  config.per_cluster = (
    1,
    2,
    3,
    4,
    6,
    8,
    12,
    16,
    24,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
  )
  config.dim = 256  # embedding width d (d = 64 crowds 32 clusters: ours)
  config.vocab = 2  # Yes / No
  config.mean_scale = 3.0
  config.noise = 0.3
  config.test_per_cluster = 100
  config.ref_scale = 0.01  # W_ref ~ N(0, ref_scale^2)
  config.beta = 0.1  # DPO beta
  config.loss = "dpo"  # dpo | ipo | slic
  # Full-batch optimizers of W at a fixed number of steps T (num_steps).
  config.optimizers = ("gd", "adam")
  config.gd_lr = 100.0  # the mean DPO gradient is O(beta / 2)
  config.adam_lr = 0.01
  config.target_accuracy = 0.75  # Q*(K): smallest Q reaching it (interpolated)
  config.fixed_q = 16  # Q of the "accuracy non-increasing in K" claim
  config.seeds = 10
  config.train = common.train_config(
    num_steps=200, log_every=100, checkpoint_every=200, eval_every=0
  )
  # Where the embeddings g come from: "synthetic" (Gaussian value clusters)
  # or "llama" (the tiny Llama's last hidden state on the concept task).
  config.embeddings = "synthetic"
  config.llama = dict(
    d_model=64,
    n_layers=2,
    n_heads=4,
    mlp_hidden=128,
    seq_len=16,  # concept token + 15 fillers
    filler_vocab=96,
    subset=6,  # fillers per concept and stance
    purity=0.7,  # P(a filler comes from the concept/stance subset)
    steps=600,
    batch_size=64,
    lr=3e-3,
  )
  if arg.llama:
    config.embeddings = "llama"
    config.dim = config.llama.d_model
  if arg.variant == "quick":
    config.seeds = 5
    config.per_cluster = config.per_cluster[:-2]  # up to 128 pairs per value
  if arg.variant == "gpu":
    # The GPU tier (issue 35): the quick setting with 16 seeds (the quick
    # run's SSE differences, 5 seeds, need 10 (GD) and 14 (Adam)).
    config = common.variant_of(get_config("quick"), "gpu")
    config.seeds = 16
  if arg.smoke:
    config.llama.update(d_model=16, mlp_hidden=32, steps=6, batch_size=8)
    config.num_clusters = (1, 2, 4)
    config.per_cluster = (1, 2, 4, 8)
    config.fixed_q = 4
    config.dim = 16
    config.test_per_cluster = 20
    config.seeds = 2
    config.train.update(num_steps=6, log_every=3, checkpoint_every=3)
  return common.lock(config)
