r"""HNS H2: KdV u_t + u u_x + u_xxx = 0, train t <= 25, roll out to t = 100.

Run (the CPU reproduction, ~2 min of CPU on 2 cores):
  python -m experiments.hns_kdv --config configs/hns_kdv.py:quick \
    --workdir runs/hns_kdv
Variants: (default) the paper's setting (L 100, n_x 256, 2048 train / 256
  validation, global FiLM SIREN 32 x 4, smooth 11-point J, dt 0.5; the
  official AdamW rates and StepLR for 250 epochs, config.schedule); quick:
  n_x 128, 256 train / 16 rolled out, 2 FiLM conv layers, 1k steps, one
  seed; add ',smoke' for a seconds-long run (tests).
Correlation time: config.corr_time "official" (default, the authors' rule
  and the paper's numbers: batch-mean correlation over batches of
  config.corr_batch = 32 validation trajectories) or "per_trajectory" (ours);
  see configs/common.py `hns_pde_defaults`.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.pde_name = "kdv"
  # Paper/LPSDA: L = 100, n_x 256, saved every 0.5, 200 steps, train on the
  # first 25% (t <= 25); J = 10 sines, A ~ U[-0.5, 0.5], l in {1, 2, 3}.
  # Data by pseudo-spectral ETDRK4 at an internal dt 0.01 (spec, ours; the
  # paper used scipy Radau). The official loader (H_filter 0.5,
  # data/dataset_1D.py) keeps only the half of the trajectories with the
  # smallest H variation, in the validation split too; we keep them all
  # (ETDRK4 conserves H to ~1e-9), so our sets also hold the ones that
  # filter drops (by the code's comment, where steep fronts cost H). Not
  # reproduced because it cannot be: the loader keeps the first half of
  # H_list[split], a pickled list of (index, H_variance) tuples read from
  # H_path, but the code that builds and orders that list (which H, which
  # variation measure, sorted how) is not in the released repository
  # (every commit checked); with our ETDRK4 data such a filter would also
  # select on solver round-off, not on the Radau solver's H loss.
  config.pde = dict(
    n_x=256,
    length=100.0,
    dt=0.5,
    solver_dt=0.01,
    train_steps=50,
    rollout_steps=200,
    num_train=2048,
    num_val=256,
    num_modes=10,
    max_amplitude=0.5,
    max_wavenumber=3,
  )
  # Paper: global FiLM CNN [32, 32, 32], k = 3; SIREN 32 x 4; proj 32.
  config.hns = common.hns_model(film="global", film_hidden=(32, 32, 32))
  # Paper: 11-point smooth (Holoborodko) J; labels with central u_xx.
  config.j_stencil = "smooth"
  config.label_stencil = "central"
  config.h_stencil = "spectral"
  common.hns_pde_defaults(config)  # baselines, CNNs, seeds, optimizer
  config.official_lr.hns = 2e-5  # configs/hamiltonian/kdv.yaml
  # The official run's 250 epochs, of ceil(2,048 / 32) = 64 steps here (its
  # H filter halves the trajectories: 8,000 steps there).
  config.train = common.train_config(
    num_steps=16_000, log_every=500, checkpoint_every=5000
  )
  if arg.variant == "quick":
    # Ours: 1-1.5k steps at the official 1e-5..1e-4 barely train; warmup
    # to config.lr then cosine decay (configs/common.py, config.schedule).
    config.schedule = "cosine"
    # 64 validation trajectories: two official batches of 32, the fewest
    # that give the correlation-time claim an interval with one seed (its
    # unit is a (seed, batch) pair; 16 were one batch, no interval).
    config.pde.update(n_x=128, num_train=256, num_val=64)
    # Two FiLM conv layers instead of three: a cheaper step on CPU.
    config.hns.film_hidden = (32, 32)
    # One seed on CPU (the HNS step is ~10x a CNN step).
    config.num_seeds = 1
    config.train.update(num_steps=1000, log_every=250, checkpoint_every=1000)
  if arg.variant == "gpu":
    # The GPU tier (issue 35): 6 seeds (the paper's; the interval is then
    # over seeds), the paper's n_x 256 and FiLM CNN, 512 training
    # trajectories, 32 validation ones (one official batch), 3k steps.
    config = common.variant_of(get_config("quick"), "gpu")
    config.pde.update(n_x=256, num_train=512, num_val=32)
    config.hns.film_hidden = (32, 32, 32)
    config.num_seeds = 6
    config.train.update(num_steps=3000, log_every=500, checkpoint_every=1500)
  if arg.smoke:
    config.pde.update(
      n_x=32,
      length=20.0,
      num_train=8,
      num_val=8,
      train_steps=10,
      rollout_steps=12,
      solver_dt=0.05,
      num_modes=3,
    )
    config.hns.update(width=8, num_layers=2, proj_dim=8, film_hidden=(8,))
    config.cnn.update(channels=(8, 8))
    config.batch_size = 8
    config.warmup_steps = 2
    config.num_seeds = 1
    config.train.update(num_steps=10, log_every=5, checkpoint_every=5)
  return common.lock(config)
