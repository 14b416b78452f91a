"""configs.common: argument parsing, training keys, locking."""

import pytest

from configs import common


def test_parse_arg_variants_and_flags():
  arg = common.parse_arg("quick,smoke", variant="paper", smoke=False)
  assert (arg.variant, arg.smoke) == ("quick", True)
  arg = common.parse_arg("variant=quick,n=7", variant="paper", n=1)
  assert (arg.variant, arg.n) == ("quick", 7)
  assert common.parse_arg(None, variant="paper").variant == "paper"


def test_parse_arg_errors_name_the_problem():
  with pytest.raises(ValueError, match="'bogus'"):
    common.parse_arg("bogus=1", variant="paper")
  with pytest.raises(ValueError, match="n='x' is not a valid int"):
    common.parse_arg("n=x", n=1)


def test_locked_config_rejects_typos():
  config = common.lock(common.train_config())
  with pytest.raises(AttributeError, match="lerning_rate"):
    config.lerning_rate = 1.0
  with pytest.raises(ValueError, match="unknown training key"):
    common.train_config(lerning_rate=1.0)
