"""Claim checks, verdicts and the report tables (experiments/claims/report.py)."""

import ast
import functools
import glob
import math
import os

import numpy as np
import pytest
from scipy import stats

from experiments.claims import all_claims
from experiments.claims import report


def _claim(**kw):
  base = dict(
    name="c",
    paper="p",
    experiment="e",
    config="quick",
    claim="x",
    paper_value="1",
    metric="a.b",
    check=">= 0.5",
    comparator="baseline B",
  )
  base.update(kw)
  return report.Claim(**base)


@pytest.mark.parametrize(
  "check,value,expected",
  [
    (">= 0.5", 0.5, True),
    ("> 0.5", 0.5, False),
    ("<= -1", -2, True),
    ("< 0", 0.0, False),
    ("in [-0.14, -0.06]", -0.1, True),
    ("in [-0.14, -0.06]", -0.05, False),
  ],
)
def test_parse_check(check, value, expected):
  assert report.parse_check(check)(value) is expected


def test_bad_check_is_rejected():
  with pytest.raises(ValueError, match="bad claim check"):
    report.parse_check("about 3")
  with pytest.raises(ValueError, match="bad claim check"):
    _claim(check="about 3")


def test_a_claim_must_name_its_comparator():
  with pytest.raises(ValueError, match="names no comparator"):
    _claim(comparator="")
  _claim(comparator="", sanity=True)  # bookkeeping needs none


def test_point_verdicts():
  ok = report.evaluate(_claim(), {"a": {"b": 0.7}})
  fails = report.evaluate(_claim(), {"a": {"b": 0.3}})
  missing = report.evaluate(_claim(), {"a": {}})
  no_run = report.evaluate(_claim(), None)
  nan = report.evaluate(_claim(), {"a": {"b": float("nan")}})
  assert [r["verdict"] for r in (ok, fails, missing, no_run, nan)] == [
    "yes",
    "no",
    "missing",
    "missing",
    "no",
  ]
  assert (
    ok["holds"]
    and not nan["holds"]
    and nan["reasons"] == ["not a finite number"]
  )


@pytest.mark.parametrize(
  "check,point,lo,hi,verdict,reason",
  [
    # The whole band passes.
    ("< 1", 0.6, 0.4, 0.9, "yes", None),
    # The point passes, the band straddles the check.
    ("< 1", 0.6, 0.2, 1.8, "unresolved", "band straddles the check"),
    ("in [0, 1]", 0.5, -0.1, 0.9, "unresolved", "band straddles the check"),
    # The point fails and so does the whole band: "no".
    ("< 1", 1.2, 1.05, 1.5, "no", None),
    ("in [0, 1]", 1.5, 1.2, 2.0, "no", None),
    # The point fails but the band reaches passing values: inside the noise.
    ("< 1", 1.2, 0.5, 1.5, "unresolved", "band reaches the check"),
    (">= 1.0", 0.98, 0.94, 1.02, "unresolved", "band reaches the check"),
    # ... including a band that covers a whole 'in [a, b]' from outside.
    ("in [0, 1]", 1.5, -0.5, 2.0, "unresolved", "band reaches the check"),
    # quartet_eff_n at quick scale: 0.080 outside its own [0.184, 1.857].
    ("< 1", 0.080, 0.184, 1.857, "unresolved", "point outside band"),
    # Even a band that passes entirely cannot rescue a point outside it.
    ("< 1", 0.080, 0.184, 0.5, "unresolved", "point outside band"),
    ("< 1", 0.5, 0.9, 0.1, "unresolved", "band low > high"),
    # A failing point with a malformed band is no "no" either (before, these
    # read "no": the band's checks ran for a passing point alone).
    ("< 1", 1.2, 1.5, 1.3, "unresolved", "band low > high"),
    ("< 1", 1.2, 1.3, 1.5, "unresolved", "point outside band"),
    # One seed: a t band of +-inf, or NaN, settles neither side.
    ("> 0", -0.01, -math.inf, math.inf, "unresolved", "band missing"),
    ("> 0", -0.01, math.nan, math.nan, "unresolved", "band missing"),
    ("> 0", 0.01, -math.inf, math.inf, "unresolved", "band missing"),
  ],
)
def test_interval_verdicts(check, point, lo, hi, verdict, reason):
  claim = _claim(check=check, interval=("a.lo", "a.hi"))
  row = report.evaluate(claim, {"a": {"b": point, "lo": lo, "hi": hi}})
  assert row["verdict"] == verdict, row
  assert (reason in row["reasons"]) if reason else not row["reasons"]


@pytest.mark.parametrize("point", [0.7, 0.3])
def test_one_run_against_another_settles_nothing(point):
  # A difference of two single runs (one seed each) may be seed noise, on
  # either side of the check: before, it read "yes" (or "no") on its point.
  claim = _claim(needs_band=True)
  row = report.evaluate(claim, {"a": {"b": point}})
  assert row["verdict"] == "unresolved"
  assert row["reasons"] == ["one run against another, no band"]
  # A threshold against a fixed number keeps its plain verdict.
  assert report.evaluate(_claim(), {"a": {"b": point}})["verdict"] == (
    "yes" if point >= 0.5 else "no"
  )
  with pytest.raises(ValueError, match="needs_band is for a claim without"):
    _claim(needs_band=True, interval=("a.lo", "a.hi"))


def test_interval_is_shown_next_to_ours_and_required_for_yes():
  claim = _claim(fmt="{:.2f}", interval=("a.lo", "a.hi"))
  row = report.evaluate(claim, {"a": {"b": 0.7, "lo": 0.61, "hi": 0.93}})
  assert row["verdict"] == "yes" and row["ours"] == "0.70 [0.61, 0.93]"
  # Without its band a claim that needs one is not established.
  row = report.evaluate(claim, {"a": {"b": 0.7}})
  assert row["ours"] == "0.70" and row["verdict"] == "unresolved"
  assert row["reasons"] == ["band missing"]


@pytest.mark.parametrize(
  "flag,verdict",
  [
    (True, "no"),
    (False, "yes"),
    (0.0, "no"),  # hns_kdv's du/dt CNN: no finite trajectory
    (0.75, "no"),  # a quarter of the trajectories blew up
    (1.0, "yes"),
    (math.nan, "no"),
    (None, "missing"),  # the key the verdict needs is absent
  ],
)
def test_diverged_comparator(flag, verdict):
  claim = _claim(comparator_diverged="base.finite_fraction")
  results = {"a": {"b": 0.7}, "base": {}}
  if flag is not None:
    results["base"]["finite_fraction"] = flag
  row = report.evaluate(claim, results)
  assert row["verdict"] == verdict
  if verdict == "no":
    assert "baseline diverged" in row["reasons"][0]


@pytest.mark.parametrize(
  "flag,verdict",
  [
    (1.0, "yes"),
    (0.0, "no"),  # hns_kdv at n_x 256: every trajectory went NaN by step ~13
    (0.99, "no"),
    (True, "no"),
    (None, "missing"),
  ],
)
def test_diverged_ours(flag, verdict):
  """A metric that reads well although ours diverged (the official HNS
  correlation time scores a batch that went NaN before its mean fell below
  0.8 as correlated to the end) cannot carry a "yes"."""
  claim = _claim(
    ours_diverged="hns.finite_fraction",
    comparator_diverged="base.finite_fraction",
  )
  results = {"a": {"b": 0.7}, "base": {"finite_fraction": 1.0}, "hns": {}}
  if flag is not None:
    results["hns"]["finite_fraction"] = flag
  row = report.evaluate(claim, results)
  assert row["verdict"] == verdict
  if verdict == "no":
    assert row["reasons"] == [f"ours diverged (`hns.finite_fraction` = {flag})"]
  if verdict == "missing":
    assert row["reasons"] == ["no `hns.finite_fraction` (ours divergence)"]
  assert report.claim_keys(claim)["ours_diverged"] == "hns.finite_fraction"
  absent = report.absent_keys(claim, results)
  assert ("ours_diverged" in absent) == (flag is None)


def test_report_with_diverged_baseline_and_straddling_interval():
  """The acceptance test of issues 12 and 14: the report cannot flatter."""
  results = {
    "corr_time_gap": 74.0,  # passes "> 0" on its own ...
    "derivative_cnn": {"finite_fraction": 0.0},  # ... against a dead baseline
    "eff": {"eff_n": 0.6, "eff_n_p16": 0.3, "eff_n_p84": 1.4},
    "eff_d": {"v": 0.08, "p16": 0.18, "p84": 1.86},
    "uniform_bpd": 4.0875,
    "good": 2.0,
  }
  claims = [
    _claim(
      name="kdv",
      paper="hns",
      metric="corr_time_gap",
      check="> 0",
      comparator="du/dt CNN",
      comparator_diverged="derivative_cnn.finite_fraction",
    ),
    _claim(
      name="eff_n",
      paper="quartet",
      metric="eff.eff_n",
      check="< 1",
      comparator="bf16 (effN = 1)",
      interval=("eff.eff_n_p16", "eff.eff_n_p84"),
    ),
    _claim(
      name="eff_d",
      paper="quartet",
      metric="eff_d.v",
      check="< 1",
      comparator="bf16 (effD = 1)",
      interval=("eff_d.p16", "eff_d.p84"),
    ),
    _claim(name="good", metric="good", check=">= 1", figures=("f.png",)),
    _claim(name="gone", metric="gone", check=">= 1", note="a note"),
    _claim(
      name="anchor",
      metric="uniform_bpd",
      check="in [4.08, 4.09]",
      comparator="",
      paper_value="4.0875 (analytic)",
      sanity=True,
    ),
  ]
  rows = [report.evaluate(c, results) for c in claims]
  verdicts = {r["claim"].name: r["verdict"] for r in rows}
  assert verdicts == {
    "kdv": "no",
    "eff_n": "unresolved",
    "eff_d": "unresolved",
    "good": "yes",
    "gone": "missing",
    "anchor": "yes",
  }
  text = report.render_markdown(
    rows, environment="env", failures={"e": "exit 1"}
  )
  claims_part, sanity_part = text.split("## Sanity checks")
  assert (
    "| paper | claim | paper value | ours | comparator | check | verdict "
    "| seeds to settle | figures |" in claims_part
  )
  kdv_line = next(ln for ln in claims_part.splitlines() if "corr_time" in ln)
  assert "| du/dt CNN |" in kdv_line and "**no** (baseline diverged" in kdv_line
  assert "**unresolved** (band straddles the check)" in claims_part
  assert "**unresolved** (point outside band)" in claims_part
  assert "0.08 [0.18, 1.86]" in claims_part
  assert "[f.png](e/f.png)" in claims_part
  assert "uniform_bpd" not in claims_part and "uniform_bpd" in sanity_part
  assert "- `gone`: a note" in sanity_part and "`e`: exit 1" in sanity_part
  assert (
    "5 claims at the quick scale: 1 yes, 1 no, 2 unresolved, 1 missing. "
    "Sanity checks: 1/1 pass (not counted as claims)." in text
  )


def test_lookup_reads_keys_with_dots():
  results = {"mle": {"iterations": {"qng_beta0.3": 193, "qng_beta1": 57}}}
  assert report.lookup(results, "mle.iterations.qng_beta0.3") == 193
  assert report.lookup(results, "mle.iterations.qng_beta1") == 57
  assert report.lookup(results, "mle.iterations.qng_beta0.1") is None
  assert report.lookup({"a": {"b": 1}}, "a.b") == 1


def test_changed_verdicts_are_listed_with_their_reasons():
  row = report.evaluate(
    _claim(name="kdv", comparator_diverged="f"), {"a": {"b": 0.7}, "f": 0.0}
  )
  text = report.render_markdown(
    [row], environment="env", failures={}, changes={"kdv": ("yes", "no")}
  )
  assert "## Verdicts changed since the last report" in text
  assert "- `kdv`: yes -> no (baseline diverged (`f` = 0.0))" in text
  assert "1 claim at the quick scale: 0 yes, 1 no" in text
  assert "## Sanity checks" not in text


_WHERE = dict(paper="p", experiment="e", config="quick")


def _expected_seeds(m, s, c):
  """The oracle, from scipy's t quantile: smallest n with
  t_{0.975, n-1} s / sqrt(n) < |m - c| (None past 1000)."""
  for n in range(2, 1001):
    if stats.t.ppf(0.975, n - 1) * s / math.sqrt(n) < abs(m - c):
      return n
  return None


def _samples(m, s, n):
  """n numbers whose mean is m and standard deviation (ddof 1) is s."""
  z = np.sin(np.arange(1.0, n + 1))  # any spread-out numbers
  z = (z - z.mean()) / z.std(ddof=1)
  return (m + s * z).tolist()


def _banded_results(m, s, n):
  """results.json of a seed-banded metric: mean, t interval, per-seed list."""
  half = stats.t.ppf(0.975, n - 1) * s / math.sqrt(n)
  return {
    "d": {"mean": m, "lo": m - half, "hi": m + half, "seeds": _samples(m, s, n)}
  }


@pytest.mark.parametrize(
  "m,s,n,check,c",
  [
    (0.1, 0.2, 3, "> 0", 0.0),  # needs ~ (1.96 * 2)^2 = 16 seeds and then some
    (-0.004, 0.03, 3, ">= 0", 0.0),  # fails inside the noise
    (0.12, 0.05, 4, "in [0.0, 0.15]", 0.15),  # nearer the upper end
    (0.5, 1e-3, 2, "> 0.4999", 0.4999),  # tiny spread: yet 2 seeds may not do
  ],
)
def test_seeds_needed_from_known_mean_and_spread(m, s, n, check, c):
  claim = report.banded(
    name="x",
    metric="d",
    claim="claim",
    paper_value="1",
    comparator="B",
    check=check,
    **_WHERE,
  )
  row = report.evaluate(claim, _banded_results(m, s, n))
  assert row["verdict"] == "unresolved", row
  expected = _expected_seeds(m, s, c)
  assert expected is not None and expected > n
  assert row["seeds_needed"] == expected
  assert row["seeds_ran"] == n
  # The number is where the interval first clears c, and not one seed earlier.
  assert stats.t.ppf(0.975, expected - 1) * s / math.sqrt(expected) < abs(m - c)
  assert stats.t.ppf(0.975, expected - 2) * s / math.sqrt(expected - 1) >= abs(
    m - c
  )
  text = report.render_markdown([row], environment="env", failures={})
  assert f"| {expected} seeds (ran {n}) |" in text


def test_seeds_needed_when_the_mean_sits_on_the_check_or_is_settled():
  claim = report.banded(
    name="x",
    metric="d",
    claim="claim",
    paper_value="1",
    comparator="B",
    check=">= 0",
    **_WHERE,
  )
  row = report.evaluate(claim, _banded_results(0.0, 0.1, 3))
  assert row["verdict"] == "unresolved"
  assert row["seeds_needed"] == "not within 1000 seeds"
  settled = report.evaluate(claim, _banded_results(1.0, 0.1, 3))
  assert settled["verdict"] == "yes" and settled["seeds_needed"] is None
  text = report.render_markdown([settled], environment="env", failures={})
  assert "| yes | - |" in text


def test_seeds_needed_of_log_ratios_every_baseline_and_no_samples():
  # A geometric-mean ratio: t interval of the logs against log(threshold).
  ratios = np.exp(_samples(math.log(12.0), 0.5, 3)).tolist()
  claim = _claim(
    check=">= 10",
    interval=("a.lo", "a.hi"),
    samples="a.per_unit",
    samples_log=True,
  )
  results = {"a": {"b": 12.0, "lo": 5.0, "hi": 30.0, "per_unit": ratios}}
  row = report.evaluate(claim, results)
  assert row["verdict"] == "unresolved"
  assert row["seeds_needed"] == _expected_seeds(
    math.log(12.0), 0.5, math.log(10.0)
  )
  # One paired list per baseline: the claim needs the largest n of them.
  claim = _claim(
    check="> 0", interval=("a.lo", "a.hi"), samples="a.baselines.*.by_seed"
  )
  per = {
    "adam": {"by_seed": _samples(0.2, 0.1, 3)},
    "mask": {"by_seed": _samples(0.05, 0.1, 3)},
    "dead": {"diverged": True},
  }
  results = {"a": {"b": 0.05, "lo": -0.2, "hi": 0.3, "baselines": per}}
  row = report.evaluate(claim, results)
  assert row["seeds_needed"] == max(
    _expected_seeds(0.2, 0.1, 0.0), _expected_seeds(0.05, 0.1, 0.0)
  )
  # A trailing '*': every list one level down (one per compared pair).
  claim = _claim(check="> 0", interval=("a.lo", "a.hi"), samples="a.by_pair.*")
  pairs = {"d64/x": _samples(0.2, 0.1, 3), "d256/x": _samples(0.05, 0.1, 3)}
  results = {"a": {"b": 0.05, "lo": -0.2, "hi": 0.3, "by_pair": pairs}}
  assert report.sample_lists(results, "a.by_pair.*") == list(pairs.values())
  assert report.evaluate(claim, results)["seeds_needed"] == max(
    _expected_seeds(0.2, 0.1, 0.0), _expected_seeds(0.05, 0.1, 0.0)
  )
  # A band that is not a t interval over samples says why; absent samples too.
  claim = _claim(interval=("a.lo", "a.hi"), no_samples="bootstrap over rows")
  results = {"a": {"b": 0.6, "lo": 0.4, "hi": 0.9}}
  row = report.evaluate(claim, results)
  assert row["seeds_needed"] == "n/a: bootstrap over rows"
  claim = _claim(interval=("a.lo", "a.hi"), samples="a.seeds")
  row = report.evaluate(claim, results)
  assert row["seeds_needed"] == "n/a: no `a.seeds` in results"


def test_summary_table_counts_each_paper_and_its_run_time():
  def row(name, paper, verdict, experiment="e", sanity=False):
    claim = _claim(name=name, paper=paper, experiment=experiment, sanity=sanity)
    return {"claim": claim, "verdict": verdict, "reasons": [], "ours": "1"}

  rows = [
    row("a", "p", "yes", "e1"),
    row("b", "p", "unresolved", "e2"),
    row("c", "q", "no", "e3"),
    row("d", "q", "missing", "e3"),
    row("s", "q", "yes", "e3", sanity=True),  # not counted as a claim
  ]
  text = report.render_markdown(
    rows,
    environment="env",
    failures={},
    wall_seconds=125.0,
    run_seconds={"e1": 40.0, "e2": 25.4, "e3": 61.0},
  )
  head = text.split("## Claims")[0]
  assert "Wall time: 2:05 (m:ss) for the job." in head
  assert "| p | 2 | 1 | 0 | 1 | 0 | 1:05 |" in head
  assert "| q | 2 | 0 | 1 | 0 | 1 | 1:01 |" in head
  assert "| **all** | 4 | 1 | 1 | 1 | 1 | 2:06 |" in head


def test_absent_keys_reads_as_evaluate_does():
  claim = _claim(
    metric="m.mean",
    interval=("m.lo", "m.hi"),
    comparator_diverged="m.finite",
    samples="m.runs.*.seeds",
  )
  full = {
    "m": {
      "mean": "NaN",  # present, not finite: "no", not "missing"
      "lo": 0.0,
      "hi": 1.0,
      "finite": 1.0,
      "runs": {"a": {"seeds": [1.0, 2.0]}},
    }
  }
  assert report.absent_keys(claim, full) == {}
  assert report.claim_keys(claim) == {
    "metric": "m.mean",
    "interval.lo": "m.lo",
    "interval.hi": "m.hi",
    "comparator_diverged": "m.finite",
    "samples": "m.runs.*.seeds",
  }
  bad = {"m": {"mean": {"x": 1}, "lo": 0.0, "finite": "yes", "runs": {}}}
  assert report.absent_keys(claim, bad) == {
    "metric": "m.mean",
    "interval.hi": "m.hi",
    "comparator_diverged": "m.finite",
    "samples": "m.runs.*.seeds",
  }
  # Every absent metric or flag is what evaluate calls "missing".
  assert report.evaluate(claim, {"m": {"lo": 0, "hi": 1}})["verdict"] == (
    "missing"
  )


@functools.cache
def _claim_key_checks() -> frozenset:
  """Experiments whose tests call helpers.check_claim_keys("<name>", ...)."""
  here = os.path.dirname(os.path.abspath(__file__))
  found = set()
  for path in glob.glob(os.path.join(here, "*_test.py")):
    with open(path) as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      if not isinstance(node, ast.Call) or not node.args:
        continue
      name = getattr(node.func, "attr", getattr(node.func, "id", None))
      first = node.args[0]
      if name == "check_claim_keys" and isinstance(first, ast.Constant):
        found.add(first.value)
  return frozenset(found)


@pytest.mark.parametrize(
  "experiment", sorted({c.experiment for c in all_claims()})
)
def test_every_experiment_with_claims_checks_its_keys_in_smoke(experiment):
  """A claim whose key was renamed would read "missing" in REPORT.md; the
  smoke test of its experiment must resolve every claim key (helpers)."""
  assert experiment in _claim_key_checks(), (
    f"no test in tests/experiments calls helpers.check_claim_keys("
    f"{experiment!r}, workdir) on its smoke results"
  )


def test_settle_commands_rerun_each_run_with_the_samples_its_claims_need():
  def row(name, run, m, s, n, **kw):
    claim = report.banded(
      name=name,
      metric="d",
      claim="claim",
      paper_value="1",
      comparator="B",
      check="> 0",
      paper="p",
      experiment=run,
      config="quick",
      **kw,
    )
    return report.evaluate(claim, _banded_results(m, s, n))

  rows = [
    row("a", "e", 0.1, 0.2, 3, count_key="train.seeds"),
    row("b", "e", 0.3, 0.4, 3, count_key="train.seeds"),
    row("c", "f", 0.1, 0.3, 4, count_key="num_explain", count_scale=2),
    row("d", "g", 0.1, 0.2, 3, count_key="seeds"),  # config disagrees
    row("settled", "e", 1.0, 0.1, 3, count_key="train.seeds"),
    row("no_key", "h", 0.1, 0.2, 3),
    # Needs more than 20 x the 3 seeds it ran: no rerun for it.
    row("far", "e", 0.1, 0.8, 3, count_key="train.seeds"),
    row("far_only", "k", 0.1, 0.8, 3, count_key="seeds"),
  ]
  assert [r["verdict"] for r in rows] == ["unresolved"] * 4 + [
    "yes",
    "unresolved",
    "unresolved",
    "unresolved",
  ]
  need_far = _expected_seeds(0.1, 0.8, 0.0)
  assert 20 * 3 < need_far <= 1000
  assert rows[-1]["seeds_needed"] == need_far
  need_a = _expected_seeds(0.1, 0.2, 0.0)
  need_b = _expected_seeds(0.3, 0.4, 0.0)
  need_c = _expected_seeds(0.1, 0.3, 0.0)
  configs = {
    "e": {"train": {"seeds": 3}},
    "f": {"num_explain": 8},
    "g": {"seeds": 5},
    "k": {"seeds": 3},
  }
  settle = report.settle_commands(rows, configs, {"e": 60.0, "f": 40.0})
  by_run = {s["run"]: s for s in settle}
  assert sorted(by_run) == ["e", "f", "g", "k"]  # h names no count key
  e = by_run["e"]
  assert e["claims"] == ["a", "b"] and e["ran"] == 3
  assert e["beyond"] == [("far", need_far)]
  assert by_run["k"]["beyond"] == [("far_only", need_far)]
  assert "more than 20 x the 3" in by_run["k"]["skipped"]
  assert e["needed"] == e["value"] == max(need_a, need_b)
  assert e["seconds"] == round(60.0 * e["needed"] / 3)
  assert e["command"] == (
    "python -m experiments.e --config configs/e.py:quick "
    f"--config.train.seeds={e['needed']} --workdir runs/settle/e"
  )
  f = by_run["f"]
  assert f["needed"] == need_c and f["value"] == 2 * need_c
  assert f"--config.num_explain={2 * need_c} " in f["command"]
  assert "is 5, not 1 x the 3 samples" in by_run["g"]["skipped"]
  assert "command" not in by_run["g"]

  smoke = report.settle_commands(rows, configs, config_suffix=",smoke")
  assert "configs/e.py:quick,smoke --config" in smoke[0]["command"]
  assert smoke[0]["seconds"] is None

  text = report.render_markdown(
    rows, environment="env", failures={}, settle=settle
  )
  part = text.split("## Settling the unresolved claims")[1]
  assert f"| e | `a`, `b` | {e['needed']} seeds (ran 3) |" in part
  assert f"`{e['command']}`" in part and f"`{f['command']}`" in part
  total = e["seconds"] + f["seconds"]
  assert f"one after the other: about {total // 60}:{total % 60:02d}." in part
  assert "- `g` (`d`): no command, config.seeds is 5" in part
  assert f"- `e` (`far`): needs {need_far} (more than 20 x" in part
  assert f"- `k` (`far_only`): needs {need_far} (more than 20 x" in part
  assert "| k |" not in part
  assert "## Settling" not in report.render_markdown(
    rows, environment="env", failures={}, settle=[]
  )
  # Only runs without a command: their reasons, and no empty table.
  only_g = report.settle_section([by_run["g"]])
  assert not any(line.startswith("| run |") for line in only_g)
  assert only_g[-1].startswith("- `g` (`d`): no command")


def test_a_count_key_needs_samples_and_a_positive_scale():
  with pytest.raises(ValueError, match="count_key='seeds' but no samples"):
    _claim(count_key="seeds")
  with pytest.raises(ValueError, match="count_scale must be >= 1"):
    _claim(samples="a.seeds", count_key="seeds", count_scale=0)


# Claims with per-unit samples whose count no single config key sets.
_NO_COUNT_KEY = {
  # Its units are (seed, validation batch of 32) pairs: seeds x num_val / 32.
  "hns_kdv_corr_time",
  # Its units are the scored half's class-1 series (the burst's class): about
  # num_explain / 4, set by the labels drawn.
  "mix_localises_planted_burst",
  # Their units are the seeds listed in `vector.seeds`, a tuple (a rerun
  # names the seeds, not a count).
  "cdflow_cd_close_to_dense",
  "cdflow_mixing_matters",
}


@pytest.mark.parametrize("tier", ["quick", "gpu"])
def test_every_count_key_is_an_integer_of_its_config(tier):
  import importlib  # pylint: disable=g-import-not-at-top

  from experiments import reproduce  # pylint: disable=g-import-not-at-top

  claims = reproduce.at_tier(all_claims(), tier)
  unnamed = {
    c.name for c in claims if c.samples is not None and c.count_key is None
  }
  assert unnamed == _NO_COUNT_KEY
  for c in claims:
    if c.count_key is None:
      continue
    config = importlib.import_module(f"configs.{c.experiment}").get_config(
      c.config
    )
    value = report.lookup(config.to_dict(), c.count_key)
    assert isinstance(value, int) and not isinstance(value, bool), (
      c.name,
      c.config,
      c.count_key,
      value,
    )
    assert value % c.count_scale == 0, (c.name, value, c.count_scale)
