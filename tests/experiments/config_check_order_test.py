"""A bad override stops a run before it writes anything to its workdir.

Before, qblr, nanoadam_finetune, sadl, hns_toy, hns_*, and quartet_* wrote
config.json first and checked after, so the corrected rerun was refused as a
config change (issue 33). Called through `_cli.execute`, the CLI's own steps.
"""

import os

import pytest

from configs import nanoadam_finetune as nanoadam_config
from configs import qblr as qblr_config
from configs import quartet_llm as quartet_llm_config
from configs import sadl as sadl_config
from experiments import _cli
from experiments import nanoadam_finetune as nanoadam
from experiments import qblr
from experiments import quartet_llm
from experiments import sadl
from lib.core import errors

_CASES = {
  "qblr": (qblr, qblr_config, ("mle", "methods"), ("qng", "nope")),
  "nanoadam_finetune": (nanoadam, nanoadam_config, ("methods",), ("nope",)),
  "quartet_llm": (quartet_llm, quartet_llm_config, ("methods",), ("nope",)),
  "sadl": (sadl, sadl_config, ("mlp", "methods"), ("sadl", "nope")),
}


@pytest.mark.parametrize("name", sorted(_CASES))
@pytest.mark.parametrize("in_process", [False, True])
def test_bad_override_writes_no_config_json(name, in_process, tmp_path):
  module, config_module, key, value = _CASES[name]
  config = config_module.get_config("quick,smoke")
  section = config
  for k in key[:-1]:
    section = section[k]
  with config.unlocked():
    section[key[-1]] = value
  workdir = str(tmp_path / "run")
  with pytest.raises(errors.ConfigError, match="nope"):
    if in_process:  # a notebook's call: run() checks first as well
      module.run(config, workdir)
    else:
      _cli.execute(module.run, config, workdir, module.check_config)
  assert not os.path.exists(os.path.join(workdir, "config.json"))


@pytest.mark.parametrize("name", ["sfn", "trpe", "drag", "compact_memory"])
def test_a_phased_experiment_refuses_train_num_steps(name, tmp_path):
  # Their phases set their own steps: before, --config.train.num_steps=1000
  # ran the configured phases and recorded the ignored 1000 in config.json.
  import importlib

  module = importlib.import_module(f"experiments.{name}")
  config = importlib.import_module(f"configs.{name}").get_config("quick,smoke")
  module.check_config(config)  # 0 as shipped
  config.train.num_steps = 1000
  workdir = str(tmp_path / "run")
  with pytest.raises(errors.ConfigError, match="train.num_steps=1000 is not"):
    _cli.execute(module.run, config, workdir, module.check_config)
  assert not os.path.exists(workdir)
