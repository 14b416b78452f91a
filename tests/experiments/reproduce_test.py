"""The reproduce report runs registered claims and writes REPORT.md."""

import io
import json
import logging
import os
import time

import pytest

from configs import reproduce as config_lib
from experiments import _cli
from experiments import _jobs
from experiments import claims as claims_lib
from experiments import reproduce
from experiments.claims import report
from lib.core import errors


def test_registry_is_well_formed():
  claims = claims_lib.all_claims()
  assert claims
  repo = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  )
  for c in claims:
    report.parse_check(c.check)  # raises on a malformed check
    assert c.sanity or c.comparator.strip(), c.name
    assert os.path.exists(
      os.path.join(repo, "experiments", f"{c.experiment}.py")
    ), c
    assert os.path.exists(
      os.path.join(repo, "configs", f"{c.experiment}.py")
    ), c


def test_unknown_subset_is_a_config_error(tmp_path):
  with pytest.raises(errors.ConfigError, match="nonexistent_paper"):
    reproduce.select(claims_lib.all_claims(), "nonexistent_paper")
  # Refused before the workdir is written, through the CLI's steps and from
  # a notebook's direct call alike.
  config = config_lib.get_config("only=nonexistent_paper,smoke")
  workdir = str(tmp_path / "run")
  with pytest.raises(errors.ConfigError, match="nonexistent_paper"):
    _cli.execute(reproduce.run, config, workdir, reproduce.check_config)
  with pytest.raises(errors.ConfigError, match="nonexistent_paper"):
    reproduce.run(config, workdir)
  assert not os.path.exists(os.path.join(workdir, "config.json"))


def test_smoke_report_for_one_paper(tmp_path, caplog, monkeypatch):
  config = config_lib.get_config("only=simplicity_bias,smoke")
  with caplog.at_level(logging.INFO):
    results = reproduce.run(config, str(tmp_path))
  # The child's progress came through live, prefixed, and is saved too.
  assert any(
    r.getMessage().startswith("[simplicity_bias] ") for r in caplog.records
  )
  assert (tmp_path / "simplicity_bias" / "log.txt").stat().st_size > 0
  text = (tmp_path / "REPORT.md").read_text()
  assert results["failures"] == {}
  claims_part = text.split("## Claims")[1]
  assert results["num_claims"] == claims_part.count("| simplicity_bias |") > 0
  # The summary table: the paper's counts and its run's time.
  n = results["papers"]["simplicity_bias"]
  assert (
    f"| simplicity_bias | {results['num_claims']} | {n['yes']} | {n['no']} | "
    f"{n['unresolved']} | {n['missing']} | " in text.split("## Claims")[0]
  )
  assert results["num_claims"] == sum(
    results[f"num_{v}"] for v in report.VERDICTS
  )
  assert "Environment: jax" in text
  assert f"{results['num_claims']} claims at the smoke scale" in text
  assert (tmp_path / "simplicity_bias" / "boundaries.png").exists()

  # Cached: a rerun with the same command and code version runs nothing.
  stamp = json.loads((tmp_path / "simplicity_bias" / "stamp.json").read_text())
  assert stamp["status"] == "done"
  assert stamp["code_version"] == _jobs.code_version()
  calls = []

  def fake_run(experiment, config_arg, workdir, timeout, name, cache_dir=None):
    calls.append(name)
    return {"stand_in": True}, None

  monkeypatch.setattr(_jobs, "run_experiment", fake_run)
  assert reproduce.run(config, str(tmp_path))["claims"] == results["claims"]
  assert calls == []
  # A changed code version starts the run afresh (the old directory goes).
  monkeypatch.setattr(_jobs, "code_version", lambda root=None: "changed")
  reproduce.run(config, str(tmp_path))
  assert calls == ["simplicity_bias"]
  assert not (tmp_path / "simplicity_bias" / "boundaries.png").exists()
  # So does --config.rerun=True with an unchanged one.
  config_rerun = config_lib.get_config("only=simplicity_bias,smoke,rerun=True")
  reproduce.run(config_rerun, str(tmp_path))
  assert calls == ["simplicity_bias"] * 2


def test_relay_saves_every_line_and_echoes_it_prefixed(caplog):
  child = io.StringIO(
    "I1203 09:19:59.419810 139771284233088 loop.py:88] step 100/400 loss 2.5\n"
    "plain print\n"
    "\n"
    "W1203 09:20:00.000001 139771284233088 x.py:1] careful\n"
  )
  log = io.StringIO()
  with caplog.at_level(logging.INFO):
    _jobs._relay(child, log, "quartet_llm", echo=True)
  assert log.getvalue().startswith("I1203 09:19:59.419810")
  assert log.getvalue().count("\n") == 4  # the saved log is complete
  echoed = [(r.levelno, r.getMessage()) for r in caplog.records]
  assert (logging.INFO, "[quartet_llm] step 100/400 loss 2.5") in echoed
  assert (logging.INFO, "[quartet_llm] plain print") in echoed
  assert (logging.WARNING, "[quartet_llm] careful") in echoed
  assert len(echoed) == 3  # blank lines are not echoed
  caplog.clear()
  _jobs._relay(io.StringIO("x\n"), io.StringIO(), "r", echo=False)
  assert not caplog.records  # processes other than 0 stay quiet


def test_a_run_past_its_timeout_is_stopped(tmp_path):
  start = time.perf_counter()
  results, error = _jobs.run_experiment(
    "simplicity_bias", "quick,smoke", str(tmp_path), timeout=0.5
  )
  assert results is None and error.startswith("timed out after 0.5 s")
  assert time.perf_counter() - start < 30
  assert (tmp_path / "log.txt").exists()


def test_previous_verdicts_read_old_and_new_reports(tmp_path):
  (tmp_path / "results.json").write_text(
    json.dumps(
      {"claims": {"a": {"holds": True}, "b": {"verdict": "unresolved"}}}
    )
  )
  assert reproduce.previous_verdicts(str(tmp_path)) == {
    "a": "yes",
    "b": "unresolved",
  }
  assert reproduce.previous_verdicts(str(tmp_path / "none")) == {}


def test_code_version_follows_the_sources(tmp_path):
  for top in ("lib", "configs"):
    (tmp_path / top).mkdir()
  (tmp_path / "requirements.txt").write_text("jax\n")
  (tmp_path / "lib" / "a.py").write_text("x = 1\n")
  v1 = _jobs.code_version(str(tmp_path))
  (tmp_path / "configs" / "c.py").write_text("y = 2\n")
  v2 = _jobs.code_version(str(tmp_path))
  (tmp_path / "lib" / "a.py").write_text("x = 2\n")
  v3 = _jobs.code_version(str(tmp_path))
  assert len({v1, v2, v3}) == 3
  # The driver's own config (which runs, how many at once, expected seconds)
  # and the claim registry change no run's numbers: no rerun for them.
  (tmp_path / "configs" / "reproduce.py").write_text("jobs = 2\n")
  (tmp_path / "experiments" / "claims").mkdir(parents=True)
  (tmp_path / "experiments" / "claims" / "q.py").write_text("CLAIMS = []\n")
  assert _jobs.code_version(str(tmp_path)) == v3


def test_runs_go_longest_first_and_in_parallel(tmp_path, monkeypatch):
  for name, seconds in (("a", 5.0), ("b", 50.0)):
    (tmp_path / name).mkdir()
    (tmp_path / name / "stamp.json").write_text(
      json.dumps({"seconds": seconds})
    )
  runs = [("x", "quick", "a"), ("x", "quick", "b"), ("x", "quick", "new")]
  order = [r[2] for r in _jobs.schedule(runs, str(tmp_path))]
  assert order == ["new", "b", "a"]  # unknown first, then slowest
  # A fresh run ("new") is placed by the config's table of expected seconds.
  order = _jobs.schedule(runs, str(tmp_path), {"new": 20.0})
  assert [r[2] for r in order] == ["b", "new", "a"]

  # Two at a time: both children are alive together.
  import threading

  both = threading.Barrier(2, timeout=20)

  def fake_run(experiment, config_arg, workdir, timeout, name, cache_dir=None):
    both.wait()  # raises BrokenBarrierError if the runs were sequential
    return {"ok": 1.0}, None

  monkeypatch.setattr(_jobs, "run_experiment", fake_run)
  config = config_lib.get_config("only=simplicity_bias+sadl,smoke,jobs=2")
  results = reproduce.run(config, str(tmp_path / "w"))
  assert results["failures"] == {}
  # Each finished run records its duration for the next job's schedule.
  for name in ("simplicity_bias", "sadl"):
    stamp = json.loads((tmp_path / "w" / name / "stamp.json").read_text())
    assert stamp["status"] == "done" and stamp["seconds"] >= 0


def test_the_gpu_tier_runs_gpu_variants_in_their_own_directories(
  tmp_path, monkeypatch
):
  calls = []

  def fake_run(experiment, config_arg, workdir, timeout, name, cache_dir=None):
    calls.append((experiment, config_arg, os.path.basename(workdir)))
    return {"acc_gap": 0.01}, None

  monkeypatch.setattr(_jobs, "run_experiment", fake_run)
  config = config_lib.get_config("gpu,only=simplicity_bias")
  results = reproduce.run(config, str(tmp_path))
  assert calls == [("simplicity_bias", "gpu", "simplicity_bias_gpu")]
  assert results["tier"] == "gpu"
  assert results["claims"]["sb_adam_more_accurate"]["run"] == (
    "simplicity_bias_gpu"
  )
  text = (tmp_path / "REPORT.md").read_text()
  assert "claims at the gpu scale" in text and "Wall time: " in text
  # A quick report in the same workdir is no "change" of the gpu one.
  assert reproduce.previous_verdicts(str(tmp_path), "quick") == {}
  assert reproduce.previous_verdicts(str(tmp_path), "gpu")
