"""The training loop: determinism, resume, data parallelism, non-finite stops, bad workdirs."""

import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import common
from lib import train as train_lib
from lib.core import errors
from lib.core import mesh as mesh_lib


def _regression_task(n=64, d=5, noise_scale=0.1):
  rs = np.random.default_rng(0)
  x = rs.normal(size=(n, d)).astype(np.float32)
  w = rs.normal(size=(d,)).astype(np.float32)
  y = (x @ w + noise_scale * rs.normal(size=(n,))).astype(np.float32)

  def init_fn(key):
    return {"w": 0.1 * jax.random.normal(key, (d,)), "b": jnp.zeros(())}

  def loss_fn(params, batch, key):
    # Key-dependent noise exercises the rng streams in resume/determinism checks.
    pred = batch["x"] @ params["w"] + params["b"]
    jitter = 1e-3 * jax.random.normal(key, ())
    return jnp.mean((pred - batch["y"]) ** 2) + jitter, {
      "mae": jnp.mean(jnp.abs(pred - batch["y"]))
    }

  def batch_fn(data, key, step):
    del step
    idx = jax.random.randint(key, (16,), 0, n)
    return {"x": data["x"][idx], "y": data["y"][idx]}

  def eval_fn(params, data):
    return {
      "full_mse": jnp.mean(
        (data["x"] @ params["w"] + params["b"] - data["y"]) ** 2
      )
    }

  return train_lib.Task(init_fn, loss_fn, batch_fn, {"x": x, "y": y}, eval_fn)


def _config(**kw):
  base = dict(
    num_steps=40, log_every=10, checkpoint_every=20, keep_checkpoints=2
  )
  base.update(kw)
  return common.lock(common.train_config(**base))


def _train(
  tmp_path, name, task=None, tx=None, mesh=None, allow_change=None, **kw
):
  return train_lib.fit(
    task or _regression_task(),
    tx or optax.adam(5e-2),
    workdir=str(tmp_path / name),
    config=_config(**kw),
    mesh=mesh,
    allow_config_change=allow_change,
  )


def test_loss_decreases_and_files_written(tmp_path):
  state, history = _train(tmp_path, "run")
  assert int(state.step) == 40
  assert history[-1]["loss"] < 0.5 * history[0]["loss"]
  records = train_lib.read_jsonl(str(tmp_path / "run" / "metrics.jsonl"))
  assert [r["step"] for r in records] == [10, 20, 30, 40]
  assert {"loss", "grad_norm", "param_norm", "mae", "steps_per_sec"} <= set(
    records[0]
  )
  assert "full_mse" in records[-1]  # evaluated at the end
  assert os.path.exists(tmp_path / "run" / "config.json")
  kept = sorted(os.listdir(tmp_path / "run" / "ckpt"))
  assert kept == ["20", "40"]  # keep_checkpoints=2


def test_same_seed_same_numbers(tmp_path):
  _, h1 = _train(tmp_path, "a")
  _, h2 = _train(tmp_path, "b")
  strip = lambda h: [
    {k: v for k, v in r.items() if k != "steps_per_sec"} for r in h
  ]
  assert strip(h1) == strip(h2)
  _, h3 = _train(tmp_path, "c", seed=1)
  assert strip(h1) != strip(h3)


def test_order_key_is_the_seeds_order_stream_apart_from_the_others():
  # The derivation is pinned: the epoch orders of Quartet's and HNS's runs
  # (and so their numbers) change if it does.
  key = train_lib.order_key(_config(seed=3))
  root = jax.random.key(3)
  expected = jax.random.fold_in(root, zlib.crc32(b"order") & 0x7FFFFFFF)
  data = jax.random.key_data
  np.testing.assert_array_equal(data(key), data(expected))
  others = [
    jax.random.fold_in(root, zlib.crc32(b"init") & 0x7FFFFFFF),
    *(
      jax.random.fold_in(
        jax.random.fold_in(root, s), zlib.crc32(b"step") & 0x7FFFFFFF
      )
      for s in range(4)
    ),
    train_lib.order_key(_config(seed=4)),
  ]
  for other in others:
    assert not np.array_equal(data(key), data(other))


def test_resume_matches_uninterrupted_bitwise(tmp_path):
  full, _ = _train(tmp_path, "full")
  # "Killed" after its step-20 checkpoint. Extending num_steps is a config
  # change (a schedule could depend on it), so the resume must allow it.
  _train(tmp_path, "split", num_steps=20)
  resumed, history = _train(tmp_path, "split", allow_change=True)
  assert int(resumed.step) == 40
  assert [r["step"] for r in history] == [10, 20, 30, 40]
  for a, b in zip(jax.tree.leaves(full), jax.tree.leaves(resumed)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_resume_past_a_lowered_num_steps_warns(tmp_path, caplog):
  # An allowed config change that lowers num_steps below the checkpoint
  # cannot untrain: the step-40 state comes back, and the log says so.
  _train(tmp_path, "run")
  with caplog.at_level("WARNING"):
    state, _ = _train(tmp_path, "run", num_steps=20, allow_change=True)
  assert int(state.step) == 40
  assert "at step 40, past num_steps=20" in caplog.text


def test_an_eval_fn_that_returns_no_dict_is_one_line(tmp_path):
  # It was an AttributeError ('...has no attribute items') after training.
  task = _regression_task()
  task = train_lib.Task(
    task.init_fn, task.loss_fn, task.batch_fn, task.data, lambda p, d: 1.0
  )
  with pytest.raises(errors.ConfigError, match="dict of scalar metrics, got"):
    train_lib.fit(
      task, optax.adam(5e-2), workdir=str(tmp_path / "r"), config=_config()
    )
  assert not (tmp_path / "r" / "metrics.jsonl").exists()


def test_an_eval_metric_named_like_a_training_metric_is_refused(tmp_path):
  # The evaluation's 'loss' overwrote the training 'loss' in the evaluated
  # rows, and History.evals() read every training row as an evaluation.
  task = _regression_task()
  task = train_lib.Task(
    task.init_fn,
    task.loss_fn,
    task.batch_fn,
    task.data,
    lambda p, d: {"loss": jnp.sum(p["w"] ** 2), "w0": p["w"][0]},
  )
  with pytest.raises(errors.ConfigError, match=r"both return \['loss'\]"):
    train_lib.fit(
      task, optax.adam(5e-2), workdir=str(tmp_path / "r"), config=_config()
    )
  assert not (tmp_path / "r" / "metrics.jsonl").read_text().strip()


def test_eight_devices_match_one(tmp_path):
  assert jax.device_count() == 8
  _, h1 = _train(tmp_path, "one", mesh=mesh_lib.make_data_mesh(1))
  _, h8 = _train(tmp_path, "eight", mesh=mesh_lib.make_data_mesh(8))
  np.testing.assert_allclose(
    [r["loss"] for r in h1], [r["loss"] for r in h8], rtol=1e-5
  )


def test_non_finite_loss_names_the_step(tmp_path):
  with pytest.raises(errors.NonFiniteError, match=r"non-finite .* at step \d+"):
    _train(tmp_path, "nan", tx=optax.sgd(1e6))


@pytest.fixture
def closed(monkeypatch):
  """The directories of the Checkpointers closed during the test, in order."""
  out = []
  close = train_lib.Checkpointer.close
  monkeypatch.setattr(
    train_lib.Checkpointer,
    "close",
    lambda self: out.append(self.directory) or close(self),
  )
  return out


def test_a_run_that_stops_non_finite_closes_its_checkpointer(tmp_path, closed):
  # In a notebook the error is caught and the run retried: the first run's
  # checkpointer must not stay open (pending async saves, open files).
  with pytest.raises(errors.NonFiniteError):
    _train(tmp_path, "nan", tx=optax.sgd(1e6))
  assert closed == [str(tmp_path / "nan" / "ckpt")]


def test_a_run_that_cannot_restore_closes_its_checkpointer(tmp_path, closed):
  # Every kept step damaged: the CheckpointError leaves train() with the
  # checkpointer closed (its background clean-up of temporary folders had
  # printed a traceback at exit, after the binaries' one-line error).
  _train(tmp_path, "run")
  ckpt = tmp_path / "run" / "ckpt"
  for root, _, files in os.walk(ckpt):
    for f in files:
      if os.path.basename(root) == "d":
        open(os.path.join(root, f), "wb").close()
  closed.clear()  # the first run's
  with pytest.raises(errors.CheckpointError, match="no readable checkpoint"):
    _train(tmp_path, "run")
  assert closed == [str(ckpt)]


def test_batch_not_divisible_by_devices(tmp_path):
  task = _regression_task()
  odd = train_lib.Task(
    task.init_fn,
    task.loss_fn,
    lambda data, key, step: {"x": data["x"][:15], "y": data["y"][:15]},
    task.data,
  )
  with pytest.raises(errors.ConfigError, match="batch_size=15"):
    _train(tmp_path, "odd", task=odd)


def test_a_mesh_without_a_data_axis_is_one_line(tmp_path):
  # Task shards batches by default; a user's mesh that names its axis
  # otherwise gave jax's "Resource axis: data ... is not found" deep inside.
  mesh = jax.make_mesh(
    (1,), ("batch",), axis_types=(jax.sharding.AxisType.Auto,)
  )
  with pytest.raises(errors.ConfigError, match=r"axis 'data'.*\('batch',\)"):
    _train(tmp_path, "other_axis", mesh=mesh)


def test_unwritable_workdir(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("not a directory")
  with pytest.raises(errors.WorkdirError, match="not writable"):
    train_lib.fit(
      _regression_task(),
      optax.sgd(0.1),
      workdir=str(blocker / "run"),
      config=_config(),
    )


def test_checkpoint_every_must_align_with_log_every(tmp_path):
  with pytest.raises(errors.ConfigError, match="checkpoint_every"):
    _train(tmp_path, "bad", checkpoint_every=15)


def test_phase_config_refuses_a_misspelt_override():
  # eval_evry would be added as a new key that nothing reads: the phase would
  # evaluate at the end only, silently.
  with pytest.raises(errors.ConfigError, match="'eval_evry'"):
    train_lib.phase_config(_config(), 20, eval_evry=10)
  cfg = train_lib.phase_config(_config(), 20, eval_every=10)
  assert (cfg.num_steps, cfg.checkpoint_every, cfg.eval_every) == (20, 20, 10)


def test_a_seed_that_is_not_an_integer_is_named(tmp_path):
  # jax.random.key(1.5) said "PRNG key seed must be an integer; got
  # JitTracer(~float32[])", naming neither the key nor the config.
  config = common.train_config(num_steps=4, log_every=2, checkpoint_every=2)
  config.unlock()
  del config["seed"]
  config.seed = 1.5
  with pytest.raises(errors.ConfigError, match=r"seed=1\.5 must be an integer"):
    train_lib.fit(
      _regression_task(), optax.sgd(0.1), workdir=str(tmp_path), config=config
    )


@pytest.mark.parametrize("mesh_data", [None, "all"])
def test_a_missing_or_non_integer_mesh_data_is_named(tmp_path, mesh_data):
  # Missing: AttributeError "'mesh_data'" after config.json was written;
  # "all": "'<' not supported between instances of 'int' and 'str'".
  config = common.train_config(num_steps=4, log_every=2, checkpoint_every=2)
  config.unlock()
  del config["mesh_data"]
  if mesh_data is not None:
    config.mesh_data = mesh_data
  with pytest.raises(errors.ConfigError, match="mesh_data"):
    train_lib.fit(
      _regression_task(), optax.sgd(0.1), workdir=str(tmp_path), config=config
    )
  assert not os.path.exists(tmp_path / "config.json")


def test_train_step_is_pure_and_jittable():
  task = _regression_task()
  tx = optax.sgd(0.1)
  step_fn = jax.jit(
    train_lib.make_train_step(task.loss_fn, tx), donate_argnums=0
  )
  params = task.init_fn(jax.random.key(0))
  batch = {
    "x": jnp.asarray(task.data["x"][:16]),
    "y": jnp.asarray(task.data["y"][:16]),
  }
  state = train_lib.create_state(params, tx)
  g = jax.grad(lambda p: task.loss_fn(p, batch, jax.random.key(1))[0])(params)
  expected = jax.tree.map(lambda p, gi: p - 0.1 * gi, params, g)
  new_state, metrics = step_fn(state, batch, jax.random.key(1))  # donates state
  for a, b in zip(jax.tree.leaves(new_state.params), jax.tree.leaves(expected)):
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
  assert int(new_state.step) == 1 and np.isfinite(metrics["grad_norm"])


# -----------------------------------------------------------------------------
# The runtime under `fit`: train(init_fn, step_fn, ...).
# -----------------------------------------------------------------------------


def _quadratic_sweep(lrs=(0.1, 0.5, 3.0)):
  """R runs of GD on f(x) = x^2 / 2 from x0 = 1, stacked: x_t = (1 - lr)^t."""
  lrs = jnp.asarray(lrs, jnp.float32)

  def init_fn(key):
    del key
    return {"x": jnp.ones_like(lrs)}

  def step_fn(state, batch, key, step):
    del batch, key, step
    x = state["x"] - lrs * state["x"]
    return {"x": x}, {"loss": 0.5 * x**2}

  def eval_fn(state, data):
    del data
    return {"abs_x": jnp.abs(state["x"])}

  return init_fn, step_fn, eval_fn


def test_train_sweep_writes_one_row_per_run_and_matches_closed_form(tmp_path):
  init_fn, step_fn, eval_fn = _quadratic_sweep()
  state, history = train_lib.train(
    init_fn,
    step_fn,
    eval_fn=eval_fn,
    workdir=str(tmp_path / "sweep"),
    config=_config(num_steps=7, log_every=3, checkpoint_every=3),
    runs=("a", "b", "c"),
    name="gd",
  )
  expected = (1.0 - np.asarray([0.1, 0.5, 3.0])) ** 7
  np.testing.assert_allclose(state["x"], expected, rtol=1e-6)
  rows = train_lib.read_jsonl(str(tmp_path))  # a directory: every file below
  assert [(r["step"], r["run"]) for r in rows] == [
    (s, f"gd/{r}") for s in (3, 6, 7) for r in "abc"
  ]
  last = {r["run"]: r for r in rows if r["step"] == 7}
  np.testing.assert_allclose(last["gd/c"]["abs_x"], 2.0**7, rtol=1e-6)
  np.testing.assert_allclose(last["gd/b"]["loss"], 0.5 * 0.5**14, rtol=1e-5)
  assert history == rows


def test_runs_of_another_count_than_the_stack_is_one_line(tmp_path):
  # Three stacked runs named as two: the third run's rows were dropped.
  def step_fn(state, batch, key, step):
    del batch, key, step
    return state + 1.0, {"loss": state}

  with pytest.raises(errors.ShapeError, match=r"'loss' has shape \(3,\)"):
    train_lib.train(
      lambda key: jnp.zeros(3),
      step_fn,
      workdir=str(tmp_path),
      config=_config(),
      runs=("a", "b"),
    )


def test_config_with_a_dtype_and_a_function_is_written_and_resumed(tmp_path):
  # flax configs hold dtypes (jnp.bfloat16) and callables; json.dumps raised
  # "Object of type _ScalarMeta is not JSON serializable" deep inside.
  config = common.train_config(num_steps=4, log_every=2, checkpoint_every=2)
  config.dtype = jnp.bfloat16
  config.activation = jax.nn.gelu
  config.groups = {2, 1}
  workdir = str(tmp_path / "run")
  task = _regression_task()
  first, _ = train_lib.fit(task, optax.sgd(0.1), workdir=workdir, config=config)
  with open(os.path.join(workdir, "config.json")) as f:
    text = f.read()
  assert '"dtype": "bfloat16"' in text and "gelu" in text
  # The same config again resumes (no spurious change), bitwise.
  again, _ = train_lib.fit(task, optax.sgd(0.1), workdir=workdir, config=config)
  np.testing.assert_array_equal(first.params["w"], again.params["w"])
  config.dtype = jnp.float32
  with pytest.raises(
    errors.ConfigError, match="dtype: 'bfloat16' -> 'float32'"
  ):
    train_lib.fit(task, optax.sgd(0.1), workdir=workdir, config=config)


def test_changed_config_is_refused_naming_the_key(tmp_path):
  _train(tmp_path, "run", num_steps=20)
  with pytest.raises(errors.ConfigError, match=r"seed: 0 -> 3") as e:
    _train(tmp_path, "run", num_steps=20, seed=3)
  # Both ways to allow it: the CLI flag, and fit's keyword for a notebook.
  assert "--config.allow_config_change=True" in str(e.value)
  assert "keyword allow_config_change=True to lib.train.fit" in str(e.value)
  # Explicitly allowed: resumes and records the change in the workdir.
  state, _ = _train(tmp_path, "run", num_steps=40, allow_change=True)
  assert int(state.step) == 40
  changes = (tmp_path / "run" / "config_changes.jsonl").read_text()
  assert "num_steps: 20 -> 40" in changes


def test_sigterm_in_the_last_chunk_still_stops(tmp_path):
  import signal

  init_fn, step_fn, _ = _quadratic_sweep((0.1,))

  def batch_fn(data, key, step):
    del data, key

    def maybe_kill(s):
      if int(s) == 8:  # inside the last chunk (steps 7..9)
        os.kill(os.getpid(), signal.SIGTERM)

    jax.debug.callback(maybe_kill, step)
    return None

  cfg = _config(num_steps=9, log_every=3, checkpoint_every=3)
  with pytest.raises(train_lib.Preempted, match="step 9"):
    train_lib.train(
      init_fn,
      step_fn,
      batch_fn=batch_fn,
      workdir=str(tmp_path),
      config=cfg,
      runs=("only",),
    )
  assert sorted(os.listdir(tmp_path / "ckpt"))[-1] == "9"


def test_zero_steps_evaluates_the_initial_state(tmp_path):
  state, history = _train(tmp_path, "zero", num_steps=0)
  assert int(state.step) == 0
  assert [r["step"] for r in history] == [0] and "full_mse" in history[0]


def test_sweep_progress_logs_run_counts(caplog):
  from absl import logging as absl_logging

  absl_logging.set_verbosity("info")
  sweep = train_lib.Sweep(2, name="demo")
  with caplog.at_level("INFO"):
    for label in ("a", "b"):
      with sweep.run(label):
        pass
  text = caplog.text
  assert "run 1/2 a" in text and "run 2/2 b" in text and "overall ETA" in text


def test_float64_state_restores_as_float64(tmp_path):
  # `jax.enable_x64` is thread-local and checkpoints are read in a helper
  # thread: a float64 run resumed from its checkpoint must get float64 back
  # (the qblr VI stack once came back float32 and broke the scan carry).
  from lib.train import checkpoint as ckpt_lib

  with jax.enable_x64(True):
    state = {"w": jnp.arange(3, dtype=jnp.float64) / 3, "n": jnp.int64(5)}
    ckpt = ckpt_lib.Checkpointer(str(tmp_path), keep=1)
    ckpt.save(1, state)
    ckpt.wait()
    step, restored = ckpt.restore_latest(state)
    assert step == 1
    assert restored["w"].dtype == jnp.float64
    np.testing.assert_array_equal(restored["w"], state["w"])


@pytest.mark.parametrize(
  "section,key", [("data", "split_seed"), ("train", "seed"), ("", "seed")]
)
def test_a_negative_seed_is_named_before_any_work(tmp_path, section, key):
  # np.random.default_rng(-1) raised "expected non-negative integer" deep in
  # an experiment's data preparation (sfn data_seed, nanoadam_finetune
  # data.split_seed, sadl seed), after config.json was written.
  import ml_collections

  config = ml_collections.ConfigDict(
    {
      "data": {"split_seed": 0},
      "train": dict(common.train_config(num_steps=4, log_every=2)),
      "seed": 0,
    }
  )
  (config[section] if section else config)[key] = -1
  name = ".".join(p for p in ("config", section, key) if p)
  with pytest.raises(errors.ConfigError, match=rf"{name}=-1 must be an"):
    train_lib.prepare_run(str(tmp_path / "run"), config)
  assert not (tmp_path / "run").exists()
