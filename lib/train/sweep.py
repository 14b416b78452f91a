"""Sweeps: a stack of settings trained as ONE vmapped program through `train`.

A sweep is what every paper's experiment runs: the same training at several
learning rates, seeds, temperatures or any other per-member scalar, compared
afterwards. `run_sweep` vmaps one member's pure functions over the stacked
settings, so the whole stack compiles once and runs as one scanned program with
the runtime's checkpoints, bitwise resume, SIGTERM handling and metric rows:

    settings = sweep.grid(lr=(1e-3, 1e-2, 1e-1), seed=range(5))
    result = sweep.run_sweep(
        init_one, step_one, settings, workdir=..., config=..., data=data,
        eval_one=eval_one)
    acc = result.final("accuracy")      # shape (3, 5): the grid's shape
    # Mean over seeds; an lr with a diverged seed is out (lib.core.stats).
    means, _ = stats.mean_over_seeds(acc, diverged=result.diverged)
    best = sweep.select_best(means, lower_is_better=False)

Each member's functions see its own setting as a dict of traced scalars:
`init_one(key, setting)`, `step_one(member, batch, key, step, setting)` and
`eval_one(member, data, setting)`. The step key and batch are shared by every
member: derive per-seed randomness from the setting (for example
`rng.stream(key, "seed", setting["seed"])`), so that members which differ only
in a learning rate see the same data, and comparisons are paired by seed.

Divergence is an outcome, not an error: a member whose watched metrics go
non-finite is recorded in `diverged_at` (the first such step) and, by default,
frozen at its last finite state, while the others train on. Members whose
states have different shapes (another width, another optimizer) cannot share a
vmapped program: run one sweep per group.
"""

import dataclasses
import itertools
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from lib.core import errors
from lib.core import rng
from lib.train import loop
from lib.train import metrics
from lib.train import state as state_lib
from lib.train import workdir as workdir_lib

SETTINGS_FILE = "sweep.json"


def _label(value) -> str:
  """'1e-3', '2.5e-4', '0.5', '3': short and unique per number."""
  if isinstance(value, bool | np.bool_):
    return str(bool(value))
  if isinstance(value, int | np.integer):
    return str(int(value))
  if not isinstance(value, np.floating):
    value = float(value)  # numpy scalars print their own dtype's shortest form
  if value != 0 and (abs(value) < 1e-2 or abs(value) >= 1e4):
    text = np.format_float_scientific(value, trim="-", exp_digits=1)
    return text.replace("e+", "e")
  return np.format_float_positional(value, trim="-")


@dataclasses.dataclass(frozen=True)
class Settings:
  """R sweep members: one value of each setting per member, on a grid.

  Attributes:
    values: setting name -> array [R] (member r's value is values[name][r]);
      floats are kept in float64 and reach the members as jax's default
      float (float32, or float64 under `jax.enable_x64`), integers as int32.
    shape: the grid's shape (prod(shape) == R); member order is row-major.
    names: member r's name in the metric rows, e.g. "lr1e-3/seed0".
  """

  values: dict[str, np.ndarray]
  shape: tuple[int, ...]
  names: tuple[str, ...]

  def __len__(self) -> int:
    return len(self.names)

  def member(self, r: int) -> dict:
    """Member r's setting as a dict of numbers."""
    return {k: v[r].item() for k, v in self.values.items()}


def _array(name, values) -> np.ndarray:
  array = np.asarray(values)
  errors.check(
    array.ndim == 1
    and array.size > 0
    and (
      np.issubdtype(array.dtype, np.number)
      or np.issubdtype(array.dtype, np.bool_)
    ),
    errors.ConfigError,
    f"sweep setting {name!r}={values!r} must be a non-empty sequence of "
    "numbers (a setting of another shape or type needs a sweep of its own)",
  )
  if np.issubdtype(array.dtype, np.floating):  # On device: jax's default
    return array.astype(np.float64)  # float (float64 under jax.enable_x64).
  if np.issubdtype(array.dtype, np.integer):
    return array.astype(np.int32)
  return array


def grid(names: Sequence[str] | None = None, **axes: Sequence) -> Settings:
  """Every combination of the axes' values, the first axis major.

  `grid(lr=(1e-3, 1e-2), seed=range(3))` has 6 members, shape (2, 3), named
  "lr1e-3/seed0", ..., "lr0.01/seed2" unless `names` (one per member, in that
  order) says otherwise. Values repeated within an axis are an error (two
  members would share a name).
  """
  errors.check(bool(axes), errors.ConfigError, "a sweep grid needs an axis")
  arrays = {k: _array(k, v) for k, v in axes.items()}
  for k, a in arrays.items():
    labels = [_label(v) for v in a]
    errors.check(
      len(set(labels)) == len(labels),
      errors.ConfigError,
      f"sweep setting {k!r}={tuple(a.tolist())!r} has repeated values",
    )
  shape = tuple(a.size for a in arrays.values())
  index = np.indices(shape).reshape(len(shape), -1)
  values = {k: a[i] for (k, a), i in zip(arrays.items(), index)}
  if names is None:
    names = tuple(
      "/".join(f"{k}{_label(v)}" for k, v in zip(arrays, combo))
      for combo in itertools.product(*arrays.values())
    )
  names = tuple(str(n) for n in names)
  size = int(np.prod(shape))
  errors.check(
    len(names) == size and len(set(names)) == size,
    errors.ConfigError,
    f"sweep member names {names!r} must be {size} distinct names",
  )
  return Settings(values, shape, names)


def stack(names: Sequence[str] | None = None, **columns: Sequence) -> Settings:
  """Members given column-wise (equal lengths), e.g. stack(beta=b, seed=s).

  Names default to "<first column><value>/..." of each member.
  """
  errors.check(bool(columns), errors.ConfigError, "a sweep needs a setting")
  arrays = {k: _array(k, v) for k, v in columns.items()}
  sizes = {k: a.size for k, a in arrays.items()}
  errors.check(
    len(set(sizes.values())) == 1,
    errors.ConfigError,
    f"sweep settings have different lengths: {sizes}",
  )
  size = next(iter(sizes.values()))
  if names is None:
    names = [
      "/".join(f"{k}{_label(a[r])}" for k, a in arrays.items())
      for r in range(size)
    ]
  names = tuple(str(n) for n in names)
  errors.check(
    len(names) == size and len(set(names)) == size,
    errors.ConfigError,
    f"sweep member names {names!r} must be {size} distinct names",
  )
  return Settings(arrays, (size,), names)


@dataclasses.dataclass(frozen=True)
class SweepResult:
  """What a sweep returns: evaluations, divergence and rows, per member.

  Attributes:
    settings: the members.
    steps: [E] the steps at which the members were evaluated.
    evals: eval metric -> array [E, R] (float64; NaN where a row lacks it).
    diverged_at: [R] the first step whose watched metrics were not finite;
      -1 for a member that never diverged.
    rows: the metric rows written (one per member and log step).
    state: the final member states, stacked (leading axis R).
    name: the rows' `run` prefix (run_sweep's `name`).
  """

  settings: Settings
  steps: np.ndarray
  evals: dict[str, np.ndarray]
  diverged_at: np.ndarray
  rows: loop.History
  state: Any
  name: str = ""

  def logged(self, key: str):
    """(steps [L], values [L, R]): a training metric at every log step."""
    steps, table = metrics.eval_table(self.rows, (key,), self.rows.runs)
    return steps, table[key]

  @property
  def diverged(self) -> np.ndarray:
    """Bool, the grid's shape: whether each member diverged."""
    return (self.diverged_at >= 0).reshape(self.settings.shape)

  def _check_eval(self, key: str) -> None:
    errors.check(
      key in self.evals,
      errors.ConfigError,
      f"no evaluation {key!r} in this sweep (has {sorted(self.evals)})",
    )

  def final(self, key: str) -> np.ndarray:
    """The last evaluation of `key`, shaped like the grid."""
    self._check_eval(key)
    errors.check(
      self.steps.size > 0,
      errors.ConfigError,
      f"no step of this sweep evaluated {key!r}: its metric rows hold no "
      "evaluations (were they written by a run without eval_one?)",
    )
    return self.evals[key][-1].reshape(self.settings.shape)

  def trajectory(self, key: str) -> np.ndarray:
    """[E, *grid shape]: `key` at every evaluation step."""
    self._check_eval(key)
    return self.evals[key].reshape((-1,) + self.settings.shape)


def _check_settings(
  workdir, config, settings: Settings, allow_change, mesh
) -> None:
  """Refuses to resume a workdir trained with other members (sweep.json).

  The checkpoint only knows shapes: a grid of as many members with other
  values would resume their states under the new settings, silently. The
  config is checked (and written) first, so that a refused config never
  leaves the new members recorded.
  """
  record = {
    "sweep": {
      "names": list(settings.names),
      "shape": list(settings.shape),
      "values": {k: v.tolist() for k, v in settings.values.items()},
    }
  }
  workdir_lib.validate_train_config(config, needs_mesh_data=mesh is None)
  workdir_lib.prepare_workdir(workdir)
  workdir_lib.check_config(workdir, config, allow_change=allow_change)
  workdir_lib.check_config(
    workdir, record, allow_change=allow_change, file_name=SETTINGS_FILE
  )
  workdir_lib.write_config(workdir, config)
  workdir_lib.write_config(workdir, record, file_name=SETTINGS_FILE)


def run_sweep(
  init_one: Callable[[jax.Array, dict], Any],
  step_one: Callable[..., tuple[Any, dict]],
  settings: Settings,
  *,
  workdir: str,
  config,
  data=None,
  batch_fn: Callable | None = None,
  batch_one: Callable | None = None,
  eval_one: Callable[[Any, Any, dict], dict] | None = None,
  name: str = "",
  watch: Sequence[str] = ("loss",),
  freeze_diverged: bool = True,
  vectorize: bool = True,
  mesh=None,
  allow_config_change: bool | None = None,
) -> SweepResult:
  """Trains every member of `settings` as one vmapped `lib.train.train` run.

  Args:
    init_one: (key, setting) -> one member's state. `key` is the run's init
      key, the same for every member.
    step_one: (member, batch, key, step, setting) -> (member, metrics), with
      scalar metrics; `batch` and `key` are shared by all members.
    settings: the members (`grid` or `stack`).
    workdir, config, data, batch_fn, mesh, allow_config_change: as for
      `lib.train.train`; `batch_fn`'s batch is shared by every member.
    batch_one: instead of `batch_fn`, (data, key, step, setting) -> one
      member's own batch (e.g. drawn from the member's seed stream).
    eval_one: (member, data, setting) -> dict of scalars; run at the train
      config's eval steps and at the end.
    name: label for progress lines and the rows' `run` column prefix.
    watch: metrics whose non-finite value marks a member diverged.
    freeze_diverged: keep a diverged member at its last finite state (its
      evaluations then describe that state); False lets it run on.
    vectorize: vmap the members (one batched program); False initialises,
      steps and evaluates them one after the other with `lax.map` (still one
      program): the same numbers up to float rounding, faster on CPU for
      compute-bound members. Also the way round a jaxlib 0.10 CPU deadlock:
      batched LAPACK calls (LU, QR: dense or LU flow layers) of several
      independent layers wait on each other's tasks in XLA's intra-op thread
      pool when they outnumber its threads (a 2-core machine hangs with two
      vmapped members; fixed in jaxlib 0.11).

  Returns:
    A `SweepResult`.

  Raises:
    ConfigError: as `lib.train.train`, and when `workdir` holds a sweep of
      other members (names or values; recorded in its sweep.json), unless
      the config change is allowed.
  """
  errors.check(
    batch_fn is None or batch_one is None,
    errors.ConfigError,
    "run_sweep takes batch_fn (shared batch) or batch_one (per member), "
    "not both",
  )
  _check_settings(workdir, config, settings, allow_config_change, mesh)
  values = {k: jax.device_put(v) for k, v in settings.values.items()}
  own_batch = batch_one is not None

  def each_member(f, *per_member):
    """f over the members (the leading axis of every argument): one
    batched program (vmap), or one member after the other (lax.map)."""
    if vectorize:
      return jax.vmap(f)(*per_member)
    return jax.lax.map(lambda a: f(*a), per_member)

  def step_members(members, batch, key, step, values):
    if own_batch:
      return each_member(
        lambda m, b, v: step_one(m, b, key, step, v), members, batch, values
      )
    return each_member(
      lambda m, v: step_one(m, batch, key, step, v), members, values
    )

  if own_batch:

    def batch_fn(data, key, step):
      return jax.vmap(batch_one, in_axes=(None, None, None, 0))(
        data, key, step, values
      )

  def init_fn(key):
    members = each_member(lambda v: init_one(key, v), values)
    return {
      "members": members,
      "diverged_at": jnp.full(len(settings), -1, jnp.int32),
    }

  def step_fn(state, batch, key, step):
    old = state["members"]
    new, metrics = step_members(old, batch, key, step, values)
    bad = jnp.zeros(len(settings), bool)
    for k in watch:
      if k in metrics:
        bad = bad | ~jnp.isfinite(metrics[k])
    at = state["diverged_at"]
    at = jnp.where((at < 0) & bad, (step + 1).astype(jnp.int32), at)
    if freeze_diverged:
      frozen = at >= 0

      def keep(n, o):
        mask = frozen.reshape((-1,) + (1,) * (n.ndim - 1))
        return jnp.where(mask, o, n)

      new = jax.tree.map(keep, new, old)
    return {"members": new, "diverged_at": at}, metrics

  eval_fn = None
  if eval_one is not None:

    def eval_fn(state, data):
      return each_member(
        lambda m, v: eval_one(m, data, v), state["members"], values
      )

  state, rows = loop.train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=config,
    data=data,
    batch_fn=batch_fn,
    eval_fn=eval_fn,
    mesh=mesh,
    name=name,
    runs=settings.names,
    finite_keys=(),  # Divergence is recorded per member, not raised.
    allow_config_change=allow_config_change,
  )
  steps, evals = rows.evals()
  return SweepResult(
    settings=settings,
    steps=steps,
    evals=evals,
    diverged_at=np.asarray(jax.device_get(state["diverged_at"]), np.int64),
    rows=rows,
    state=state["members"],
    name=name,
  )


def fit_seeds(
  task: loop.Task,
  tx,
  seeds: Sequence[int],
  *,
  per_seed_data: bool = False,
  **kwargs,
) -> SweepResult:
  """`lib.train.fit(task, tx)` at each train seed of `seeds`, as one sweep.

  Member s draws the keys a lone `fit` with `config.seed = s` draws: the
  "init" stream, and per step the "data" and "loss" streams of
  `rng.stream(root, "step", step)`. So each member is the run `fit` would
  do alone, and all of them compile once. Members are named "seed<s>".

  Args:
    task, tx: as for `fit`.
    seeds: the train seeds, one member each.
    per_seed_data: `task.data` holds one data set per seed, stacked on axis 0
      in `seeds`' order; member i trains and is evaluated on data[i] (its
      own draw or split).
    **kwargs: `run_sweep`'s (workdir, config, name, watch, ...).
  """
  seeds = [int(s) for s in seeds]
  columns = {"seed": seeds}
  if per_seed_data:
    columns["data_index"] = list(range(len(seeds)))
  settings = stack(names=[f"seed{s}" for s in seeds], **columns)
  train_step = state_lib.make_train_step(task.loss_fn, tx)

  def step_key(setting, step):  # what `train` gives step `step` of seed s
    return rng.stream(rng.root_key(setting["seed"]), "step", step)

  def own(data, setting):
    if not per_seed_data:
      return data
    return jax.tree.map(lambda v: v[setting["data_index"]], data)

  def init_one(key, setting):
    del key
    root = rng.root_key(setting["seed"])
    return state_lib.create_state(task.init_fn(rng.stream(root, "init")), tx)

  def batch_one(data, key, step, setting):
    del key
    data_key = rng.stream(step_key(setting, step), "data")
    return task.batch_fn(own(data, setting), data_key, step)

  def step_one(state, batch, key, step, setting):
    del key
    return train_step(state, batch, rng.stream(step_key(setting, step), "loss"))

  eval_one = None
  if task.eval_fn is not None:

    def eval_one(state, data, setting):
      return task.eval_fn(state.params, own(data, setting))

  return run_sweep(
    init_one,
    step_one,
    settings,
    data=task.data,
    batch_one=batch_one,
    eval_one=eval_one,
    **kwargs,
  )


def select_best(
  values, *, diverged=None, lower_is_better: bool = True
) -> int | None:
  """Index of the best of 1-D `values`, or None when no member is usable.

  Members that diverged (bool array, same shape) or whose value is not finite
  are never selected; among equal values the first (lowest index) wins.
  """
  x = np.asarray(values, np.float64).reshape(-1)
  ok = np.isfinite(x)
  if diverged is not None:
    flags = np.asarray(diverged, bool).reshape(-1)
    errors.check(
      flags.size == x.size,
      errors.ShapeError,
      f"select_best: diverged has {flags.size} flags for {x.size} values",
    )
    ok &= ~flags
  if not ok.any():
    return None
  x = np.where(ok, x if lower_is_better else -x, np.inf)
  return int(np.argmin(x))
