"""dpo_diversity: smoke runs, claim keys, config errors (the Q* and fit
oracles: tests/lib/alignment/scaling_test.py)."""

import json
import os

import jax
import numpy as np
import pytest

from configs import dpo_diversity as config_lib
from experiments import dpo_diversity as ex
from experiments.claims import dpo_diversity as claims
from lib.core import errors
from tests import helpers


@pytest.mark.parametrize("flags", ["quick,smoke", "quick,shared,smoke"])
def test_smoke_results_figures_and_claim_keys(flags, tmp_path, fast_compile):
  config = config_lib.get_config(flags)
  if "shared" in flags:  # the earlier setting's path; GD alone is enough.
    with config.unlocked():
      config.optimizers = ("gd",)
  r = ex.run(config, str(tmp_path))
  assert r["finite"] and r["setting"]["data_model"] == config.data_model
  for opt in config.optimizers:
    mean, worst = r[opt]["mean"]["accuracy"], r[opt]["worst"]["accuracy"]
    assert set(mean) == set(worst) == {f"K{k}" for k in config.num_clusters}
    for k in mean:
      assert all(0.0 <= w <= m <= 1.0 for m, w in zip(mean[k], worst[k]))
    assert mean["K1"] == worst["K1"]  # one value: its mean is its worst
  for name in ("accuracy_vs_q.png", "qstar_vs_k.png", "results.json"):
    assert os.path.exists(tmp_path / name)
  with open(tmp_path / "results.json") as f:
    saved = json.load(f)
  for c in claims.CLAIMS:  # every claim's key exists in the results
    if c.metric.split(".")[0] not in config.optimizers:
      continue
    node = saved
    for part in c.metric.split("."):
      node = node[part]
  if flags == "quick,smoke":  # the run the reproduce report reads
    helpers.check_claim_keys("dpo_diversity", tmp_path)


@pytest.mark.xla_optimized  # the oracle is XLA's default compile
@pytest.mark.parametrize("flags", ["quick,smoke", "quick,shared,smoke"])
def test_data_draw_compiled_at_draw_level_matches_the_default(
  flags, monkeypatch
):
  # The draw compiles at DRAW_COMPILE for speed; the oracle is the same draw
  # compiled at XLA's default options: every array bitwise equal.
  config = config_lib.get_config(flags)
  k = max(config.num_clusters)
  fast = ex.make_data(config, k)
  monkeypatch.setattr(ex, "DRAW_COMPILE", {})
  default = ex.make_data(config, k)
  assert jax.tree.structure(fast) == jax.tree.structure(default)
  for a, b in zip(jax.tree.leaves(fast), jax.tree.leaves(default)):
    np.testing.assert_array_equal(a, b)


def test_paper_model_is_the_default_and_time_grows_with_k():
  paper = config_lib.get_config("quick")
  shared = config_lib.get_config("quick,shared")
  assert paper.data_model == "paper" and shared.data_model == "shared_tokens"
  assert [ex.vocab_size(paper, k) for k in (1, 32)] == [2, 64]
  assert ex.vocab_size(shared, 32) == 2
  assert ex.steps(paper, 32) == 32 * ex.steps(paper, 1)
  assert ex.steps(shared, 32) == ex.steps(shared, 1)


@pytest.mark.parametrize(
  "key, value, match",
  [
    ("beta", 0.0, "config.beta"),
    ("fixed_q", 3, "config.fixed_q"),
    ("loss", "kto", "config.loss"),
    ("per_cluster", (4, 2), "strictly increasing"),
    ("data_model", "mixed", "config.data_model"),
    ("dim", 4, "config.dim=4"),
    # Was "config.checkpoint_every=0 must be ..." after config.json.
    ("train.num_steps", 0, "config.train.num_steps=0"),
  ],
)
def test_config_errors_name_the_key(key, value, match):
  config = config_lib.get_config("quick,smoke")
  section, _, name = key.rpartition(".")
  with config.unlocked():
    (config[section] if section else config)[name] = value
  with pytest.raises(errors.ConfigError, match=match):
    ex.check_config(config)


def test_llama_heads_that_do_not_split_d_model_name_the_keys():
  # Was "d_model=16 must split into 3 even-sized heads", after config.json.
  config = config_lib.get_config("quick,llama,smoke")
  with config.unlocked():
    config.llama.n_heads = 3
  with pytest.raises(errors.ConfigError, match=r"llama\.n_heads=3 heads"):
    ex.check_config(config)


def test_llama_embedding_mode_runs_the_same_sweep(tmp_path, fast_compile):
  config = config_lib.get_config("quick,llama,smoke")
  assert config.embeddings == "llama"
  r = ex.run(config, str(tmp_path))
  assert r["finite"] and r["setting"]["embeddings"] == "llama"
  assert os.path.exists(tmp_path / "concept_lm" / "metrics.jsonl")
  for opt in config.optimizers:
    assert set(r[opt]["mean"]["accuracy"]) == {
      f"K{k}" for k in config.num_clusters
    }


def test_llama_mode_width_mismatch_names_the_keys():
  config = config_lib.get_config("quick,llama,smoke")
  with config.unlocked():
    config.dim = config.llama.d_model + 1
  with pytest.raises(errors.ConfigError, match="config.llama.d_model"):
    ex.check_config(config)
  with config.unlocked():
    config.dim = config.llama.d_model
    config.data_model = "paper"
  with pytest.raises(errors.ConfigError, match="shared_tokens"):
    ex.check_config(config)
