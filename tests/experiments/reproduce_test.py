"""The reproduce report runs registered claims and writes REPORT.md."""

import os

import pytest

from configs import reproduce as config_lib
from experiments import claims as claims_lib
from experiments import reproduce
from lib.core import errors
from lib.train import report


def test_registry_is_well_formed():
  claims = claims_lib.all_claims()
  assert claims
  repo = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  )
  for c in claims:
    report.parse_check(c.check)  # raises on a malformed check
    assert os.path.exists(
      os.path.join(repo, "experiments", f"{c.experiment}.py")
    ), c
    assert os.path.exists(
      os.path.join(repo, "configs", f"{c.experiment}.py")
    ), c


def test_unknown_subset_is_a_config_error():
  with pytest.raises(errors.ConfigError, match="nonexistent_paper"):
    reproduce.select(claims_lib.all_claims(), "nonexistent_paper")


def test_smoke_report_for_one_paper(tmp_path):
  config = config_lib.get_config("only=simplicity_bias,smoke")
  results = reproduce.run(config, str(tmp_path))
  text = (tmp_path / "REPORT.md").read_text()
  assert results["failures"] == {}
  assert results["num_claims"] == text.count("| simplicity_bias |") > 0
  assert "Environment: jax" in text
  assert (tmp_path / "simplicity_bias" / "boundaries.png").exists()
