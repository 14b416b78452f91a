"""lib.train.sweep: one vmapped program per stack, closed forms, divergence, resume."""

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import common
from lib import train as train_lib
from lib.core import errors
from lib.core import stats
from lib.train import sweep


def _config(**kw):
  base = dict(num_steps=12, log_every=3, checkpoint_every=6, eval_every=6)
  base.update(kw)
  return common.lock(common.train_config(**base))


def _gd_on_quadratic(w0=1.0):
  """GD on f(w) = w^2 / 2 from w0 (times the member's scale): w_t = (1 - lr)^t w0."""

  def init_one(key, setting):
    del key
    return {"w": jnp.float32(w0) * setting.get("scale", 1.0)}

  def step_one(member, batch, key, step, setting):
    del batch, key, step
    w = member["w"]
    return {"w": w - setting["lr"] * w}, {"loss": 0.5 * w * w}

  def eval_one(member, data, setting):
    del data, setting
    return {"w": member["w"]}

  return init_one, step_one, eval_one


def test_grid_names_shape_and_order():
  s = sweep.grid(lr=(1e-3, 0.25), seed=range(3))
  assert s.shape == (2, 3) and len(s) == 6
  assert s.names[0] == "lr1e-3/seed0" and s.names[-1] == "lr0.25/seed2"
  np.testing.assert_array_equal(s.values["seed"], [0, 1, 2, 0, 1, 2])
  assert s.member(4) == {"lr": pytest.approx(0.25), "seed": 1}
  with pytest.raises(errors.ConfigError, match="repeated"):
    sweep.grid(lr=(0.1, 0.1))
  with pytest.raises(errors.ConfigError, match="different lengths"):
    sweep.stack(a=(1, 2), b=(1,))
  with pytest.raises(errors.ConfigError, match="numbers"):
    sweep.grid(method=("adam", "sgd"))
  named = sweep.grid(["a", "b", "c", "d"], method=(0, 1), seed=(7, 8))
  assert named.names == ("a", "b", "c", "d")
  np.testing.assert_array_equal(named.values["seed"], [7, 8, 7, 8])
  with pytest.raises(errors.ConfigError, match="4 distinct names"):
    sweep.grid(["a", "b", "c"], method=(0, 1), seed=(7, 8))


def test_grid_docstring_example_names_what_grid_makes():
  # The docstring is what users copy: its first and last names must be real.
  first, last = re.findall(r'"(lr[^"]+)"', sweep.grid.__doc__)[:2]
  names = sweep.grid(lr=(1e-3, 1e-2), seed=range(3)).names
  assert (names[0], names[-1]) == (first, last)


def test_members_match_the_closed_form_at_every_evaluation(tmp_path):
  init_one, step_one, eval_one = _gd_on_quadratic()
  settings = sweep.grid(lr=(0.1, 0.3, 0.5), scale=(1.0, -2.0))
  result = sweep.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=str(tmp_path),
    config=_config(),
    eval_one=eval_one,
    name="gd",
  )
  np.testing.assert_array_equal(result.steps, [6, 12])
  lr = settings.values["lr"].astype(np.float64)
  scale = settings.values["scale"].astype(np.float64)
  for e, t in enumerate((6, 12)):
    np.testing.assert_allclose(
      result.evals["w"][e], (1 - lr) ** t * scale, rtol=1e-5
    )
  assert result.final("w").shape == (3, 2)
  np.testing.assert_array_equal(result.diverged_at, -1)
  assert not result.diverged.any()
  # Rows: one per member and log step, named by the grid.
  assert len(result.rows) == 4 * 6
  assert {r["run"] for r in result.rows} == {f"gd/{n}" for n in settings.names}
  steps, loss = result.logged("loss")  # loss of w_{t-1} at log step t
  np.testing.assert_array_equal(steps, [3, 6, 9, 12])
  w_prev = (1 - lr) ** (steps[:, None] - 1) * scale
  np.testing.assert_allclose(loss, 0.5 * w_prev**2, rtol=1e-5)


@pytest.mark.parametrize("x64", [False, True])
def test_float_settings_reach_members_in_the_default_float(tmp_path, x64):
  """Under x64 a step size of 1/3 is the float64 1/3, not float32's rounding."""

  def init_one(key, setting):
    del key
    return {"lr": setting["lr"]}

  def step_one(member, batch, key, step, setting):
    del batch, key, step
    return member, {"lr": setting["lr"]}

  settings = sweep.stack(lr=(1 / 3, 0.1))
  np.testing.assert_array_equal(settings.values["lr"], [1 / 3, 0.1])
  with jax.enable_x64(x64):
    result = sweep.run_sweep(
      init_one,
      step_one,
      settings,
      workdir=str(tmp_path),
      config=_config(num_steps=2, log_every=1, eval_every=2),
      eval_one=lambda member, data, setting: {"member_lr": member["lr"]},
    )
  want = np.array([1 / 3, 0.1], np.float64 if x64 else np.float32)
  np.testing.assert_array_equal(np.float64(result.final("member_lr")), want)


def test_a_diverged_member_is_recorded_and_frozen_others_train_on(tmp_path):
  init_one, step_one, eval_one = _gd_on_quadratic()
  settings = sweep.stack(lr=(0.5, 1e19))
  result = sweep.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=str(tmp_path),
    config=_config(),
    eval_one=eval_one,
  )
  # Oracle: the float32 recurrence by hand; the loss at step t (1-based) is
  # that of w_{t-1}, so the first non-finite loss names the step.
  w, first = np.float32(1.0), -1
  with np.errstate(over="ignore", invalid="ignore"):
    for t in range(1, 13):
      if not np.isfinite(np.float32(0.5) * w * w):
        first = t
        break
      w = w - np.float32(1e19) * w
  assert 1 < first <= 12
  np.testing.assert_array_equal(result.diverged_at, [-1, first])
  np.testing.assert_array_equal(result.diverged, [False, True])
  final = result.final("w")
  np.testing.assert_allclose(final[0], 0.5**12, rtol=1e-5)
  assert np.isfinite(final[1])  # Frozen at its last finite state.
  assert sweep.select_best(np.abs(final), diverged=result.diverged) == 0


def test_rerun_of_a_finished_sweep_returns_the_same_result(tmp_path):
  init_one, step_one, eval_one = _gd_on_quadratic()
  settings = sweep.grid(lr=(0.1, 0.2))
  kw = dict(workdir=str(tmp_path), config=_config(), eval_one=eval_one)
  first = sweep.run_sweep(init_one, step_one, settings, **kw)
  again = sweep.run_sweep(init_one, step_one, settings, **kw)
  np.testing.assert_array_equal(first.steps, again.steps)
  np.testing.assert_array_equal(first.evals["w"], again.evals["w"])
  np.testing.assert_array_equal(
    np.asarray(first.state["w"]), np.asarray(again.state["w"])
  )


def test_a_workdir_of_other_members_is_refused_naming_them(tmp_path):
  # Same config, same member count and names, other learning rates: the
  # checkpoint's shapes match, so a resume would carry the old members'
  # states on under the new settings and end at neither grid's result.
  init_one, step_one, eval_one = _gd_on_quadratic()
  kw = dict(workdir=str(tmp_path), config=_config(), eval_one=eval_one)
  names = ("a", "b")
  sweep.run_sweep(
    init_one, step_one, sweep.grid(lr=(0.1, 0.2), names=names), **kw
  )
  other = sweep.grid(lr=(0.3, 0.4), names=names)
  with pytest.raises(errors.ConfigError, match=r"sweep\.values\.lr") as e:
    sweep.run_sweep(init_one, step_one, other, **kw)
  assert "allow_config_change=True to lib.train.fit / train / run_sweep" in (
    str(e.value)
  )
  with pytest.raises(errors.ConfigError, match=r"sweep\.names"):
    sweep.run_sweep(init_one, step_one, sweep.grid(lr=(0.1, 0.2)), **kw)
  # Allowed, the change is recorded and the run goes on.
  sweep.run_sweep(init_one, step_one, other, allow_config_change=True, **kw)
  assert (tmp_path / "config_changes.jsonl").exists()


def test_a_missing_mesh_data_is_named_before_the_workdir_is_written(tmp_path):
  # As lib.train.train: refused before config.json and sweep.json exist.
  init_one, step_one, _ = _gd_on_quadratic()
  config = common.train_config(num_steps=4, log_every=2, checkpoint_every=2)
  del config["mesh_data"]
  with pytest.raises(errors.ConfigError, match="mesh_data"):
    sweep.run_sweep(
      init_one,
      step_one,
      sweep.grid(lr=(0.1, 0.2)),
      workdir=str(tmp_path),
      config=config,
    )
  assert not os.listdir(tmp_path)


def test_a_missing_evaluation_is_one_line_naming_it(tmp_path):
  init_one, step_one, eval_one = _gd_on_quadratic()
  result = sweep.run_sweep(
    init_one,
    step_one,
    sweep.grid(lr=(0.1, 0.2)),
    workdir=str(tmp_path),
    config=_config(),
    eval_one=eval_one,
  )
  for method in (result.final, result.trajectory):
    with pytest.raises(errors.ConfigError, match=r"'acc'.*has \['w'\]"):
      method("acc")


def test_select_best_skips_diverged_and_non_finite_and_breaks_ties_low():
  assert sweep.select_best([3.0, 1.0, 1.0]) == 1
  assert sweep.select_best([3.0, 1.0, 2.0], diverged=[0, 1, 0]) == 2
  assert sweep.select_best([np.nan, 5.0]) == 1
  assert sweep.select_best([1.0, 2.0], lower_is_better=False) == 1
  assert sweep.select_best([np.inf, 1.0], diverged=[0, 1]) is None


def test_diverged_flags_of_another_size_are_refused():
  # One flag for three values broadcast: every member out, silently.
  with pytest.raises(errors.ShapeError, match="1 flags for 3 values"):
    sweep.select_best([1.0, 2.0, 3.0], diverged=[True])
  with pytest.raises(errors.ShapeError, match=r"shape \(1,\)"):
    stats.mean_over_seeds([[1.0, 2.0]], diverged=[True])


def test_paired_difference_is_the_t_interval_of_the_differences():
  a, b = np.array([1.0, 2.0, 4.0]), np.array([0.5, 1.0, 1.0])
  out = stats.paired_difference(a, b, level=0.95, sign=-1.0)
  d = -(a - b)
  half = 4.302652729911275 * d.std(ddof=1) / np.sqrt(3)  # t_{0.975, 2}
  assert out["point"] == pytest.approx(d.mean())
  assert out["lo"] == pytest.approx(d.mean() - half)
  assert out["hi"] == pytest.approx(d.mean() + half)
  assert out["by_seed"] == pytest.approx(list(d))


def test_exported_from_lib_train():
  assert train_lib.run_sweep is sweep.run_sweep
  assert train_lib.select_best is sweep.select_best


@pytest.mark.parametrize("vectorize", [True, False])
def test_per_member_batches_vmapped_or_mapped(tmp_path, vectorize):
  """batch_one gives member r the target c_r: w_t = c + (1 - lr)^t (w0 - c),
  each member from its own start w0 = 1 + lr (init, step and eval alike go
  member by member under vectorize=False)."""

  def init_one(key, setting):
    del key
    return {"w": 1.0 + setting["lr"]}

  def batch_one(data, key, step, setting):
    del key, step
    return data["targets"][setting["target"]]

  def step_one(member, batch, key, step, setting):
    del key, step
    w = member["w"]
    return {"w": w - setting["lr"] * (w - batch)}, {"loss": (w - batch) ** 2}

  settings = sweep.grid(lr=(0.1, 0.4), target=(0, 1, 2))
  result = sweep.run_sweep(
    init_one,
    step_one,
    settings,
    workdir=str(tmp_path),
    config=_config(),
    data={"targets": np.float32([-1.0, 0.5, 3.0])},
    batch_one=batch_one,
    eval_one=lambda m, d, s: {"w": m["w"]},
    vectorize=vectorize,
  )
  lr = settings.values["lr"].astype(np.float64)
  c = np.array([-1.0, 0.5, 3.0])[settings.values["target"]]
  want = c + (1 - lr) ** 12 * (1.0 + lr - c)
  np.testing.assert_allclose(result.final("w").ravel(), want, rtol=1e-5)
  with pytest.raises(errors.ConfigError, match="not both"):
    sweep.run_sweep(
      init_one,
      step_one,
      settings,
      workdir=str(tmp_path / "x"),
      config=_config(),
      batch_fn=lambda d, k, s: 0.0,
      batch_one=batch_one,
    )


def test_progress_line_summarizes_a_stack_of_losses(caplog):
  from absl import logging as absl_logging

  absl_logging.set_verbosity("info")
  progress = train_lib.Progress(10, name="stack")
  with caplog.at_level("INFO"):
    progress.update(5, {"loss": np.array([1.0, 3.0, np.nan, 2.0])})
  assert "loss mean 2 (min 1, max 3 over 4 runs; 1 non-finite)" in caplog.text


def test_train_history_gives_its_evaluations_as_arrays(tmp_path):
  """A single run's History.evals(): w_t = (1 - lr)^t at every eval step."""

  def step_fn(state, batch, key, step):
    del batch, key, step
    return {"w": 0.75 * state["w"]}, {"loss": state["w"] ** 2}

  _, history = train_lib.train(
    lambda key: {"w": jnp.float32(1.0)},
    step_fn,
    workdir=str(tmp_path),
    config=_config(),
    eval_fn=lambda state, data: {"w": state["w"]},
    name="one",
  )
  steps, evals = history.evals()
  np.testing.assert_array_equal(steps, [6, 12])
  np.testing.assert_allclose(
    evals["w"], 0.75 ** np.array([6.0, 12.0]), rtol=1e-6
  )
  assert isinstance(history, list) and history[-1]["step"] == 12


def _regression_task(data):
  def init_fn(key):
    return {"w": jax.random.normal(key, (3,))}

  def loss_fn(params, batch, key):
    noise = 0.01 * jax.random.normal(key, batch["y"].shape)  # reads its key
    return jnp.mean((batch["x"] @ params["w"] - batch["y"] + noise) ** 2), {}

  def batch_fn(data, key, step):
    del step
    idx = jax.random.randint(key, (4,), 0, data["x"].shape[0])
    return {"x": data["x"][idx], "y": data["y"][idx]}

  def eval_fn(params, data):
    return {"mse": jnp.mean((data["x"] @ params["w"] - data["y"]) ** 2)}

  return train_lib.Task(init_fn, loss_fn, batch_fn, data, eval_fn)


@pytest.mark.parametrize("per_seed_data", [False, True])
def test_fit_seeds_members_are_the_lone_fit_runs(tmp_path, per_seed_data):
  # Each member draws the init, data and loss keys `fit` draws alone at its
  # train seed (on its own data set with per_seed_data): the same numbers.
  r = np.random.default_rng(0)
  sets = [{"x": r.normal(size=(16, 3)).astype(np.float32)} for _ in range(2)]
  for s in sets:
    s["y"] = (s["x"] @ np.array([1.0, -2.0, 0.5], np.float32)).astype(
      np.float32
    )
  seeds = (3, 7)
  tx = optax.sgd(0.05)
  steps = dict(num_steps=6, log_every=2, checkpoint_every=6, mesh_data=1)
  config = _config(**steps)
  stacked = jax.tree.map(lambda *v: np.stack(v), *sets)
  result = train_lib.fit_seeds(
    _regression_task(stacked if per_seed_data else sets[0]),
    tx,
    seeds,
    per_seed_data=per_seed_data,
    workdir=str(tmp_path / "sweep"),
    config=config,
  )
  assert result.settings.names == ("seed3", "seed7")
  for i, seed in enumerate(seeds):
    alone = _config(**steps, seed=seed)
    state, history = train_lib.fit(
      _regression_task(sets[i] if per_seed_data else sets[0]),
      tx,
      workdir=str(tmp_path / f"alone{seed}"),
      config=alone,
    )
    np.testing.assert_allclose(
      result.state.params["w"][i], state.params["w"], rtol=1e-6, atol=1e-7
    )
    assert result.final("mse")[i] == pytest.approx(history[-1]["mse"], rel=1e-5)
  # Two seeds, two different runs (not one run copied).
  assert not np.allclose(
    result.state.params["w"][0], result.state.params["w"][1]
  )
