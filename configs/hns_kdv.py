r"""HNS H2: KdV u_t + u u_x + u_xxx = 0, train t <= 25, roll out to t = 100.

Run (the CPU reproduction, ~2 min of CPU on 2 cores):
  python -m experiments.hns_kdv --config configs/hns_kdv.py:quick \
    --workdir runs/hns_kdv
Variants: (default) the paper's setting (L 100, n_x 256, 2048 train / 256
  validation generated, half of each kept by the H filter, below; global
  FiLM SIREN 32 x 4, smooth 11-point J, dt 0.5; the
  official AdamW rates and StepLR for 250 epochs, config.schedule); quick:
  n_x 128, 256 train / 64 rolled out (kept), 2 FiLM conv layers, 1k steps, one
  seed; add ',smoke' for a seconds-long run (tests). Every variant applies
  the official loader's H filter (config.pde.h_filter, its measure ours);
  ',keep_all' keeps every generated trajectory (the runs until 2026-12-06).
Correlation time: config.corr_time "official" (default, the authors' rule
  and the paper's numbers: batch-mean correlation over batches of
  config.corr_batch = 32 validation trajectories) or "per_trajectory" (ours);
  see configs/common.py `hns_pde_defaults`.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False, keep_all=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.pde_name = "kdv"
  # Paper/LPSDA: L = 100, n_x 256, saved every 0.5, 200 steps, train on the
  # first 25% (t <= 25); J = 10 sines, A ~ U[-0.5, 0.5], l in {1, 2, 3}.
  # Data by pseudo-spectral ETDRK4 at an internal dt 0.01 (spec, ours; the
  # paper used scipy Radau).
  # The H filter: every official KdV config (configs/*/kdv.yaml, H_filter
  # 0.5; data/dataset_1D.py) keeps the half of the trajectories with the
  # lowest "variance in Hamiltonian", in the training and the validation
  # split alike ("some samples have numerical viscosity that may not
  # conserve the Hamiltonian ... unavoidable due to shock formation"). It
  # reads that half from a pickled list of (index, H variance) whose
  # builder is not released (every commit checked), so the measure is
  # ours, reconstructed: the variance over time of the official H function
  # (`calculate_Hamiltonian`, 4th-order FD u_xx) on each whole trajectory
  # (`lib.pde.lowest_h_variation`). ETDRK4 conserves the spectral H to
  # ~1e-9, so on our data that FD H varies where a trajectory outruns the
  # grid (steep fronts), the population the official comment names.
  # pde.h_filter is the fraction kept: 0.5 (default since 2026-12-06; the
  # paper variant generates the official 2,048 and keeps 1,024, quick and
  # gpu generate twice the trajectories they keep) or 1.0, all, as until
  # then (':keep_all', bitwise the earlier runs).
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
    # The fraction of the generated trajectories kept (the H filter).
    h_filter=1.0,
  )
  # Paper: global FiLM CNN [32, 32, 32], k = 3; SIREN 32 x 4; proj 32.
  config.hns = common.hns_model(film="global", film_hidden=(32, 32, 32))
  # Paper: 11-point smooth (Holoborodko) J; labels with central u_xx.
  config.j_stencil = "smooth"
  config.label_stencil = "central"
  config.h_stencil = "spectral"
  common.hns_pde_defaults(config)  # baselines, CNNs, seeds, optimizer
  config.official_lr.hns = 2e-5  # configs/hamiltonian/kdv.yaml
  # The official run's 250 epochs over all 2,048 (':keep_all'): 64 steps
  # an epoch; with the H filter, below, 32 (8,000 steps).
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
    # Expect "no" on KdV here: a one-seed CPU pilot (2026-12-06, WORKSPACE
    # "HNS on KdV at the paper's resolution") decorrelated by step 13 and
    # diverged on all 32 trajectories with HNS, the du/dt CNN and the
    # oracle alike.
    config = common.variant_of(get_config("quick,keep_all"), "gpu")
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
  if not arg.keep_all:
    # The official H filter (see config.pde above): the paper variant keeps
    # 1,024 of its 2,048 (250 epochs of 32 steps: 8,000); the others
    # generate twice the trajectories, so the kept sets keep their sizes.
    config.pde.h_filter = 0.5
    if arg.variant == "paper" and not arg.smoke:
      config.train.num_steps = 8000
    else:
      config.pde.update(
        num_train=2 * config.pde.num_train, num_val=2 * config.pde.num_val
      )
  return common.lock(config)
