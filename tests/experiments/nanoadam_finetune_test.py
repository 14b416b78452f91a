"""NanoAdam fine-tuning experiment: smoke run, resume, divergence, claims."""

import json
import os
import shutil

import numpy as np
import pytest

from configs import nanoadam_finetune as config_lib
from experiments import nanoadam_finetune as ex
from experiments.claims import nanoadam as claims
from experiments.claims import report
from lib import train as train_lib
from lib.core.errors import ConfigError
from tests import helpers


def _config(**finetune):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.finetune.update(finetune)
  return config


def _rows(workdir):
  rows = train_lib.read_jsonl(workdir)
  return [{k: v for k, v in r.items() if k != "steps_per_sec"} for r in rows]


def test_config_variants_and_typos():
  for arg in (None, "quick", "quick,smoke"):
    config = config_lib.get_config(arg)
    assert 0 < config.nanoadam.density <= 1
    ft = config.finetune.train
    assert ft.checkpoint_every % ft.log_every == 0
  with pytest.raises(ValueError):
    config_lib.get_config("quick,dense=1")


def test_smoke_run_then_resume_from_a_mid_checkpoint(tmp_path, fast_compile):
  """One smoke sweep (a diverging lr included), then a crash simulated by
  dropping NanoAdam's last checkpoint: the rerun resumes at step 8 and ends
  bitwise where the uninterrupted run ended (checkpoint and metrics)."""
  workdir = str(tmp_path / "run")
  # 1e15: Adam-type steps of size ~lr overflow the logits (loss NaN/inf).
  config = _config(lrs=(1e-2, 1e15))
  r = ex.run(config, workdir)
  seeds = config.finetune.seeds
  assert r["old_acc_pretrained"] > 0.3  # 20 pretraining steps beat chance
  nano, adam = r["nanoadam"], r["adam"]
  for m in (nano, adam):
    # The diverged lr is reported, scored at chance and never selected.
    assert m["diverged_by_lr"] == [0, seeds] and m["num_diverged"] == seeds
    assert m["new_acc_by_lr"][1] == ex.CHANCE
    assert m["selected_lr"] == 1e-2 and m["finite_fraction"] == 1.0
    assert len(m["new_acc_by_seed"]) == seeds
    assert np.all(np.isfinite(m["forgetting_by_lr"]))
  # The masked optimizer touches only about density of the masked weights
  # and keeps moments only for them.
  assert nano["frac_changed"] < 0.2 < adam["frac_changed"]
  assert r["nano_state_fraction_of_adam"] < 0.1
  # Paired comparisons: per-seed differences, their mean and t interval.
  cmp = r["new_acc_vs_all"]
  diff = np.asarray(nano["new_acc_by_seed"]) - adam["new_acc_by_seed"]
  np.testing.assert_allclose(cmp["baselines"]["adam"]["by_seed"], diff)
  assert cmp["best_baseline"] == "adam"
  assert cmp["point"] == pytest.approx(diff.mean())
  assert cmp["lo"] <= cmp["point"] <= cmp["hi"]
  assert -1 <= r["spearman_finetune_start"] <= 1
  assert os.path.getsize(os.path.join(workdir, "finetune.png")) > 1000
  rows = _rows(workdir)
  runs = {x["run"] for x in rows}
  # Row names from lib.train.sweep_grid (its short labels).
  assert "nanoadam/lr0.01/seed0" in runs and "adam/lr1e15/seed1" in runs
  assert len(runs) == 1 + 2 * len(config.finetune.lrs) * seeds

  # Crash after the step-8 checkpoint of NanoAdam's sweep: drop step 12.
  ckpt = os.path.join(workdir, "finetune", "nanoadam", "ckpt")
  assert sorted(os.listdir(ckpt)) == ["12", "8"]
  clean = str(tmp_path / "clean" / "ckpt")
  shutil.copytree(os.path.join(ckpt, "12"), os.path.join(clean, "12"))
  shutil.rmtree(os.path.join(ckpt, "12"))
  os.remove(os.path.join(workdir, "results.json"))
  r2 = ex.run(config, workdir)
  assert _rows(workdir) == rows
  assert json.dumps(r2, sort_keys=True) == json.dumps(r, sort_keys=True)
  a, b = _restore(clean, 12), _restore(ckpt, 12)
  assert len(a) == len(b) > 0
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)  # NaNs (the diverged lr) included
  helpers.check_claim_keys(
    "nanoadam_finetune",
    workdir,
    absent={
      "nanoadam_small_weights_update_better": "smoke runs no mask ablation"
    },
  )


def _restore(ckpt_dir, step):
  import jax
  import orbax.checkpoint as ocp

  with ocp.CheckpointManager(ckpt_dir) as manager:
    return [np.asarray(x) for x in jax.tree.leaves(manager.restore(step))]


def test_zero_steps_and_early_errors(tmp_path, monkeypatch, fast_compile):
  config = _config()
  with config.unlocked():
    config.finetune.train.num_steps = 0
    config.pretrain.train.num_steps = 0
  r = ex.run(config, str(tmp_path / "zero"))
  for m in ("adam", "nanoadam"):  # Nothing moved: no drift, no forgetting.
    assert r[m]["drift"] == 0 and r[m]["forgetting"] == 0

  # Bad names and options fail in one line before any data is prepared.
  def no_data(*args, **kwargs):
    raise AssertionError("data prepared before validation")

  monkeypatch.setattr(ex.digits, "class_tasks", no_data)
  bad = [
    ("methods", ("adam", "sgd"), r"config.methods='sgd'.*'largest'"),
    ("methods", ("adam", "adam"), "no repeats"),
    ("finetune.lrs", (1e-3, 0.001), "repeated"),
    ("finetune.lrs", (1e-3, -1.0), "positive"),
    ("finetune.seeds", 0, "seeds"),
    ("nanoadam.density", 1.5, "density"),
    ("nanoadam.moments_on_change", "keep", "moments_on_change"),
    # Were one-line errors without their key, interval_level after training.
    ("data.test_fraction", 0.0, r"config\.data\.test_fraction=0\.0"),
    ("interval_level", float("nan"), r"config\.interval_level=nan"),
    ("pretrain.lr", -1.0, r"config\.pretrain\.lr=-1\.0"),
    ("head", "both", r"config\.head='both'"),
    (
      "finetune.lr_selection",
      "test_acc",
      r"config\.finetune\.lr_selection='test_acc'",
    ),
    ("finetune.val_fraction", 1.0, r"config\.finetune\.val_fraction=1\.0"),
  ]
  for i, (key, value, match) in enumerate(bad):
    config = _config()
    with config.unlocked():
      section, _, name = key.rpartition(".")
      (config[section] if section else config)[name] = value
    with pytest.raises(ConfigError, match=match) as e:
      ex.run(config, str(tmp_path / f"bad{i}"))
    assert "\n" not in str(e.value)


def test_multi_head_losses_leave_the_other_tasks_logits_without_gradient():
  """config.head "multi": a task's loss reads its own 5 logits only, so the
  output layer's rows of the other task get an exactly zero gradient (and
  Adam or NanoAdam leaves them bit for bit); "shared" reaches all 10."""
  import jax

  from lib import models

  model = models.MLP((8,), num_outputs=10)
  r = np.random.default_rng(0)
  x = r.normal(size=(16, 64)).astype(np.float32)
  params = model.init(jax.random.key(0), x[:1])
  for task, lo in (("a", 0), ("b", 5)):
    y = r.integers(lo, lo + 5, size=16)
    for head in ex.HEADS:
      g = jax.grad(ex._xent, argnums=1)(model, params, x, y, task, head)
      last = jax.tree.leaves(g)[-2:]  # the output layer's bias and kernel
      other = slice(5, 10) if task == "a" else slice(0, 5)
      for leaf in last:
        assert leaf.shape[-1] == 10
        rows = np.asarray(leaf)[..., other]
        if head == "multi":
          assert np.all(rows == 0.0), (task, leaf.shape)
        else:
          assert np.abs(rows).max() > 0, (task, leaf.shape)


def _rows_of(x, y):
  """(label, pixels) rows in a canonical order: compares multisets."""
  rows = np.concatenate([y[:, None], x], 1).astype(np.float64)
  return rows[np.lexsort(rows.T[::-1])]


def test_validation_images_are_held_out_of_the_new_task_training_set():
  val = ex.finetune_data(config_lib.get_config("quick"))
  old = ex.finetune_data(config_lib.get_config("quick,select_train_loss"))
  assert "x_b_val" not in old
  for k in ("x_a_train", "y_a_train", "x_a_test", "x_b_test", "y_b_test"):
    np.testing.assert_array_equal(val[k], old[k])  # untouched
  # b's training images split into training and validation, a fifth held.
  n = len(old["y_b_train"])
  assert len(val["y_b_val"]) == round(0.2 * n)
  assert len(val["y_b_train"]) + len(val["y_b_val"]) == n
  np.testing.assert_array_equal(
    _rows_of(
      np.concatenate([val["x_b_train"], val["x_b_val"]]),
      np.concatenate([val["y_b_train"], val["y_b_val"]]),
    ),
    _rows_of(old["x_b_train"], old["y_b_train"]),
  )
  assert set(val["y_b_val"].tolist()) <= set(range(5, 10))


def test_each_selection_mode_chooses_by_its_own_metric():
  """Oracle: the lowest mean over seeds, an lr with a diverged seed
  disqualified (per seed: that seed's lowest finite one); the two metrics
  choose different lrs on the same runs."""
  lrs = (1e-3, 1e-2, 1e-1, 1.0)
  # [lrs, seeds]: the lowest of either metric is at lr 1, where seed 1
  # diverged; of the rest, train loss is lowest at 1e-1, validation error
  # at 1e-2.
  s = {
    "train_loss": np.array([[0.5, 0.6], [0.2, 0.3], [0.1, 0.1], [0.0, 0.0]]),
    "val_error": np.array([[0.3, 0.2], [0.05, 0.1], [0.2, 0.2], [0.0, 0.0]]),
    "new_acc": np.full((4, 2), 0.9),
    "old_acc": np.full((4, 2), 0.8),
    "drift": np.zeros((4, 2)),
    "frac_changed": np.zeros((4, 2)),
    "diverged": np.array([[0, 0], [0, 0], [0, 0], [0, 1]], bool),
    "state_floats": 10,
  }
  expected = {
    "quick": (1e-2, [1.0, 1e-2]),
    "quick,select_train_loss": (1e-1, [1.0, 1e-1]),
  }
  for arg, (lr, by_seed) in expected.items():
    config = config_lib.get_config(arg)
    with config.unlocked():
      config.finetune.lrs = lrs
    runs = (
      s if arg == "quick" else {k: v for k, v in s.items() if k != "val_error"}
    )
    out = ex.summarize_method(config, runs, 0.9)
    assert out["selected_lr"] == lr and out["selected_lr_by_seed"] == by_seed
    assert ("val_error" in out) == (arg == "quick")
  assert out["train_loss"] == 0.1


def _summary(new, forget, lrs):
  """A synthetic `summarize` output: per-method per-seed numbers."""
  return {
    m: {
      "selected_lr": None if v is None else 0.01,
      "finite_fraction": 0.0 if v is None else 1.0,
      "new_acc_by_seed": v,
      "forgetting_by_seed": forget.get(m),
      "selected_lr_by_seed": lrs.get(m, [None]),
    }
    for m, v in new.items()
  }


def test_paired_comparisons_and_their_verdicts():
  new = {
    "nanoadam": [0.90, 0.92, 0.94],
    "adam": [0.80, 0.82, 0.84],  # nano +0.10 on every seed
    "random": [0.89, 0.93, 0.93],  # nano +0.00333, noisy: straddles 0
  }
  lrs = {"nanoadam": [0.1, 0.1, 0.1], "adam": [0.01] * 3, "random": [0.03] * 3}
  s = _summary(new, {}, lrs)
  out = ex.paired_vs(s, ["adam", "random"], "new_acc", 1.0, 0.95)
  assert out["best_baseline"] == "random"
  assert out["point"] == pytest.approx(0.01 / 3)
  by = np.asarray([0.01, -0.01, 0.01])
  half = 4.302653 * by.std(ddof=1) / np.sqrt(3)  # t(0.975, df=2)
  assert out["hi"] == pytest.approx(by.mean() + half, rel=1e-5)
  assert out["lo"] == pytest.approx(by.mean() - half, rel=1e-5)
  (claim,) = [
    c for c in claims.CLAIMS if c.name == "nanoadam_generalises_better"
  ]
  row = report.evaluate(claim, {"new_acc_vs_all": out})
  assert row["verdict"] == "unresolved", row["reasons"]
  # Against Adam alone the interval clears 0: "yes".
  alone = ex.paired_vs(s, ["adam"], "new_acc", 1.0, 0.95)
  assert report.evaluate(claim, {"new_acc_vs_all": alone})["verdict"] == "yes"
  # A baseline that diverged at every lr is reported and forces "no".
  s["largest"] = _summary({"largest": None}, {}, {})["largest"]
  out = ex.paired_vs(s, ["adam", "largest"], "new_acc", 1.0, 0.95)
  assert out["baselines"]["largest"] == {"diverged": True}
  assert out["comparator_finite_fraction"] == 0.5  # 1 of 2 baselines usable
  assert report.evaluate(claim, {"new_acc_vs_all": out})["verdict"] == "no"
  # NanoAdam diverging at every lr fails the claim (not "missing").
  worse = dict(s, nanoadam=_summary({"nanoadam": None}, {}, {})["nanoadam"])
  out = ex.paired_vs(worse, ["adam"], "new_acc", 1.0, 0.95)
  written = json.loads(json.dumps(train_lib.workdir.to_python(out)))
  row = report.evaluate(claim, {"new_acc_vs_all": written})
  assert row["verdict"] == "no", row
  # Learning-rate ratios: per seed, against the strongest (largest lr).
  ratio = ex.lr_ratio_vs(s, ["adam", "random"])
  assert ratio["best_baseline"] == "random"
  assert ratio["point"] == pytest.approx(10 / 3)
  assert ratio["lo"] == ratio["hi"] == pytest.approx(10 / 3)


def test_claims_name_their_comparators():
  names = {c.name for c in claims.CLAIMS}
  assert "nanoadam_small_weights_update_better" in names
  for c in claims.CLAIMS:
    if not c.sanity:
      assert c.comparator_diverged and c.interval, c.name
      assert "strongest of" in c.comparator, c.name
