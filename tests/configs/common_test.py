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


def test_variant_of_copies_and_refuses_new_keys():
  base = common.lock(common.train_config(num_steps=7))
  base.unlock()
  base.variant = "quick"
  config = common.variant_of(base, "gpu")
  assert (config.variant, config.num_steps, base.variant) == ("gpu", 7, "quick")
  config.num_steps = 9  # a change of an existing key
  assert base.num_steps == 7
  with pytest.raises(AttributeError, match="num_step"):
    config.num_step = 9  # a typo
