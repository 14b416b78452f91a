"""Shared config helpers: argument parsing, the training keys, locking.

`--config configs/x.py:quick,smoke` passes "quick,smoke" to `get_config`; `parse_arg`
turns it into typed fields (big_vision's `parse_arg`).
"""

import ml_collections


def parse_arg(arg: str | None, **defaults) -> ml_collections.ConfigDict:
  """Parses 'a=1,flag,variant=quick' against `defaults` (which fix names and types).

  A bare name sets a bool default to True; a bare name that is not a bool default is taken
  as the value of `variant` when there is one (so ':quick' means ':variant=quick').

  Raises:
    ValueError: naming an unknown key or a value of the wrong type.
  """
  result = ml_collections.ConfigDict(defaults)
  for item in filter(None, (arg or "").split(",")):
    key, eq, value = item.partition("=")
    key = key.strip()
    if not eq:
      if isinstance(defaults.get(key), bool):
        result[key] = True
        continue
      if "variant" in defaults:
        key, value = "variant", item.strip()
      else:
        raise ValueError(
          f"unknown config argument {item!r}; known: {sorted(defaults)}"
        )
    if key not in defaults:
      raise ValueError(
        f"unknown config argument {key!r}; known: {sorted(defaults)}"
      )
    kind = type(defaults[key])
    try:
      if kind is bool:
        if value.lower() not in ("true", "false", "1", "0"):
          raise ValueError(value)
        result[key] = value.lower() in ("true", "1")
      else:
        result[key] = kind(value)
    except ValueError:
      raise ValueError(
        f"config argument {key}={value!r} is not a valid {kind.__name__}"
      ) from None
  return result


def train_config(**overrides) -> ml_collections.ConfigDict:
  """The keys `lib.train.train` reads, with overrides."""
  config = ml_collections.ConfigDict(
    dict(
      seed=0,
      num_steps=1000,
      log_every=100,  # steps per device call (lax.scan) and per metrics line
      checkpoint_every=1000,  # a multiple of log_every
      keep_checkpoints=2,
      eval_every=0,  # 0: evaluate at the end only; else a multiple of log_every
      mesh_data=-1,  # devices on the `data` axis; -1: all
      tensorboard=False,  # also write TensorBoard event files (tensorboardX)
    )
  )
  for key, value in overrides.items():
    if key not in config:
      raise ValueError(f"unknown training key {key!r}")
    config[key] = value
  return config


def hns_model(**overrides) -> dict:
  """The HNS integral-kernel functional's settings (lib.pde.hns), as the paper
  describes it: nonlinear kernel, local FiLM MLP [32, 32] (k = 3), SIREN 32 x 4,
  projection 32. Each HNS config starts here and states what it changes."""
  model = dict(
    width=32,
    num_layers=4,
    proj_dim=32,
    kernel_type="nonlinear",
    film="local",
    film_hidden=(32, 32),
    film_kernel_size=3,
    omega0=1.0,
  )
  unknown = (
    set(overrides)
    - set(model)
    - {
      "concat_u",
      "film_per_layer",
      "film_gamma_offset",
      "normalize_x",
      "exact_gelu",
    }
  )
  if unknown:
    raise ValueError(f"unknown HNS model keys {sorted(unknown)}")
  model.update(overrides)
  return model


def hns_pde_defaults(config) -> None:
  """What both HNS PDE experiments (advection, KdV) share, set on `config`.

  Baselines: a du/dt CNN (AB2, Richardson labels) and a next-step CNN.
  cnn.derivative_stencil: "" (the paper's baselines see u only) or a stencil
  name: the CNNs then also see J u = d/dx u with that stencil, the J the HNS
  rollout applies (so an exact J is not HNS's advantage alone). Six seeds per
  model (init and batch order; the data are shared), paired across models by
  seed for the claims' intervals, as the paper. num_plot: validation
  trajectories in the space-time figure.

  schedule: the optimizer, AdamW with weight decay 1e-3 in both.
    "official" (default; the paper variants): modules/train_module.py
      `configure_optimizers`, AdamW at the per-model rate of the official
      configs/*/<pde>.yaml (`official_lr`: HNS 1e-5 advection, 2e-5 KdV;
      the baselines 1e-4), StepLR x`lr_gamma` every `lr_step_epochs` = 100
      epochs (Lightning steps it per epoch), no warmup. An epoch is
      ceil(num_train / batch_size) steps; the official runs take 100
      epochs on advection (1,024 trajectories: 3,200 steps) and 250 on KdV
      (its H filter keeps 1,024 of 2,048: 8,000 steps, as ours; with
      ':keep_all' 16,000 steps).
    "cosine" (ours; the quick and gpu tiers, which train 1-3k steps, where
      a rate of 1e-5 barely moves): warmup to `lr` over `warmup_steps`,
      then cosine decay to 0 at the last step, every model alike.

  next_step_target: what the next-step CNN f learns (`lib.pde.solver`
  NEXT_STEP_TARGETS). "state" (default, the official 'normal' mode of
  modules/train_module.py: `get_data_labels` label = u[idx + 1] with idx ~
  randint(0, nt - 1), the ScaledLpLoss relative L2 of u_{t+1}, and
  `inference_step` returns pred): f(u_t) = u_{t+1}, rolled out as
  u_{t+1} = f(u_t). "increment" (ours until 2026-12-05, kept as a named
  mode): f(u_t) = u_{t+1} - u_t with the relative L2 of the increment,
  rolled out as u_t + f(u_t).

  snapshot_sampling: how a training batch picks its trajectories (each
  with one random time). "epoch" (default, the official loader's
  `DataLoader(shuffle=True)`): each trajectory once per epoch, in a fresh
  order each epoch (`lib.core.rng.epoch_indices`); "replacement" (ours until
  2026-12-05, a named mode): drawn with replacement at every step.

  corr_time: "official" (default): the authors' correlation time
  (modules/train_module.py `rollout`): the Pearson correlation averaged over
  a validation batch of corr_batch = 32 trajectories (all when fewer), its
  first step below 0.8 (nt - 1 if never; a NaN step never counts), averaged
  over batches; "per_trajectory" (ours): each trajectory's first step below
  0.8 (T if never; a non-finite step counts as below), averaged over
  trajectories. See `lib.pde.solver.rollout_metrics`.
  """
  config.baselines = ("derivative_cnn", "next_step_cnn")
  config.corr_time = "official"
  config.corr_batch = 32
  config.next_step_target = "state"
  config.snapshot_sampling = "epoch"
  config.cnn = dict(
    channels=(32, 32, 32, 32), kernel_size=5, derivative_stencil=""
  )
  config.num_seeds = 6
  config.batch_size = 32
  config.schedule = "official"
  config.official_lr = dict(hns=1e-5, derivative_cnn=1e-4, next_step_cnn=1e-4)
  config.lr_step_epochs = 100
  config.lr_gamma = 0.8
  config.lr = 2e-3
  config.weight_decay = 1e-3
  config.warmup_steps = 50
  config.num_plot = 1


def check_variant(variant: str, known) -> None:
  """Raises ValueError unless `variant` is one of `known`."""
  if variant not in known:
    raise ValueError(f"unknown variant {variant!r}; known: {sorted(known)}")


def variant_of(
  base: ml_collections.ConfigDict, variant: str
) -> ml_collections.ConfigDict:
  """A copy of `base` (another variant's config) named `variant`, locked.

  For a variant defined as another one changed in a few keys, e.g. `gpu` =
  `quick` with more seeds and a larger model (issue 35): the copy follows
  every later edit of the base variant. Its keys are locked (values may
  change), so a typo in the changes fails as in an override.
  """
  config = ml_collections.ConfigDict(base.to_dict())
  config.variant = variant
  config.lock()
  return config


def lock(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Locks `config` so that a typo in an override fails, naming the key.

  Adds `allow_config_change=False`: a rerun in a workdir whose config.json differs
  is refused unless `--config.allow_config_change=True` (then it is recorded).
  """
  if "allow_config_change" not in config:
    config.allow_config_change = False
  config.lock()
  return config
