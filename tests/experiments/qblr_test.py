"""The QBLR experiment: config checks, early validation, and a smoke run."""

import json
import os

import numpy as np
import pytest

from configs import qblr as config_lib
from experiments import qblr
from lib import train as train_lib
from lib.core.errors import ConfigError
from tests import helpers


def test_config_variants_and_typos():
  for arg in (None, "quick", "quick,smoke"):
    config = config_lib.get_config(arg)
    assert config.vi.train.num_steps > 0 and config.mle.train.num_steps > 0
    qblr.check_config(config)
  with pytest.raises(ValueError):
    config_lib.get_config("quikc")
  with pytest.raises(AttributeError):
    config_lib.get_config("quick").vi.lr_typo = 1
  # The MC keys follow the one seed of the config.
  config = config_lib.get_config("quick,smoke")
  config.seed = 3
  assert config.vi.train.seed == 3 and config.mle.train.seed == 3
  # ':paper_steps': the paper's step-size rules for every VI method that
  # has one, and BBVI-NS's 10 MC samples; the grids stay the default.
  paper = config_lib.get_config("quick,paper_steps").vi
  grid = config_lib.get_config("quick").vi
  for key in ("qng_nw_rdog", "qng_rdog", "bbvi_dog"):
    assert paper[key] and not grid[key]
  assert (paper.bbvi_num_samples, grid.bbvi_num_samples) == (10, 1)


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("vi.methods", ("qng", "bbvi_ns"), r"config\.vi\.methods holds 'bbvi_ns'"),
    ("mle.methods", ("ecme", "newton"), r"config\.mle\.methods holds 'newton'"),
    ("vi.bbvi_lrs", (0.01, -0.1), r"config\.vi\.bbvi_lrs holds -0\.1"),
    ("vi.blr_rhos", (0.5, 2.0), r"config\.vi\.blr_rhos holds 2\.0"),
    ("mle.qng_betas", (), r"config\.mle\.qng_betas is empty"),
    ("vi.test_fraction", 1.5, r"config\.vi\.test_fraction"),
    ("vi.bbvi_num_samples", 0, r"config\.vi\.bbvi_num_samples"),
    # NaN data: "the reference MLE did not converge (max |grad| nan): raise
    # config.mle.reference_em_steps", after config.json.
    ("mle.true_mu", float("nan"), r"config\.mle\.true_mu=nan"),
    ("mle.xi0", (float("nan"), 1.0, 10.0), r"config\.mle\.xi0=.* finite"),
  ],
)
def test_bad_options_fail_in_one_line_before_any_work(
  tmp_path, key, value, match
):
  config = config_lib.get_config("quick,smoke")
  section, name = key.split(".")
  config[section][name] = value
  with pytest.raises(ConfigError, match=match) as info:
    qblr.run(config, str(tmp_path))
  assert "\n" not in str(info.value)
  # Nothing was written: no config.json (a corrected rerun is not refused as
  # a config change) and no sub-workdir.
  assert sorted(os.listdir(tmp_path)) == []


def test_smoke_run(tmp_path):
  workdir = str(tmp_path)
  config = config_lib.get_config("quick,smoke")
  # Every MLE iterate logged: the on-device iteration counts are checked
  # against a host recount from the rows.
  config.mle.train.update(log_every=1, checkpoint_every=30)
  r = qblr.run(config, workdir)
  mle = r["mle"]
  # ECME converges fast even on the smoke data; l* is a stationary point.
  assert 0 < mle["iterations"]["ecme"] <= 60
  assert mle["final_gap"]["ecme"] < 1e-8
  assert mle["reference_grad_max"] < 1e-9
  assert mle["qng_rejected_steps"] == 0
  assert not any(mle["diverged"].values())
  # beta = 1 leaves the domain at step 1: it runs only thanks to the guard,
  # and it is the fastest QNG run.
  assert mle["final_gap"]["qng_beta1"] < mle["final_gap"]["qng_beta0.3"]
  assert mle["best_qng"]["name"] == "qng_beta1"
  rows = train_lib.read_jsonl(os.path.join(workdir, "mle"))
  for name, iters in mle["iterations"].items():
    method, _, setting = name.partition("_")
    run = f"mle/{method}/{setting}" if setting else f"mle/{method}"
    gaps = [row["gap"] for row in rows if row["run"] == run]
    assert [row["step"] for row in rows if row["run"] == run] == list(
      range(1, 61)
    )
    bad = np.flatnonzero(~(np.asarray([np.inf] + gaps) < 1e-8))  # t=0: xi0
    expected = -1 if bad[-1] == 60 else int(bad[-1] + 1)
    assert iters == expected, name
  vi = r["vi"]
  for name in ("qng_nw", "qng", "blr_gauss"):
    assert 0.85 <= vi[name]["acc_mean"] <= 1.0, name
    assert vi[name]["selected"] in vi[name]["grid"]
    elbos = {k: v["elbo"] for k, v in vi[name]["grid"].items()}
    assert vi[name]["elbo"] == max(elbos.values())  # chosen on training ELBO
    assert vi[name]["acc_mean_lo"] <= vi[name]["acc_mean"]
    assert vi[name]["acc_mean"] <= vi[name]["acc_mean_hi"]
  paired = vi["paired"]["blr_gauss"]
  diff = np.subtract(
    vi["qng"]["acc_mean_per_split"], vi["blr_gauss"]["acc_mean_per_split"]
  )
  assert paired["mean"] == pytest.approx(diff.mean())
  assert vi["best_baseline"] == "blr_gauss"
  assert vi["qng_minus_best_baseline_lo"] == paired["lo"]
  assert 0.85 <= vi["map"]["acc_mean"] <= 1.0
  assert len(vi["map"]["acc_mean_per_split"]) == len(
    vi["qng"]["acc_mean_per_split"]
  )
  # The Normal-Wishart QBLR against the same baseline, in accuracy and in
  # the training ELBO, each paired per split.
  for metric, stem in (("acc_mean", ""), ("elbo", "_elbo")):
    diff = np.subtract(
      vi["qng_nw"][f"{metric}_per_split"],
      vi["blr_gauss"][f"{metric}_per_split"],
    )
    nw_paired = vi[f"qng_nw{stem}_paired"]["blr_gauss"]
    assert nw_paired["mean"] == pytest.approx(diff.mean())
    assert vi[f"qng_nw{stem}_minus_best_baseline"] == nw_paired["mean"]
  assert vi["qng_nw"]["rejected"] == 0
  # The predictive entropy (nats) of each method, and QBLR's paired against
  # each baseline.
  for name in ("qng_nw", "qng", "blr_gauss"):
    v = vi[name]
    assert 0 < v["entropy"] <= np.log(2)
    assert v["entropy_lo"] <= v["entropy"] <= v["entropy_hi"]
    assert v["entropy"] == pytest.approx(np.mean(v["entropy_per_split"]))
  diff = np.subtract(
    vi["qng_nw"]["entropy_per_split"], vi["blr_gauss"]["entropy_per_split"]
  )
  paired = vi["qng_nw_entropy_paired"]["blr_gauss"]
  assert paired["mean"] == pytest.approx(diff.mean())
  # Iterations to each baseline's final ELBO: the worst ratio per split is
  # the larger of the baselines' (one here), its geometric mean the metric.
  it = vi["qng_nw_iterations"]
  ratios = it["by_baseline"]["blr_gauss"]["ratio_per_split"]
  assert it["worst_ratio_per_split"] == ratios
  if np.all(np.isfinite(ratios)):
    assert it["ratio"] == pytest.approx(np.exp(np.mean(np.log(ratios))))
    assert it["ratio_lo"] <= it["ratio"] <= it["ratio_hi"]
  vi_rows = train_lib.read_jsonl(os.path.join(workdir, "vi", "qng"))
  runs = {row["run"] for row in vi_rows}
  assert len(runs) == 3 * 2 and "vi/qng/lr0.01/split1" in runs
  with open(os.path.join(workdir, "results.json")) as f:
    assert json.load(f)["mle"]["l_star"] == pytest.approx(mle["l_star"])
  for fig in r["figures"]:
    assert os.path.getsize(os.path.join(workdir, fig)) > 1000
  helpers.check_claim_keys(
    "qblr",
    workdir,
    absent={"qblr_vi_bbvi_collapses": "the smoke run leaves BBVI out"},
  )


def test_steps_to_reach_is_the_first_logged_step_at_or_above_the_target():
  steps = [50, 100, 150, 200]
  curves = np.array([[1.0, 5.0], [3.0, 4.0], [2.0, 6.0], [4.0, 7.0]])
  got = qblr.steps_to_reach(steps, curves, np.array([3.0, 8.0]))
  np.testing.assert_array_equal(got, [100.0, np.inf])
  got = qblr.steps_to_reach(steps, curves, np.array([0.0, 6.0]))
  np.testing.assert_array_equal(got, [50.0, 150.0])


def test_iterations_ratio_against_the_slowest_baseline():
  """Hand-made ELBO curves: ours reaches a's end (less 1 nat) at step 2 and
  b's at step 3; a needs 4 steps to get there, b 3."""
  steps = np.array([1, 2, 3, 4])
  col = lambda *v: np.array(v, float)[:, None]
  curves = {
    "qng_nw": (steps, col(0.0, 9.0, 10.0, 10.0)),
    "bbvi": (steps, col(0.0, 1.0, 2.0, 10.0)),
    "blr_gauss": (steps, col(0.0, 1.0, 10.0, 10.5)),
  }
  config = config_lib.get_config("quick,smoke")
  out = qblr._iterations(curves, config.vi)["qng_nw_iterations"]
  by = out["by_baseline"]
  assert by["bbvi"]["steps"] == [2.0] and by["bbvi"]["baseline_steps"] == [4.0]
  assert by["blr_gauss"]["steps"] == [3.0]
  assert by["blr_gauss"]["baseline_steps"] == [3.0]
  assert out["worst_ratio_per_split"] == [1.0]
  # Never reaching a baseline's ELBO is an infinite ratio, not a skipped one.
  curves["qng_nw"] = (steps, col(0.0, 1.0, 1.0, 1.0))
  out = qblr._iterations(curves, config.vi)["qng_nw_iterations"]
  assert out["ratio"] == np.inf and out["worst_ratio_per_split"] == [np.inf]


def test_rdog_runs_the_normal_wishart_qblr_without_a_grid(tmp_path):
  """config.vi.qng_nw_rdog: the paper's RDoG step sizes, one run per split."""
  config = config_lib.get_config("quick,smoke")
  config.mle.methods = ()
  config.vi.methods = ("qng_nw",)
  config.vi.qng_nw_rdog = True
  r = qblr.run(config, str(tmp_path))
  vi = r["vi"]["qng_nw"]
  # No MLE method ran: no MLE figure is drawn or listed.
  assert r["figures"] == ["vi_elbo.png"]
  assert not os.path.exists(os.path.join(str(tmp_path), "mle_convergence.png"))
  assert list(vi["grid"]) == ["rdog"] and vi["selected"] == "rdog"
  assert vi["rejected"] == 0 and vi["finite_fraction"] == 1.0
  assert 0.85 <= vi["acc_mean"] <= 1.0
  rows = train_lib.read_jsonl(os.path.join(str(tmp_path), "vi", "qng_nw"))
  assert {row["run"] for row in rows} == {
    f"vi/qng_nw/rdog/split{s}" for s in range(config.vi.num_splits)
  }
