"""quartet_scaling: the sweep trains, the constrained law is fitted with bands
that hold their points, results and figure written; bad configs fail early."""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from configs import quartet_scaling as config_lib
from experiments import _quartet
from experiments import quartet_scaling
from experiments.claims import quartet as quartet_claims
from experiments.claims import report
from lib import models
from lib.core.errors import ConfigError
from tests import helpers


def test_smoke_sweep_fits_and_writes(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = quartet_scaling.run(config, str(tmp_path))
  # 2 sizes x 2 methods x 3 readings, each a finite loss below uniform.
  assert len(r["points"]) == 12
  for p in r["points"]:
    assert np.isfinite(p["val_loss"]) and p["val_loss"] < np.log(256)
    assert p["tokens"] == p["steps"] * 8 * 32
  # Loss goes down with D for every (size, method).
  for method in ("bf16", "quartet"):
    for d in (32, 64):
      curve = [
        p["val_loss"]
        for p in r["points"]
        if p["method"] == method and p["d_model"] == d
      ]
      assert curve == sorted(curve, reverse=True)
  e = r["eff"]["quartet"]
  for k in ("eff_n", "eff_d"):
    # The band holds its own point (issue 12).
    assert 0 < e[f"{k}_lo"] <= e[k] <= e[f"{k}_hi"]
  assert e["paired"] and e["band_level"] == 0.95
  b = r["base"]
  assert b["rms_log_residual"] < 0.05
  # Physical region: positive exponents, E >= 0, the paper's fixed gamma.
  assert b["alpha"] > 0 and b["beta"] > 0 and b["E"] >= 0
  assert b["gamma_fixed"] and b["gamma"] == pytest.approx(0.2764)
  ident = b["identifiability"]
  assert len(ident["singular_values"]) == 5
  assert set(ident["se"]) == {
    "log_A",
    "log_alpha",
    "log_B",
    "log_beta",
    "log_E",
  }
  assert set(b["bootstrap"]) == {"alpha", "beta", "E"}
  assert r["diverged_points"] == []
  assert os.path.exists(os.path.join(tmp_path, "scaling_fit.png"))
  with open(os.path.join(tmp_path, "results.json")) as f:
    saved = json.load(f)
  assert saved["eff"]["quartet"]["eff_n"] == e["eff_n"]
  # Every claim on this experiment finds its numbers in results.json.
  claims = [
    c for c in quartet_claims.CLAIMS if c.experiment == "quartet_scaling"
  ]
  assert len(claims) == 5
  for c in claims:
    row = report.evaluate(c, saved)
    assert row["verdict"] != "missing", (c.name, row["reasons"])
  helpers.check_claim_keys("quartet_scaling", tmp_path)


def test_model_sizes_follow_the_sweep():
  sizes = quartet_scaling.sizes(config_lib.get_config("quick"))
  assert [s.d_model for s in sizes] == [32, 64, 128]
  assert [s.mlp_hidden for s in sizes] == [96, 192, 352]
  paper = quartet_scaling.sizes(config_lib.get_config())
  assert [(s.n_layers, s.d_model, s.n_heads) for s in paper] == [
    (6, 640, 5),
    (7, 768, 6),
    (8, 1024, 8),
    (10, 1280, 10),
  ]


def test_paper_sizes_have_the_official_widths_and_warmup():
  # The official --multiple-of 256: the paper's N (plots.ipynb) exactly.
  config = config_lib.get_config()
  paper = quartet_scaling.sizes(config)
  assert [s.mlp_hidden for s in paper] == [1792, 2048, 2816, 3584]
  n = [
    models.non_embedding_params(_quartet.model_config(config, "bf16", s))
    for s in paper
  ]
  assert n == [30_482_560, 49_556_736, 102_777_856, 203_188_480]
  # main_setup.sh: WARMUP_STEPS = ITERATIONS / 10.
  assert config.optim.warmup_fraction == 0.1
  assert config.optim.schedule == "one_cycle"
  assert config.optim.weight_decay_mask == "linear"
  assert config.residual_init == "scaled"
  # The official trainer's torch bf16 autocast (src/optim/base.py).
  assert config.compute_dtype == "bfloat16"
  assert config_lib.get_config("gpu").compute_dtype == "bfloat16"


@pytest.mark.parametrize(
  "override, match",
  [
    (
      dict(read_steps=(3,), protocol="readings"),
      "multiples of config.train.eval_every",
    ),
    (dict(read_steps=(2, 8)), "go past config.train.num_steps"),
    (dict(read_steps=(1, 4)), "integers >= 2"),
    # 2 sizes x 2 read steps: fewer (N, D) points than the base law's 5
    # parameters (before, a ValueError after all the training).
    (dict(read_steps=(2, 4)), "5 free parameters .* give 4 .N, D. points"),
    (dict(protocol="cosine"), "config.protocol='cosine' is not one of"),
    (dict(methods=("quartet", "bf16")), "must start with 'bf16'"),
    (dict(methods=("bf16", "fp8")), r"config.methods='fp8' is not one of"),
    (dict(compute_dtype="fp16"), "config.compute_dtype='fp16' is not one of"),
  ],
)
def test_bad_sweep_configs_name_the_key(tmp_path, override, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.update(override)
  with pytest.raises(ConfigError, match=match):
    quartet_scaling.run(config, str(tmp_path))


@pytest.mark.parametrize(
  "fit, match",
  [
    (dict(gamma_range=(0.5, 0.1)), "config.fit.gamma_range"),
    (dict(bootstrap_samples=1), "config.fit.bootstrap_samples=1"),
    (dict(band_level=1.0), "config.fit.band_level=1.0"),
  ],
)
def test_bad_fit_configs_fail_before_training(tmp_path, fit, match):
  config = config_lib.get_config("quick,smoke")
  config.fit.update(fit)
  with pytest.raises(ConfigError, match=match):
    quartet_scaling.run(config, str(tmp_path))
  assert sorted(os.listdir(tmp_path)) == []  # not even config.json


def test_sweep_sizes_must_be_mxfp4_groups():
  config = config_lib.get_config("quick,smoke")
  config.sweep.d_model = (48, 64)
  with pytest.raises(ConfigError, match="d_model 48 is not a multiple of 32"):
    quartet_scaling.sizes(config)
  config.sweep.d_model = (32,)
  with pytest.raises(ConfigError, match="equally long"):
    quartet_scaling.sizes(config)


@pytest.mark.parametrize("protocol", ["run_per_point", "readings"])
def test_each_point_is_the_end_of_its_own_run(tmp_path, monkeypatch, protocol):
  # The official sweep (main_setup.sh) trains one OneCycle run per (N, D):
  # a point of s steps comes from a run of s steps with the decaying
  # schedule; "readings" [ours] reads one constant-lr run at every s.
  config = config_lib.get_config("quick,smoke")
  config.protocol = protocol
  calls = []

  def fake_train(c, method, data, *, workdir, name, model, **kw):
    del data, model
    steps = c.train.num_steps
    calls.append(
      (method, steps, kw["constant"], os.path.relpath(workdir, tmp_path))
    )
    losses = {
      s: np.array([5.0 - 0.1 * s + (method != "bf16") * 0.01])
      for s in range(1, steps + 1)
    }
    return {"history": [], "val_loss": losses}

  monkeypatch.setattr(_quartet, "train_method", fake_train)
  points = quartet_scaling.sweep(config, str(tmp_path), data=None)
  steps = tuple(config.read_steps)
  if protocol == "run_per_point":
    assert len(calls) == 2 * 2 * len(steps)
    assert {(c[1], c[2]) for c in calls} == {(s, False) for s in steps}
    assert "bf16_d32_l1/steps4" in {c[3] for c in calls}
  else:
    assert len(calls) == 2 * 2
    assert {(c[1], c[2]) for c in calls} == {(config.train.num_steps, True)}
  # Either way a point's loss is its run's loss at its own step count.
  for p in points:
    assert p["val_loss"] == pytest.approx(
      5.0 - 0.1 * p["steps"] + (p["method"] != "bf16") * 0.01
    )


def _adam_step_sizes(config, steps):
  # With a constant gradient 1, Adam's bias-corrected step is lr_t g / |g|
  # (up to eps 1e-8): the parameter's change per step reads the schedule.
  tx = _quartet.make_optimizer(config, 1e-3)
  params = {"x": jnp.zeros(())}
  state = tx.init(params)
  out = []
  for _ in range(steps):
    updates, state = tx.update({"x": jnp.ones(())}, state, params)
    out.append(-float(updates["x"]))
  return out


def test_a_points_schedule_ends_at_a_tenth_of_the_peak():
  # torch OneCycleLR (div 100, final_div 0.1): lr/100 at step 0, the peak at
  # the end of the 10 % warmup, lr/10 at the run's last step.
  config = config_lib.get_config("quick")
  for s in config.read_steps:
    c = quartet_scaling._point_config(config, s)
    assert (c.train.num_steps, c.train.eval_every) == (s, s)
    lrs = _adam_step_sizes(c, s)
    assert lrs[0] == pytest.approx(1e-5)
    assert max(lrs) == pytest.approx(1e-3)
    assert lrs[s - 1] == pytest.approx(1e-4)


def test_plane_residual_is_the_part_no_plane_explains():
  # y = X c + r with r orthogonal to X's columns: the least-squares plane
  # recovers X c and leaves exactly r.
  rng = np.random.default_rng(0)
  n = np.exp(rng.uniform(8, 14, 12))
  d = np.exp(rng.uniform(10, 16, 12))
  x = np.stack([np.ones(12), np.log(n), np.log(d)], 1)
  r = rng.normal(size=12) * 0.02
  r -= x @ np.linalg.lstsq(x, r, rcond=None)[0]
  loss = np.exp(x @ np.array([1.0, -0.05, -0.1]) + r)
  got = quartet_scaling.plane_rms_log_residual(n, d, loss)
  assert got == pytest.approx(np.sqrt(np.mean(r**2)), rel=1e-9)
  assert got > 0.005


def test_a_run_length_input_trains_as_the_fixed_schedule(
  tmp_path, fast_compile
):
  # run_per_point passes each run's one-cycle lengths as inputs of the step
  # (one compiled program per (size, method)): the same learning rates
  # (schedules_test), so the same training up to the compiled arithmetic's
  # rounding (bitwise here at 6 steps).
  config = config_lib.get_config("quick,smoke")
  size = quartet_scaling.sizes(config)[0]
  data = _quartet.load_data(config)
  c = quartet_scaling._point_config(config, 6)
  out = [
    _quartet.train_seeds(
      c,
      "quartet",
      data,
      workdir=str(tmp_path / str(flag)),
      seed_ids=(0, 1),
      model=size,
      learning_rate=size.learning_rate,
      length_input=flag,
    )["val_loss"][6]
    for flag in (False, True)
  ]
  np.testing.assert_allclose(out[1], out[0], rtol=1e-6)  # bitwise here
