r"""NanoAdam fine-tuning on digits: pretrain on 0-4, fine-tune on 5-9.

Run (the CPU reproduction, ~1-2 min on 2 cores):
  python -m experiments.nanoadam_finetune \
    --config configs/nanoadam_finetune.py:quick --workdir runs/nanoadam_finetune
Variants: (default) longer fine-tuning, 8 learning rates x 3 seeds;
  quick: the CPU reproduction (6 lrs x 3 seeds); add ',smoke' for a
  seconds-long run (tests, the kill test), ',select_train_loss' for the
  earlier lr choice (final training loss, no validation split: the runs
  until 2026-12-06, bit for bit).
"""

import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(
    arg, variant="full", smoke=False, select_train_loss=False
  )
  common.check_variant(arg.variant, ("full", "quick", "gpu"))
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
  # The output layer (the spec's two readings; the paper does not say):
  # "shared", one 10-way softmax for both tasks (ours until now); "multi", a
  # head per task (pretraining and fine-tuning each train their own 5
  # logits; the other task's get no gradient). Accuracy is task-incremental
  # (argmax over the task's 5 logits) either way.
  config.head = "shared"
  # One lib.train.train call per method; its state stacks the (lr, seed)
  # runs (vmapped). A seed fixes the batch order (shared by every method: the
  # comparisons are paired by seed) and the random mask.
  config.finetune = dict(
    batch_size=64,
    lrs=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1),
    seeds=3,
    # What selects each method's lr: "validation", the mean over seeds of
    # the final new-task error on val_fraction of the 5-9 training images
    # (held out of fine-tuning), or "train_loss" [the protocol until
    # 2026-12-06], the final training loss, which picks the largest stable
    # lr (the one that forgets the most).
    lr_selection="train_loss" if arg.select_train_loss else "validation",
    val_fraction=0.2,
    train=common.train_config(
      num_steps=600, log_every=100, checkpoint_every=600, eval_every=0
    ),
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
  # Two-sided level of the paired (per-seed) Student-t intervals.
  config.interval_level = 0.95

  if arg.variant == "quick":
    config.pretrain.train.update(
      num_steps=1000, log_every=500, checkpoint_every=1000
    )
    # 3 seeds for the paired intervals; the two smallest lrs (no method
    # selected them in an 8-lr quick run) go: the stack holds 18 runs.
    config.finetune.update(seeds=3, lrs=(1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1))
    config.finetune.train.update(
      num_steps=300, log_every=100, checkpoint_every=300
    )
  if arg.variant == "gpu":
    # The GPU tier (issue 35): 40 paired seeds (the stack holds 240 small
    # MLPs) at the full variant's step counts: the quick run's paired
    # new-task differences (-0.012, 3 seeds, lrs chosen on training loss)
    # needed 38 seeds to settle; with lrs chosen on validation (2026-12-06)
    # they read "no" at 3 seeds, and only the lr ratio (a grid band, not a
    # t interval) stays unresolved.
    quick = "quick,select_train_loss" if arg.select_train_loss else "quick"
    config = common.variant_of(get_config(quick), "gpu")
    config.pretrain.train.update(
      num_steps=1500, log_every=500, checkpoint_every=1500
    )
    config.finetune.seeds = 40
    config.finetune.train.update(
      num_steps=600, log_every=100, checkpoint_every=600
    )
  if arg.smoke:
    config.pretrain.train.update(
      num_steps=20, log_every=10, checkpoint_every=10
    )
    config.finetune.update(seeds=2, lrs=(1e-3, 1e-2))
    config.finetune.train.update(num_steps=12, log_every=4, checkpoint_every=4)
    config.methods = ("adam", "nanoadam")
  return common.lock(config)
