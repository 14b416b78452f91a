"""Claim checks and the report table."""

import pytest

from lib.train import report


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


def test_evaluate_and_render():
  ok = report.evaluate(_claim(), {"a": {"b": 0.7}})
  missing = report.evaluate(_claim(name="d"), {"a": {}})
  nan = report.evaluate(_claim(name="e"), {"a": {"b": float("nan")}})
  assert ok["holds"] and not missing["holds"] and not nan["holds"]
  text = report.render_markdown(
    [ok, missing], environment="env", failures={"e": "exit 1"}
  )
  assert "| yes |" in text and "| **no** |" in text and "missing" in text
  assert "1/2 claims hold" in text and "`e`: exit 1" in text


def test_interval_is_shown_next_to_ours():
  claim = _claim(fmt="{:.2f}", interval=("a.lo", "a.hi"))
  row = report.evaluate(claim, {"a": {"b": 0.7, "lo": 0.61, "hi": 0.93}})
  assert row["holds"] and row["ours"] == "0.70 [0.61, 0.93]"
  # A missing band leaves the number alone.
  assert report.evaluate(claim, {"a": {"b": 0.7}})["ours"] == "0.70"


def test_lookup_reads_keys_with_dots():
  results = {"mle": {"iterations": {"qng_beta0.3": 193, "qng_beta1": 57}}}
  assert report.lookup(results, "mle.iterations.qng_beta0.3") == 193
  assert report.lookup(results, "mle.iterations.qng_beta1") == 57
  assert report.lookup(results, "mle.iterations.qng_beta0.1") is None
  assert report.lookup({"a": {"b": 1}}, "a.b") == 1
