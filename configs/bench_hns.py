r"""HNS benchmark: training (double backprop) and rollout steps/s vs a CNN.

Run (~1 min on 2 cores):
  python -m experiments.bench_hns --config configs/bench_hns.py \
    --workdir runs/bench_hns
Variants: (default) the advection setting (n_x 128, batch 32, the official
  'nf' HNS, 31,776 params, vs a du/dt CNN 4 x 32 channels ~16K params);
  quick: n_x 64; gpu: the default setting with 10 timed repeats, meant for
  peer mode on a GPU (tests/gpu/run.sh passes the carried checkout); add
  ',smoke' for a seconds-long run (tests).
Peer mode (the authors' PyTorch code timed beside ours, same model, weights,
  batch, loss and AdamW): --config.peer_repo=/path/to/hamiltonian_pdes
  (needs `pip install torch einops`; not in requirements). On a GPU backend
  with CUDA torch, their model runs on the same GPU.
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="paper", smoke=False)
  common.check_variant(arg.variant, ("paper", "quick", "gpu"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0
  config.n_x = 128
  config.length = 16.0
  config.dt = 0.02
  config.batch_size = 32
  # The official 'nf' advection model (lib.pde.hns.OFFICIAL_NF: their
  # configs/hamiltonian/adv.yaml; 31,776 parameters).
  config.hns = common.hns_model(
    num_layers=6,
    concat_u=False,
    film_per_layer=True,
    film_gamma_offset=0.0,
    normalize_x=False,
    exact_gelu=True,
  )
  # Peer mode: a checkout of the official code (github anthonyzhou-1/
  # hamiltonian_pdes) with torch + einops importable (not in requirements):
  # times their training/rollout step against ours, alternating. "" = off.
  config.peer_repo = ""
  config.cnn = dict(channels=(32, 32, 32, 32), kernel_size=5)
  config.j_stencil = "central"
  config.train_steps = 50  # steps per timed call (one lax.scan)
  config.rollout_steps = 200  # AB2 steps per timed call
  config.repeats = 5  # timed calls; the median is reported
  if arg.variant == "quick":
    config.n_x = 64
  if arg.variant == "gpu":
    config.repeats = 10
  if arg.smoke:
    config.n_x = 16
    config.batch_size = 8
    config.hns.update(width=8, num_layers=2, proj_dim=8, film_hidden=(8,))
    config.cnn.update(channels=(8, 8))
    config.train_steps = 3
    config.rollout_steps = 5
    config.repeats = 2
  return common.lock(config)
