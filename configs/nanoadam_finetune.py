r"""NanoAdam fine-tuning on digits: pretrain on 0-4, fine-tune on 5-9.

Run (the CPU reproduction, ~1-2 min on 2 cores):
  python -m experiments.nanoadam_finetune \
    --config configs/nanoadam_finetune.py:quick --workdir runs/nanoadam_finetune
Variants: (default) longer fine-tuning, 3 seeds, a denser LR grid;
  quick: the CPU reproduction; add ',smoke' for a seconds-long run (tests).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, variant="full", smoke=False)
  common.check_variant(arg.variant, ("full", "quick"))
  config = ml_collections.ConfigDict()
  config.variant = arg.variant
  config.seed = 0
  config.data = dict(test_fraction=0.3, split_seed=0)
  config.model = dict(hidden=(128, 128))
  config.pretrain = dict(
    lr=1e-3,
    batch_size=64,
    train=common.train_config(
      num_steps=1500, log_every=500, checkpoint_every=1500, eval_every=0
    ),
  )
  config.methods = ("adam", "nanoadam", "random", "largest")
  config.finetune = dict(
    num_steps=600,
    batch_size=64,
    lrs=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1),
    seeds=3,
  )
  # NanoAdam and the equal-density ablations (random, largest).
  config.nanoadam = dict(
    density=0.05,
    mask_interval=10,
    final_density=0.0,  # 0: constant density; else cosine to it
    density_interval=50,
    moments_on_change="carry",
    exclude_biases=True,
  )
  # A learning rate is "good" if its new-task accuracy is within this of the
  # method's best.
  config.stable_margin = 0.02

  if arg.variant == "quick":
    config.pretrain.train.update(
      num_steps=1000, log_every=500, checkpoint_every=1000
    )
    config.finetune.update(num_steps=300, seeds=2)
  if arg.smoke:
    config.pretrain.train.update(
      num_steps=20, log_every=10, checkpoint_every=20
    )
    config.finetune.update(num_steps=12, seeds=1, lrs=(1e-3, 1e-2))
    config.methods = ("adam", "nanoadam")
  return common.lock(config)
