r"""HNS H1: 1D advection, train t <= 4, roll out to t = 20 (5x extrapolation).

Run (the CPU reproduction, ~1.3 min on 2 cores, three seeds):
  python -m experiments.hns_advection --config configs/hns_advection.py:quick \
    --workdir runs/hns_advection
Variants: (default) the paper's setting (n_x 128, 1024 train / 256 validation,
  HNS local FiLM SIREN 32 x 4, central-difference J; the official AdamW rates
  and StepLR for 100 epochs, config.schedule); quick: the spec's CPU
  experiment (n_x 64, 256 / 16 rolled out, SIREN kernel without FiLM,
  spectral J, given to the CNN baselines too as an input channel J u; three
  seeds per model); add ',smoke' for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.pde_name = "advection"
  # Paper: [0, 16], n_x 128, dt 0.02, train t in [0, 4], validate to t = 20;
  # IC sum of J = 5 sines, A ~ U[-0.5, 0.5], l in {1, 2, 3}.
  config.pde = dict(
    n_x=128,
    length=16.0,
    dt=0.02,
    train_steps=200,  # frames after t = 0 in training trajectories
    rollout_steps=1000,
    num_train=1024,
    num_val=256,
    num_modes=5,
    max_amplitude=0.5,
    max_wavenumber=3,
  )
  # Paper: nonlinear kernel, local FiLM MLP [32, 32], SIREN 32 x 4, proj 32.
  config.hns = common.hns_model()
  # J = d/dx stencil in the HNS rollout (paper: 2nd-order central); label
  # and metric stencils (advection labels need none: dH/du = u).
  config.j_stencil = "central"
  config.label_stencil = "central"
  config.h_stencil = "central"
  common.hns_pde_defaults(config)  # baselines, CNNs, seeds, optimizer
  # The official run: 100 epochs of ceil(1,024 / 32) = 32 steps.
  config.train = common.train_config(
    num_steps=3_200, log_every=500, checkpoint_every=1000
  )
  if arg.variant == "quick":
    # Ours: 1-1.5k steps at the official 1e-5..1e-4 barely train; warmup
    # to config.lr then cosine decay (configs/common.py, config.schedule).
    config.schedule = "cosine"
    config.pde.update(n_x=64, num_train=256, num_val=16)
    # The FiLM MLP's 32 -> 2 x 160 output layer triples the cost of a step;
    # without it (the paper's "+ nonlinear + SIREN" ablation) the kernel
    # reaches a lower loss in 1.5k steps on CPU (measured: rollout 0.0024 vs
    # 0.029 with local FiLM at equal steps).
    config.hns.film = "none"
    # At n_x = 64 the central J's phase error alone (~(k dx)^2/6) gives a
    # rollout error ~0.09 by t = 20; the spectral J removes it. The CNN
    # baselines get the same operator, as an input channel J u.
    config.j_stencil = "spectral"
    config.cnn.derivative_stencil = "spectral"
    # Seeds: n = 2 x the largest "seeds to settle" among this run's
    # unresolved claims in the 2026-12-05 pilot report (3 seeds; rollout
    # error <= 0.05: 6; the rollout ratio to the best baseline, 45, is out of
    # CPU reach and not sized for) = 12, capped by cost at the pilot's 3:
    # ~20 CPU-s a seed (both models' training and rollouts; quick alone 73
    # CPU-s at 3), so 12 would add ~180 CPU-s, past the ~100 CPU-s more
    # granted to this run, hns_toy's and compact_memory's together (those
    # two took ~68). Seed s's key is fold_in(key, s) (`_hns.train_runs`),
    # whatever the count.
    config.num_seeds = 3
    # The next-step CNN is not run at this scale: it is the weak baseline
    # on advection, as the paper's next-step models (Table 2: 0.40-0.83 vs
    # 0.048 for du/dt FNO). Measured with the J u channel, 3 seeds: the
    # official "state" target diverged on 6 of 48 validation trajectories
    # (finite fraction 0.875; rollout error 0.29 over the finite ones, the
    # du/dt CNN's 0.010), our "increment" target on all 48 (0.0). Its cost
    # goes to the seeds. The paper variant runs both baselines.
    config.baselines = ("derivative_cnn",)
    config.train.update(num_steps=1500, log_every=250, checkpoint_every=1500)
  if arg.variant == "gpu":
    # The GPU tier (issue 35): the paper's n_x 128 and 1024 training
    # trajectories, 64 validation ones, 48 seeds (the quick run's paired
    # rollout ratios, 3 seeds, need 45; its rollout error 6), 3k steps; the
    # quick variant's spectral J (for the CNNs too) and FiLM-free kernel.
    config = common.variant_of(get_config("quick"), "gpu")
    config.pde.update(n_x=128, num_train=1024, num_val=64)
    config.num_seeds = 48
    config.train.update(num_steps=3000, log_every=500, checkpoint_every=1500)
  if arg.smoke:
    config.pde.update(
      n_x=32, num_train=16, num_val=8, train_steps=20, rollout_steps=16
    )
    config.hns.update(width=8, num_layers=2, proj_dim=8, film_hidden=(8,))
    config.cnn.update(channels=(8, 8))
    config.batch_size = 8
    config.warmup_steps = 2
    config.num_seeds = 2
    config.train.update(num_steps=10, log_every=5, checkpoint_every=5)
  return common.lock(config)
