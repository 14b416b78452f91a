"""lib.optim.sadl.compare: the lr rule, the paired summaries, the quadratic.

Oracles are arithmetic done here by hand (means, Student-t half widths from
scipy, the quadratic's closed-form excess loss), never the module's output.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as scipy_stats

from lib.core.errors import ConfigError
from lib.optim.sadl import compare


def test_a_diverged_seed_disqualifies_its_lr():
  final = [[0.1, np.nan], [0.3, 0.5], [0.2, 0.2]]
  went = [[0, 4], [0, 0], [0, 0]]
  scores, ok = compare.lr_scores(final, went)
  np.testing.assert_array_equal(scores, [np.inf, 0.4, 0.2])
  row = compare.chosen_row(
    2, lrs=(1.0, 2.0, 3.0), scores=scores, ok=ok, nonfinite=went, metric="m"
  )
  assert row["lr"] == 3.0 and row["best_at_edge"] and not row["diverged"]
  assert row["diverged_round"] is None
  assert row["sweep"][0] == {
    "lr": 1.0,
    "m": np.inf,
    "finite_fraction": 0.5,
    "nonfinite_rounds": [0, 4],
  }


def test_all_lrs_diverged_reports_the_longest_survivor():
  went = np.array([[3, 9], [7, 5], [2, 2]])
  scores, ok = compare.lr_scores(np.full((3, 2), np.nan), went)
  row = compare.chosen_row(
    None, lrs=(1.0, 2.0, 3.0), scores=scores, ok=ok, nonfinite=went, metric="m"
  )
  # Earliest non-finite round per lr: 3, 5, 2 -> the second lasted longest.
  assert row["diverged"] and row["lr"] == 2.0 and row["diverged_round"] == 5


def test_paired_is_the_student_t_interval_of_the_differences():
  out = compare.paired([0.9, 0.8, 0.7], [0.8, 0.6, 0.7])
  diff = np.array([0.1, 0.2, 0.0])
  half = scipy_stats.t.ppf(0.975, 2) * diff.std(ddof=1) / np.sqrt(3)
  assert out["point"] == pytest.approx(0.1)
  assert out["lo"] == pytest.approx(0.1 - half)
  assert out["hi"] == pytest.approx(0.1 + half)
  assert out["n"] == 3 and out["comparator_finite_fraction"] == 1.0
  one = compare.paired([0.5], [0.25])  # one seed: no interval
  assert (one["point"], one["lo"], one["hi"]) == (0.25, -np.inf, np.inf)
  bad = compare.paired([0.5, 0.6], [np.nan, 0.5])  # non-finite comparator
  assert bad["comparator_finite_fraction"] == 0.5 and bad["hi"] == np.inf


def _row(acc, diverged=False):
  acc = np.asarray(acc, float)
  return {
    "test_acc": acc.mean(),
    "train_loss": 1.0,
    "diverged": diverged,
    "per_seed": {"test_acc": acc.tolist()},
  }


def test_mlp_summary_holds_against_every_baseline():
  rows = {
    "sadl_10x": _row([0.80, 0.90, 0.85]),
    # The strongest baseline (smallest gap), with a tight interval ...
    "sketched_sgd_10x": _row([0.78, 0.87, 0.84]),
    # ... and a weaker but noisy one, whose lower bound is the lowest.
    "fetchsgd_10x": _row([0.30, 0.96, 0.75]),
    "adam": _row([0.90, 0.92, 0.91]),
  }
  out = compare.summarize_mlp(rows, (10,))
  vs = out["vs_best_baseline_10x"]
  assert vs["comparator"] == "sketched_sgd_10x"
  assert vs["point"] == pytest.approx(0.02)
  tight = np.array([0.02, 0.03, 0.01])
  half = scipy_stats.t.ppf(0.975, 2) * tight.std(ddof=1) / np.sqrt(3)
  assert vs["hi"] == pytest.approx(0.02 + half)
  noisy = np.array([0.50, -0.06, 0.10])
  half = scipy_stats.t.ppf(0.975, 2) * noisy.std(ddof=1) / np.sqrt(3)
  assert vs["lo"] == pytest.approx(noisy.mean() - half)
  assert vs["comparator_finite_fraction"] == 1.0
  adam = out["vs_adam_10x"]  # Adam minus SADL
  assert adam["point"] == pytest.approx(0.91 - 0.85)
  rows["fetchsgd_10x"]["diverged"] = True
  vs = compare.summarize_mlp(rows, (10,))["vs_best_baseline_10x"]
  assert vs["comparator_finite_fraction"] == 0.5


def _t_band(x):
  x = np.asarray(x, float)
  half = scipy_stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
  return x.mean() - half, x.mean() + half


def test_quadratic_bands_hold_against_every_baseline_at_every_d():
  """SADL minus each baseline at each d, paired by seed: the point is the
  worst difference of means, hi the largest upper end of all, lo that of
  the worst pair; the gap to Adam the same over d."""
  rng = np.random.default_rng(0)

  def row(values):
    v = np.asarray(values, float)
    return {
      "loss_ratio": float(v.mean()),
      "per_seed": v.tolist(),
      "diverged": False,
      "compression": 16.0,
    }

  quad, seeds = {}, 4
  for k, shift in (("d64", 0.0), ("d256", 0.01)):
    quad[k] = {
      "sadl": row(0.10 + shift + 0.01 * rng.standard_normal(seeds)),
      "sketched_sgd": row(0.09 + 0.01 * rng.standard_normal(seeds)),
      "fetchsgd": row(0.12 + 0.01 * rng.standard_normal(seeds)),
      "adam": row(0.01 + 0.001 * rng.standard_normal(seeds)),
    }
  out = compare.summarize_quadratic(quad, [64, 256])
  vs = out["vs_best_baseline"]
  diffs = {
    f"{k}/{n}": np.subtract(quad[k]["sadl"]["per_seed"], quad[k][n]["per_seed"])
    for k in quad
    for n in ("sketched_sgd", "fetchsgd")
  }
  worst = max(diffs, key=lambda c: diffs[c].mean())
  assert vs["point"] == pytest.approx(diffs[worst].mean(), abs=1e-12)
  assert vs["lo"] == pytest.approx(_t_band(diffs[worst])[0], abs=1e-12)
  assert vs["hi"] == pytest.approx(
    max(_t_band(d)[1] for d in diffs.values()), abs=1e-12
  )
  for c, d in diffs.items():
    np.testing.assert_allclose(vs["per_seed"][c], d, atol=1e-15)
  gaps = {
    k: np.subtract(quad[k]["sadl"]["per_seed"], quad[k]["adam"]["per_seed"])
    for k in quad
  }
  band = out["sadl_gap_to_adam"]
  assert out["sadl_gap_to_adam_max"] == pytest.approx(band["point"], abs=1e-12)
  top = max(gaps, key=lambda k: gaps[k].mean())
  assert band["lo"] == pytest.approx(_t_band(gaps[top])[0], abs=1e-12)
  assert band["hi"] == pytest.approx(
    max(_t_band(g)[1] for g in gaps.values()), abs=1e-12
  )
  # One seed: the points stay, no band.
  for k in quad:
    for r in quad[k].values():
      r["per_seed"] = r["per_seed"][:1]
      r["loss_ratio"] = r["per_seed"][0]
  out = compare.summarize_quadratic(quad, [64, 256])
  assert np.isfinite(out["vs_best_baseline"]["point"])
  assert np.isnan(out["vs_best_baseline"]["lo"])
  assert np.isnan(out["sadl_gap_to_adam"]["hi"])


def test_quadratic_excess_loss_ratio_and_mean_target():
  d, c = 64, 8
  problem = compare.quadratic_problem(
    d, num_clients=c, exponent=1.5, target_spread=0.5, seed=0
  )
  assert problem.data["clients"].shape == (c, d)
  # The targets average to 1 over the clients: the mean loss's minimiser.
  np.testing.assert_allclose(problem.data["clients"].mean(0), 1.0, atol=1e-6)
  lam = np.arange(1, d + 1, dtype=np.float64) ** -1.5
  x = np.linspace(0.0, 2.0, d)
  ratio = jax.jit(problem.evaluate)(jnp.asarray(x, jnp.float32), None)
  expected = np.sum(lam * (x - 1) ** 2) / np.sum(lam)
  assert float(ratio["loss_ratio"]) == pytest.approx(expected, rel=1e-5)
  assert float(
    problem.evaluate(problem.init_params(0), None)["loss_ratio"]
  ) == (pytest.approx(1.0))


def test_describe_counts_bytes_and_refuses_a_large_sketch():
  hp = dict(b1=0.9, b2=0.999, eps=1e-3, fetchsgd_rows=3)
  sadl = compare.describe(
    compare.Run("s", "sadl", 64, (1.0,)), dim=256, hparams=hp, seed=0
  )
  assert sadl == {"bytes_per_round": 2 * 4 * 64, "compression": 4.0}
  with pytest.raises(ConfigError, match="smaller than"):
    compare.describe(
      compare.Run("f", "fetchsgd", 300, (1.0,)), dim=256, hparams=hp, seed=0
    )
  with pytest.raises(ConfigError, match="unknown method"):
    compare.make_method(
      "sgd", dim=8, sketch_size=4, learning_rate=1.0, hparams=hp, key=None
    )
