"""experiments/sadl.py: smoke run, oracles, divergence, bad input, 2 processes.

Oracles: optax.adam on the exact gradient of the mean client loss (K = 1,
client lr 1: the mean delta is that gradient, and the identity sketch makes
SADL distributed Adam), the lr selection rule (validation error, or the
earlier train loss) recomputed from the metrics rows, and a one-process run of the same config against two processes.
"""

import json
import os

import numpy as np
import optax
import pytest

from configs import sadl as sadl_config
from experiments import sadl as sadl_exp
from experiments.claims import report
from experiments.claims import sadl as sadl_claims
from lib import train as train_lib
from lib.core.errors import ConfigError
from lib.optim.sadl import compare
from tests import helpers

REPO_ROOT = os.path.dirname(
  os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
# The multi-process comparison runs only SADL on the MLP (one compile each).
_MP_OVERRIDES = (
  "--config.quadratic.enabled=false",
  "--config.mlp.methods=('sadl',)",
)


def _mp_config():
  config = sadl_config.get_config("quick,smoke")
  config.quadratic.enabled = False
  config.mlp.methods = ("sadl",)
  return config


def _claim(name):
  return next(c for c in sadl_claims.CLAIMS if c.name == name)


def test_smoke_run_reports_every_method(tmp_path, fast_compile):
  config = sadl_config.get_config("quick,smoke")
  results = sadl_exp.run(config, str(tmp_path))
  on_disk = json.loads((tmp_path / "results.json").read_text())
  assert on_disk["devices"] == 8 and on_disk["processes"] == 1
  assert os.path.exists(tmp_path / "sadl.png")

  # One sub-workdir per sweep (each d, the MLP); a member is one lr rank and
  # one seed of every method: rows are (log steps) x (lrs x seeds) members.
  rows = train_lib.read_jsonl(str(tmp_path))
  q, m = config.quadratic, config.mlp
  q_logs = q.train.num_steps // q.train.log_every
  m_logs = m.train.num_steps // m.train.log_every
  assert len(rows) == (
    len(q.dims) * q_logs * len(q.lrs.sadl) * q.seeds
    + m_logs * len(m.lrs.sadl) * m.seeds
  )
  assert (tmp_path / "mlp" / "ckpt").is_dir()
  assert {r["run"] for r in rows if r["run"].startswith("mlp/")} == {
    f"mlp/lr_index{i}/seed{s}" for i in range(len(m.lrs.sadl)) for s in range(2)
  }

  quad = results["quadratic"]["d256"]
  assert quad["sadl"]["bytes_per_round"] == 2 * 4 * 64  # b floats each way
  assert quad["sadl"]["compression"] == 256 / 64
  assert 0 < quad["sadl"]["loss_ratio"] < 0.95  # 8 rounds do reduce it

  mlp = results["mlp"]
  d = mlp["dim"]
  assert d == 64 * 16 + 16 + 16 * 10 + 10
  assert mlp["adam"]["bytes_per_round"] == 2 * 4 * d
  assert mlp["sadl_10x"]["bytes_per_round"] == 2 * 4 * (d // 10)
  _check_lr_choice(mlp, rows, m, "val_error", m.train.num_steps)
  # The validation images are held out of the training split (the clients
  # train on the rest); the test split is the one without a hold-out.
  sizes = mlp["split_sizes"]
  n_test = round(1797 * m.test_fraction)
  assert sizes["test"] == n_test
  assert sizes["val"] == round((1797 - n_test) * m.val_fraction)
  assert sizes["train"] + sizes["val"] + n_test == 1797
  # Six rounds of Adam on digits already beat chance (0.1) by far.
  assert mlp["adam"]["test_acc"] > 0.2

  # SADL is compared with the better of both baselines, named.
  vs = mlp["vs_best_baseline_10x"]
  accs = {t: mlp[t]["test_acc"] for t in ("sketched_sgd_10x", "fetchsgd_10x")}
  assert vs["comparator"] == max(accs, key=accs.get)
  assert vs["point"] == pytest.approx(
    mlp["sadl_10x"]["test_acc"] - accs[vs["comparator"]], abs=1e-6
  )
  assert vs["lo"] <= vs["point"] <= vs["hi"] and vs["n"] == 2
  for name in (
    "sadl_mlp_beats_best_baseline_10x",
    "sadl_mlp_accuracy_near_adam",
  ):
    assert report.evaluate(_claim(name), results)["verdict"] != "missing"
  helpers.check_claim_keys(
    "sadl",
    tmp_path,
    absent={
      "sadl_quadratic_beats_best_baseline": (
        "smoke's quadratic runs SADL and Adam only"
      ),
      "sadl_mlp_beats_best_baseline_50x": "smoke's MLP runs 10x only",
      "sadl_one_sketch_quadratic_beats_best_baseline": (
        "smoke's quadratic runs SADL and Adam only"
      ),
      "sadl_one_sketch_mlp_beats_best_baseline_50x": (
        "smoke's MLP runs 10x only"
      ),
    },
  )


def _check_lr_choice(mlp, rows, m, metric, last_step):
  """Each method's lr has the lowest mean final `metric` over seeds (ties to
  the first), recomputed from the metrics rows."""
  assert mlp["lr_selection"] == metric
  for tag in ("sadl_10x", "sketched_sgd_10x", "fetchsgd_10x", "adam"):
    if tag not in mlp:
      continue
    row = mlp[tag]
    lrs = m.lrs[compare.lr_key(tag.removesuffix("_10x"))]
    assert (
      len(row["sweep"]) == len(lrs) and len(row["per_seed"]["test_acc"]) == 2
    )
    final = {lr: [] for lr in lrs}
    for r in rows:
      if r["run"].startswith("mlp/") and r["step"] == last_step:
        lr = lrs[int(r["run"].split("/")[1][len("lr_index") :])]
        final[lr].append(float(r[f"{tag}/{metric}"]))
    assert row["lr"] == pytest.approx(
      min(final, key=lambda k: np.mean(final[k]))
    )
    assert row[metric] == pytest.approx(np.mean(final[row["lr"]]))


def test_train_loss_selection_has_no_hold_out(tmp_path, fast_compile):
  """`select_train_loss`: the earlier protocol, every training image on a
  client, the lr chosen by the final training loss."""
  config = sadl_config.get_config("quick,smoke,select_train_loss")
  config.quadratic.enabled = False
  config.mlp.methods = ("sadl",)
  m = config.mlp
  results = sadl_exp.run(config, str(tmp_path))
  mlp = results["mlp"]
  _check_lr_choice(
    mlp, train_lib.read_jsonl(str(tmp_path)), m, "train_loss", m.train.num_steps
  )
  assert "val_error" not in mlp["sadl_10x"] and "val" not in mlp["split_sizes"]
  n_test = round(1797 * m.test_fraction)
  assert mlp["split_sizes"] == {"train": 1797 - n_test, "test": n_test}


def _adam_oracle(config, d, lr):
  """L_T/L_0 of optax.adam on the exact gradient of the mean client loss."""
  q = config.quadratic
  lam = np.arange(1, d + 1, dtype=np.float64) ** -q.exponent
  problem = compare.quadratic_problem(
    d,
    num_clients=config.num_clients,
    exponent=q.exponent,
    target_spread=q.target_spread,
    seed=config.seed,
  )
  target = (
    problem.data["clients"].astype(np.float64).mean(0)
  )  # the clients' mean
  tx = optax.adam(lr, b1=q.b1, b2=q.b2, eps=q.eps)
  x = np.zeros(d)
  state = tx.init(x)
  for _ in range(q.train.num_steps):
    updates, state = tx.update(lam * (x - target), state)
    x = x + np.asarray(updates, np.float64)
  return 0.5 * np.sum(lam * (x - 1) ** 2) / (0.5 * lam.sum())


def test_identity_sketch_is_adam_on_the_exact_gradient(tmp_path, fast_compile):
  """K = 1 at client lr 1: the mean delta is the gradient; R = I is Adam."""
  config = sadl_config.get_config("quick,smoke")
  config.mlp.enabled = False
  config.quadratic.methods = ("adam",)
  results = sadl_exp.run(config, str(tmp_path))
  row = results["quadratic"]["d256"]["adam"]
  oracle = [_adam_oracle(config, 256, lr) for lr in config.quadratic.lrs.adam]
  ours = [s["loss_ratio"] for s in row["sweep"]]
  np.testing.assert_allclose(ours, oracle, rtol=2e-4)
  assert row["lr"] == config.quadratic.lrs.adam[int(np.argmin(oracle))]
  assert max(oracle) / min(oracle) > 1.5  # the grid's lrs differ


def test_divergence_is_recorded_with_its_round(tmp_path, fast_compile):
  config = sadl_config.get_config("quick,smoke")
  config.mlp.enabled = False
  config.quadratic.methods = ("sadl", "sketched_sgd")
  # Server SGD at lr >= 1e4 on curvature-1 coordinates overflows in rounds.
  config.quadratic.lrs.sketched_sgd = (1e4, 1e6, 1e8)
  results = sadl_exp.run(config, str(tmp_path))
  quad = results["quadratic"]
  sgd = quad["d256"]["sketched_sgd"]
  assert sgd["diverged"] is True
  assert 1 <= sgd["diverged_round"] <= config.quadratic.train.num_steps
  for s in sgd["sweep"]:
    assert s["finite_fraction"] == 0.0 and s["nonfinite_rounds"][0] >= 1
  # The faster the lr, the sooner it went non-finite.
  rounds = [s["nonfinite_rounds"][0] for s in sgd["sweep"]]
  assert rounds == sorted(rounds, reverse=True)
  assert quad["d256"]["sadl"]["diverged"] is False
  # A claim against a diverged baseline is never a "yes".
  vs = quad["vs_best_baseline"]
  assert vs["comparator"] == "sketched_sgd"
  assert vs["comparator_finite_fraction"] == 0.0
  row = report.evaluate(_claim("sadl_quadratic_beats_best_baseline"), results)
  assert row["verdict"] == "no"


def test_bad_input_is_a_clear_error(tmp_path):
  def config_with(**quadratic):
    config = sadl_config.get_config("quick,smoke")
    config.mlp.enabled = False
    config.quadratic.update(quadratic)
    return config

  config = config_with()
  config.num_clients = 12  # 8 devices in tests
  with pytest.raises(ConfigError, match="num_clients=12 is not a positive"):
    sadl_exp.run(config, str(tmp_path / "a"))
  with pytest.raises(ConfigError, match="smaller than the model dimension"):
    sadl_exp.run(config_with(sketch_size=256), str(tmp_path / "b"))
  with pytest.raises(ConfigError, match="quadratic.methods='sgd' is not one"):
    sadl_exp.run(config_with(methods=("sadl", "sgd")), str(tmp_path / "c"))
  unfair = config_with()
  unfair.quadratic.lrs.adam = (1e-2, 3e-2)
  with pytest.raises(ConfigError, match="same number of learning rates"):
    sadl_exp.run(unfair, str(tmp_path / "d"))
  with pytest.raises(ConfigError, match="seeds=0 must be an int >= 1"):
    sadl_exp.run(config_with(seeds=0), str(tmp_path / "e"))
  for sub in "abcde":  # refused before any training
    assert not (tmp_path / sub / "quadratic").exists()
  with pytest.raises(ValueError, match="unknown variant"):
    sadl_config.get_config("huge")


@pytest.mark.parametrize(
  "key,value,match",
  [
    # Each was a deep traceback (hidden 0: flax's fan computation) or a
    # one-line error without its key after the quadratic part trained.
    ("mlp.hidden", 0, r"config\.mlp\.hidden=0 must be an integer >= 1"),
    ("mlp.local_steps", 0, r"config\.mlp\.local_steps=0"),
    ("mlp.client_lr", float("nan"), r"config\.mlp\.client_lr=nan"),
    ("mlp.test_fraction", 0.0, r"config\.mlp\.test_fraction=0\.0"),
    ("mlp.val_fraction", 1.0, r"config\.mlp\.val_fraction=1\.0"),
    ("mlp.lr_selection", "test_acc", r"config\.mlp\.lr_selection='test_acc'"),
    ("quadratic.sketch_size", 0, r"config\.quadratic\.sketch_size=0"),
    ("quadratic.b2", 1.0, r"config\.quadratic\.b2=1\.0 must be"),
  ],
)
def test_bad_numbers_name_the_key_before_any_work(tmp_path, key, value, match):
  config = sadl_config.get_config("quick,smoke")
  part, name = key.split(".")
  config[part][name] = value
  with pytest.raises(ConfigError, match=match):
    sadl_exp.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)


def test_too_few_training_images_per_client_is_a_clear_error(tmp_path):
  # Was a deep gather error from inside the first round's batch.
  config = sadl_config.get_config("quick,smoke")
  config.quadratic.enabled = False
  config.mlp.val_fraction = 0.99
  with pytest.raises(ConfigError, match=r"leave 0 per client.*val_fraction"):
    sadl_exp.run(config, str(tmp_path))
  assert not os.listdir(tmp_path)


def test_two_process_command_line_matches_one_process(tmp_path):
  """The documented localhost command: 2 processes x 4 CPU devices."""
  workdir = tmp_path / "mp"
  helpers.run_two_processes(
    "experiments.sadl",
    "--config=configs/sadl.py:quick,smoke",
    f"--workdir={workdir}",
    *_MP_OVERRIDES,
  )
  multi = json.loads((workdir / "results.json").read_text())
  assert multi["processes"] == 2 and multi["devices"] == 8
  single = sadl_exp.run(_mp_config(), str(tmp_path / "single"))
  assert single["devices"] == 8 and single["processes"] == 1
  for key in ("train_loss", "test_acc", "params_l2"):
    np.testing.assert_allclose(
      multi["mlp"]["sadl_10x"][key],
      single["mlp"]["sadl_10x"][key],
      rtol=1e-5,
    )
