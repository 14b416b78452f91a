"""sfn: smoke run with every tool, the teacher-forced level-IV identity, config errors."""

import json
import os

import jax
import numpy as np
import pytest

from configs import sfn as config_lib
from experiments import sfn as ex
from experiments.claims import sfn as claims
from lib.core import errors
from lib.interp import tasks
from tests import helpers


def test_smoke_results_figures_and_claim_keys(tmp_path, fast_compile):
  config = config_lib.get_config("quick,smoke")
  r = ex.run(config, str(tmp_path))
  assert r["finite"]
  m = r["models"]
  for name in ["A", "B"] + [
    f"merge_{x}" for x in ex.SINGLE + tuple(ex.MERGE_GROUPS)
  ]:
    assert 0.0 <= m[name]["reasoning_accuracy"]["mean"] <= 1.0
    assert sum(m[name]["levels"].values()) == pytest.approx(1.0)
  assert len(r["destruction"]) == len(ex.SINGLE) * config.model.n_layers
  for name in (
    "delta_norms.png",
    "relative_change_hist.png",
    "merge_freeze.png",
    "destruction.png",
    "results.json",
  ):
    assert os.path.exists(tmp_path / name), name
  with open(tmp_path / "results.json") as f:
    saved = json.load(f)
  for c in claims.CLAIMS:
    node = saved
    for part in c.metric.split("."):
      node = node[part]
  helpers.check_claim_keys("sfn", tmp_path)
  # Resume after a kill: tests/reliability/kill_all_test.py.


def test_teacher_forced_exact_match_is_greedy_level_iv(fast_compile):
  """Gold = the model's own greedy continuation: exact match 1; one token
  changed: 0 for that problem (the induction the experiment relies on)."""
  config = config_lib.get_config("quick,smoke")
  data = ex.make_data(config)
  tools = ex.Tools(config, data)
  params = jax.vmap(lambda k: tools.llama.init(k, np.zeros((1, 4), np.int32)))(
    jax.random.split(jax.random.key(0), 2)
  )
  prompts = data["test_prompts"][:6]
  cont = np.asarray(tools.generate(params, prompts))[0]  # seed 0's output
  p = prompts.shape[1]
  gold = np.concatenate([prompts, cont], axis=1)
  mask = np.zeros((6, gold.shape[1] - 1), np.float32)
  mask[:, p - 1 :] = 1.0
  seed0 = jax.tree.map(lambda x: x[:1], params)
  assert float(tools.exact_match(seed0, gold, mask)[0]) == 1.0
  gold[2, p + 3] = (gold[2, p + 3] + 1) % tasks.VOCAB_SIZE
  assert float(tools.exact_match(seed0, gold, mask)[0]) == pytest.approx(5 / 6)


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("freeze_sets", {"o": ("oproj",)}, "config.freeze_sets.o"),
    ("digits", 0, "config.digits"),
    ("batch_size", 1, "config.batch_size"),
  ],
)
def test_config_errors_name_the_key(key, value, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config[key] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)


def test_generate_more_than_test_problems_is_an_error():
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.data.generate_problems = config.data.test_problems + 1
  with pytest.raises(errors.ConfigError, match="generate_problems"):
    ex.check_config(config)
