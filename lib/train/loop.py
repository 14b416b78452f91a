"""The training loop: a loop over a step function, scanned, jitted and donated.

`train(init_fn, step_fn, ...)` runs `config.log_every` steps per device call with
`lax.scan` (no host round-trip inside), then on the host: checks for non-finite values,
writes the metrics rows, logs progress, saves a checkpoint when due, and honours SIGTERM.
A rerun with the same workdir resumes from the newest intact checkpoint and ends bitwise
where an uninterrupted run would: a step's key is `rng.stream(root, "step", step)`
(lib.core.rng), never carried. The root `rng.root_key(config.seed)` has three streams:
"init" (the state), "step" (each step's key) and "order" (`order_key`: a key constant
over the run, for batch functions that walk the data in epochs).

Every experiment trains through it: supervised models through `fit` (a `Task` plus an
optax optimizer), SADL's federated rounds (a round is a step), and vmapped sweeps
(a stack of runs is the state; `runs=` names them in the metrics).
"""

import dataclasses
import functools
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
import optax
from absl import logging
from jax.experimental import multihost_utils

from lib.core import errors
from lib.core import mesh as mesh_lib
from lib.core import rng
from lib.train import checkpoint as checkpoint_lib
from lib.train import metrics as metrics_lib
from lib.train import preemption
from lib.train import state as state_lib
from lib.train import workdir as workdir_lib

Preempted = preemption.Preempted

# step_fn(state, batch, key, step) -> (state, metrics)
StepFn = Callable[[Any, Any, jax.Array, jax.Array], tuple[Any, dict]]


def _stop_agreed() -> bool:
  """Whether any process was told to stop: every host stops at the same step."""
  if jax.process_count() == 1:
    return preemption.requested()
  flags = multihost_utils.process_allgather(np.int32(preemption.requested()))
  return bool(np.max(flags))


def full_batch(data, key, step):
  """`batch_fn` for full-batch training: the whole dataset every step."""
  del key, step
  return data


def order_key(config) -> jax.Array:
  """The run's epoch-order key, `rng.stream(rng.root_key(config.seed), "order")`.

  Constant over the run (a step's key changes every step): a `batch_fn` that
  walks the data in epochs, a permutation per epoch, derives each epoch's
  order from it and the step (e.g. `lib.data.epoch_windows`), so a resumed
  run sees the order an uninterrupted run sees. A sweep derives one per
  member from it (its seed stream), as it does the step key.
  """
  return rng.stream(rng.root_key(config.seed), "order")


def _place(data, sharding):
  """Host leaves -> replicated global arrays; jax.Array leaves are kept as placed."""

  def put(x):
    if isinstance(x, jax.Array):
      return x
    return mesh_lib.to_global(x, sharding)

  return jax.tree.map(put, data)


def _rows(step, stacked, evals, runs, name):
  """The metrics rows of one log step: one row, or one per run with a `run` column."""
  last = {k: np.asarray(v)[-1] for k, v in stacked.items()}
  last.update({k: np.asarray(v) for k, v in evals.items()})
  if runs is None:
    for k, v in last.items():
      errors.check(
        v.ndim == 0,
        errors.ShapeError,
        f"metric {k!r} has shape {v.shape}: step_fn/eval_fn metrics must be "
        "scalars, or name the stacked runs with train(..., runs=...)",
      )
    row = {k: float(v) for k, v in last.items()}
    return [{"run": name, **row} if name else row]
  for k, v in last.items():
    errors.check(
      v.ndim == 0 or v.shape[0] == len(runs),
      errors.ShapeError,
      f"metric {k!r} has shape {v.shape}: with runs= ({len(runs)} names) "
      f"metrics carry a leading axis of size {len(runs)}, one per run",
    )
  rows = []
  for i, run in enumerate(runs):
    row = {"run": f"{name}/{run}" if name else str(run)}
    for k, v in last.items():
      row[k] = float(v[i] if v.ndim else v)
    rows.append(row)
  return rows


class History(list):
  """The metric rows a run wrote (a list of dicts), plus its evaluations.

  `history.evals()` -> (steps [E], {metric: [E]} or, for a stack of runs,
  {metric: [E, R]}): what `eval_fn` returned at each evaluated step, read
  from the rows, so that nobody rebuilds run names to find them.
  """

  def __init__(self, rows, eval_keys=(), runs=None, name=""):
    super().__init__(rows)
    self.eval_keys = tuple(eval_keys)
    if runs is None:
      self.runs = [name]
    else:
      self.runs = [f"{name}/{r}" if name else str(r) for r in runs]
    self.stacked = runs is not None

  def evals(self):
    steps, table = metrics_lib.eval_table(self, self.eval_keys, self.runs)
    if not self.stacked:
      table = {k: v[:, 0] for k, v in table.items()}
    return steps, table


def _progress_loss(stacked: dict) -> dict:
  """{"loss": last value} for the progress line: the `loss` metric, else the
  metrics named "<part>/loss" (a sweep of several methods) side by side."""
  if "loss" in stacked:
    return {"loss": np.asarray(stacked["loss"])[-1]}
  parts = [np.asarray(v)[-1] for k, v in stacked.items() if k.endswith("/loss")]
  if not parts:
    return {}
  return {"loss": np.concatenate([np.reshape(p, -1) for p in parts])}


def _signals_deferred(fn):
  """Runs `fn` as a `preemption.deferred()` region: SIGTERM stops it at a chunk."""

  @functools.wraps(fn)
  def wrapper(*args, **kwargs):
    with preemption.deferred():
      return fn(*args, **kwargs)

  return wrapper


@_signals_deferred
def train(
  init_fn: Callable[[jax.Array], Any],
  step_fn: StepFn,
  *,
  workdir: str,
  config,
  data=None,
  batch_fn: Callable | None = None,
  eval_fn: Callable[[Any, Any], dict] | None = None,
  mesh=None,
  name: str = "",
  runs: Sequence[str] | None = None,
  finite_keys: Sequence[str] = ("loss", "grad_norm"),
  shard_batch: bool = False,
  allow_config_change: bool | None = None,
):
  """Runs `step_fn` for `config.num_steps` steps; returns (final state, history).

  Args:
    init_fn: key -> state, any pytree of arrays (for a vmapped sweep, a stack of runs).
    step_fn: (state, batch, key, step) -> (state, dict of metrics); pure. `key` is this
      step's key, `rng.stream(root, "step", step)`: derive named streams with
      `lib.core.rng.stream(key, name)`.
    workdir: where metrics.jsonl, config.json and ckpt/ go; resumed from if it holds a
      checkpoint. Local or gs://.
    config: a ConfigDict with seed, num_steps, log_every, checkpoint_every,
      keep_checkpoints, eval_every (0: evaluate at the end only), mesh_data and
      optionally tensorboard (`configs.common.train_config()`).
    data: pytree the batches are read from. Host arrays are placed replicated on
      `mesh` once; leaves that are already jax.Arrays stay as placed (e.g. sharded
      over a `clients` axis).
    batch_fn: (data, key, step) -> batch, jittable; default: the whole `data`.
    eval_fn: (state, data) -> dict of scalars; jitted; run every `eval_every` steps
      and at the end. Its metric names must differ from `step_fn`'s (an
      evaluated step's row holds both; a clash is a ConfigError at the first
      log step, before any row is written).
    mesh: the mesh; by default a `data` mesh over `config.mesh_data` devices.
    name: label for progress lines and the `run` column.
    runs: names of the R runs stacked in the state: metrics and eval leaves then
      carry a leading axis of size R and each log step writes R rows.
    finite_keys: metrics whose first NaN/inf stops the run (any run of a stack).
      Pass () where divergence is an outcome to record, not an error.
    shard_batch: split the leading axis of every batch leaf over the `data` axis.
    allow_config_change: resume although config.json differs from `config`;
      None: the policy of the experiment (`config.allow_config_change` given to
      `prepare_run`).

  Returns:
    (state, history): the final state and the metric rows written (this run's rows
    from earlier, resumed-from runs included), a `History`: `history.evals()`
    gives the evaluations as arrays by step (and run).

  Raises:
    ConfigError: a bad training config, or a changed config on resume.
    NonFiniteError: naming the first step whose watched metric is not finite.
    CheckpointError: the workdir's checkpoints cannot be restored.
    Preempted: after SIGTERM, once the checkpoint is written.
  """
  workdir_lib.validate_train_config(config, needs_mesh_data=mesh is None)
  workdir_lib.prepare_workdir(workdir)
  workdir_lib.check_config(workdir, config, allow_change=allow_config_change)
  workdir_lib.write_config(workdir, config)
  mesh = mesh if mesh is not None else mesh_lib.make_data_mesh(config.mesh_data)
  replicated = mesh_lib.replicated(mesh)
  # Only a `data` mesh has a batch axis (SADL's mesh has a `clients` axis).
  errors.check(
    not shard_batch or mesh_lib.DATA_AXIS in mesh.axis_names,
    errors.ConfigError,
    f"shard_batch splits batches over the mesh axis '{mesh_lib.DATA_AXIS}', "
    f"but the mesh has axes {tuple(mesh.axis_names)}: name the batch axis "
    f"'{mesh_lib.DATA_AXIS}', or pass shard_batch=False",
  )
  batch_sharding = mesh_lib.batch_sharding(mesh) if shard_batch else None
  batch_fn = batch_fn or full_batch
  root = rng.root_key(config.seed)
  data = _place(data, replicated)

  def init(key):
    return jax.numpy.zeros((), jax.numpy.int32), init_fn(key)

  carry = jax.jit(init, out_shardings=replicated)(rng.stream(root, "init"))

  def one_step(data, carry, _):
    step, state = carry
    key = rng.stream(root, "step", step)
    batch = batch_fn(data, rng.stream(key, "data"), step)
    if shard_batch:
      batch = jax.lax.with_sharding_constraint(batch, batch_sharding)
    state, metrics = step_fn(state, batch, key, step)
    return (step + 1, state), metrics

  if shard_batch:  # Fail early, with the batch size in the message.
    shapes = jax.eval_shape(batch_fn, data, root, carry[0])
    for leaf in jax.tree.leaves(shapes):
      mesh_lib.check_batch_divisible(leaf.shape[0] if leaf.shape else 1, mesh)

  chunk_fns = {}

  def run_chunk(carry, length):
    if length not in chunk_fns:
      # `data` is an argument, not a closed-over constant: an array sharded
      # over several processes (SADL's clients) cannot be a constant.
      chunk_fns[length] = jax.jit(
        lambda c, d: jax.lax.scan(
          functools.partial(one_step, d), c, None, length=length
        ),
        donate_argnums=0,
      )
    return chunk_fns[length](carry, data)

  jit_eval = jax.jit(eval_fn) if eval_fn is not None else None
  eval_keys = ()
  if jit_eval is not None:  # Before any step: a non-dict fails in one line.
    out = jax.eval_shape(jit_eval, carry[1], data)
    errors.check(
      isinstance(out, dict),
      errors.ConfigError,
      f"eval_fn must return a dict of scalar metrics, got {type(out).__name__}",
    )
    eval_keys = tuple(out)

  def evaluate(state):
    return jax.device_get(jit_eval(state, data)) if jit_eval else {}

  ckpt = checkpoint_lib.Checkpointer(workdir, keep=config.keep_checkpoints)
  writer = None
  # Every exit closes both, errors included (the `finally` below); a
  # checkpointer left open at a failed restore had orbax's background clean-up
  # of temporary folders print a traceback after the one-line error.
  try:
    start, restored = ckpt.restore_latest(carry)
    if start is not None:
      carry = restored
      logging.info("%s resumed from %s at step %d", name, ckpt.directory, start)
      if start > config.num_steps:  # An allowed config change lowered it.
        logging.warning(
          "%s: the checkpoint in %s is at step %d, past num_steps=%d: the "
          "state returned is the step-%d one (use a fresh workdir to train "
          "%d steps)",
          name,
          ckpt.directory,
          start,
          config.num_steps,
          start,
          config.num_steps,
        )
    writer = metrics_lib.MetricWriter(
      workdir, resume_step=start, tensorboard=config.get("tensorboard", False)
    )
    step = int(start or 0)
    progress = metrics_lib.Progress(config.num_steps, step, name)
    history = list(writer.records)
    while step < config.num_steps:
      length = min(
        config.log_every - step % config.log_every, config.num_steps - step
      )
      carry, stacked = run_chunk(carry, length)
      stacked = jax.device_get(stacked)
      clash = sorted(set(stacked) & set(eval_keys))
      errors.check(
        not clash,
        errors.ConfigError,
        f"step_fn and eval_fn both return {clash}: name the evaluation's "
        "metrics apart (e.g. 'eval_loss'); a row holds one value a name",
      )
      bad = metrics_lib.first_non_finite(stacked, finite_keys)
      if bad is not None:
        metrics_lib.check_finite(
          step + bad + 1, {k: v[bad] for k, v in stacked.items()}, finite_keys
        )
      step += length
      last = step == config.num_steps
      due = config.eval_every and step % config.eval_every == 0
      evals = evaluate(carry[1]) if (last or due) else {}
      rows = _rows(step, stacked, evals, runs, name)
      rate = progress.update(step, _progress_loss(stacked))
      for row in rows:
        history.append(writer.write(step, {**row, "steps_per_sec": rate}))
      stop = _stop_agreed()
      if last or step % config.checkpoint_every == 0 or stop:
        ckpt.save(step, carry)
      if stop:  # The `finally` below closes the checkpointer: saved on exit.
        raise Preempted(
          f"preempted at step {step}: checkpoint saved in {ckpt.directory}; "
          "rerun the same command to resume",
          preemption.signal_received(),
        )
    if step == 0 and config.num_steps == 0:
      ckpt.save(0, carry)
      if jit_eval is not None:
        for row in _rows(0, {}, evaluate(carry[1]), runs, name):
          history.append(writer.write(0, row))
  finally:  # Also on NonFiniteError: pending saves finish, files close.
    if writer is not None:
      writer.close()
    ckpt.close()
  return carry[1], History(history, eval_keys, runs, name)


# -----------------------------------------------------------------------------
# The supervised adapter: a Task plus an optax optimizer.
# -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Task:
  """What to train with `fit`: pure functions plus the data they read.

  Attributes:
    init_fn: key -> params.
    loss_fn: (params, batch, key) -> (loss, dict of scalar aux metrics).
    batch_fn: (data, key, step) -> batch; jittable, picks the batch on device.
    data: pytree of host arrays, placed replicated on the mesh once.
    eval_fn: optional (params, data) -> dict of scalars; jittable.
    shard_batch: shard the leading axis of every batch leaf over the `data` axis.
  """

  init_fn: Callable[[jax.Array], Any]
  loss_fn: state_lib.LossFn
  batch_fn: Callable[[Any, jax.Array, jax.Array], Any]
  data: Any = None
  eval_fn: Callable[[Any, Any], dict] | None = None
  shard_batch: bool = True


def fit(
  task: Task,
  tx: optax.GradientTransformation,
  *,
  workdir: str,
  config,
  mesh=None,
  name: str = "",
  allow_config_change: bool | None = None,
):
  """Trains `task` with the optax optimizer `tx` through `train`.

  Returns:
    (final TrainState, history of metric rows). Rows hold the loss, the aux
    metrics, the gradient/update/parameter norms and, when evaluated, `eval_fn`'s.
  """
  train_step = state_lib.make_train_step(task.loss_fn, tx)

  def init_fn(key):
    return state_lib.create_state(task.init_fn(key), tx)

  def step_fn(state, batch, key, step):
    del step
    return train_step(state, batch, rng.stream(key, "loss"))

  eval_fn = None
  if task.eval_fn is not None:
    eval_fn = lambda state, data: task.eval_fn(state.params, data)
  return train(
    init_fn,
    step_fn,
    workdir=workdir,
    config=config,
    data=task.data,
    batch_fn=task.batch_fn,
    eval_fn=eval_fn,
    mesh=mesh,
    name=name,
    shard_batch=task.shard_batch,
    allow_config_change=allow_config_change,
  )
