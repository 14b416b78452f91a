"""The training loop: scanned, jitted, donated steps; resume, checkpoints, metrics.

`train(task, tx, workdir=..., config=...)` is what most experiments call. It runs
`config.log_every` steps per device call with `lax.scan` (no host round-trip inside), then
on the host: checks for non-finite values, writes one metrics line, logs progress, saves a
checkpoint when due. A rerun with the same workdir resumes from the last checkpoint and ends
bitwise where an uninterrupted run would (keys are `fold_in(root, step)`, never carried).
"""

import dataclasses
import signal
import threading
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import optax
from absl import logging

from lib.core import errors
from lib.core import mesh as mesh_lib
from lib.core import rng
from lib.train import checkpoint as checkpoint_lib
from lib.train import metrics as metrics_lib
from lib.train import state as state_lib


class Preempted(Exception):  # noqa: N818 (it is a signal, not an error)
  """Raised after SIGTERM once the checkpoint of the current step is written."""


@dataclasses.dataclass(frozen=True)
class Task:
  """What to train: pure functions plus the device-resident data they read.

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


def full_batch(data, key, step):
  """`batch_fn` for full-batch training: the whole dataset every step."""
  del key, step
  return data


def _validate(config) -> None:
  for key in ("num_steps", "log_every", "checkpoint_every", "keep_checkpoints"):
    if key not in config:
      raise errors.ConfigError(f"config is missing the training key {key!r}")
  errors.check(
    config.num_steps >= 0, errors.ConfigError, "config.num_steps must be >= 0"
  )
  errors.check(
    config.log_every > 0, errors.ConfigError, "config.log_every must be > 0"
  )
  errors.check(
    config.checkpoint_every > 0
    and config.checkpoint_every % config.log_every == 0,
    errors.ConfigError,
    f"config.checkpoint_every={config.checkpoint_every} must be a positive "
    f"multiple of config.log_every={config.log_every}",
  )
  errors.check(
    config.eval_every >= 0 and config.eval_every % config.log_every == 0,
    errors.ConfigError,
    f"config.eval_every={config.eval_every} must be 0 or a multiple of "
    f"config.log_every={config.log_every}",
  )


class _SigtermFlag:
  """Turns SIGTERM into a flag the loop checks between chunks (main thread only)."""

  def __init__(self):
    self.raised = False
    self._previous = None

  def __enter__(self):
    if threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGTERM, self._handle)
    return self

  def _handle(self, signum, frame):
    del signum, frame
    logging.warning(
      "SIGTERM received: saving a checkpoint at the next log step"
    )
    self.raised = True

  def __exit__(self, *exc):
    if self._previous is not None:
      signal.signal(signal.SIGTERM, self._previous)


def train(
  task: Task,
  tx: optax.GradientTransformation,
  *,
  workdir: str,
  config,
  mesh=None,
  name: str = "",
):
  """Trains `task` with optimizer `tx`; returns (final TrainState, list of logged metrics).

  Args:
    task: the functions and data.
    tx: an optax GradientTransformation.
    workdir: where metrics.jsonl, config.json and ckpt/ go; resumed from if it holds a
      checkpoint.
    config: a ConfigDict with seed, num_steps, log_every, checkpoint_every,
      keep_checkpoints, eval_every (0: evaluate at the end only) and mesh_data.
    mesh: optional mesh with a `data` axis; by default all devices.
    name: label for progress lines.

  Raises:
    NonFiniteError: naming the first step whose loss or gradient norm is not finite.
    Preempted: after SIGTERM, once the checkpoint is written.
  """
  _validate(config)
  metrics_lib.prepare_workdir(workdir)
  metrics_lib.write_config(workdir, config)
  mesh = mesh if mesh is not None else mesh_lib.make_data_mesh(config.mesh_data)
  replicated = mesh_lib.replicated(mesh)
  batch_sharding = mesh_lib.batch_sharding(mesh)
  root = rng.root_key(config.seed)
  data = mesh_lib.to_global(task.data, replicated)
  train_step = state_lib.make_train_step(task.loss_fn, tx)

  def init(key):
    return state_lib.create_state(task.init_fn(key), tx)

  state = jax.jit(init, out_shardings=replicated)(rng.stream(root, "init"))

  def one_step(state, _):
    key = rng.stream(root, "step", state.step)
    batch = task.batch_fn(data, rng.stream(key, "data"), state.step)
    if task.shard_batch:
      batch = jax.lax.with_sharding_constraint(batch, batch_sharding)
    return train_step(state, batch, rng.stream(key, "loss"))

  if task.shard_batch:  # Fail early, with the batch size in the message.
    shapes = jax.eval_shape(task.batch_fn, data, root, state.step)
    for leaf in jax.tree.leaves(shapes):
      mesh_lib.check_batch_divisible(leaf.shape[0] if leaf.shape else 1, mesh)

  chunk_fns = {}

  def run_chunk(state, length):
    if length not in chunk_fns:
      chunk_fns[length] = jax.jit(
        lambda s: jax.lax.scan(one_step, s, None, length=length),
        donate_argnums=0,
      )
    return chunk_fns[length](state)

  eval_fn = jax.jit(task.eval_fn) if task.eval_fn is not None else None

  ckpt = checkpoint_lib.Checkpointer(workdir, keep=config.keep_checkpoints)
  start = ckpt.latest_step()
  if start is not None:
    state = ckpt.restore(state, start)
    logging.info("%sresumed from %s at step %d", name, ckpt.directory, start)
  writer = metrics_lib.MetricWriter(workdir, resume_step=start)
  step = int(start or 0)
  progress = metrics_lib.Progress(config.num_steps, step, name)
  history = list(writer.records)

  with _SigtermFlag() as sigterm:
    while step < config.num_steps:
      length = min(
        config.log_every - step % config.log_every, config.num_steps - step
      )
      state, stacked = run_chunk(state, length)
      stacked = jax.device_get(stacked)
      bad = metrics_lib.first_non_finite(stacked)
      if bad is not None:
        metrics_lib.check_finite(
          step + bad + 1, {k: v[bad] for k, v in stacked.items()}
        )
      step += length
      record = {k: float(np.asarray(v)[-1]) for k, v in stacked.items()}
      last = step == config.num_steps
      if eval_fn is not None and (
        last or (config.eval_every and step % config.eval_every == 0)
      ):
        record.update(
          {
            k: float(v)
            for k, v in jax.device_get(eval_fn(state.params, data)).items()
          }
        )
      record["steps_per_sec"] = progress.update(step, record)
      writer.write(step, record)
      history.append({"step": step, **record})
      if last or step % config.checkpoint_every == 0 or sigterm.raised:
        ckpt.save(step, state)
      if sigterm.raised and not last:
        ckpt.close()
        raise Preempted(
          f"preempted at step {step}: checkpoint saved in {ckpt.directory}; "
          "rerun the same command to resume"
        )
  if config.num_steps == 0 or step == config.num_steps:
    ckpt.save(step, state)
  ckpt.close()
  return state, history
