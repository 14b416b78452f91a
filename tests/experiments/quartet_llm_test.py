"""quartet_llm: seeds train vmapped and paired, gaps carry intervals, bad configs fail early."""

import json
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from configs import quartet_llm as config_lib
from configs import quartet_scaling as scaling_config
from experiments import _quartet
from experiments import quartet_llm
from experiments import quartet_scaling
from experiments.claims import quartet as quartet_claims
from experiments.claims import report
from lib import models
from lib import train as train_lib
from lib.core.errors import ConfigError
from lib.data import text
from tests import helpers


def test_smoke_run_writes_results(tmp_path, fast_compile, monkeypatch):
  config = config_lib.get_config("quick,smoke")
  assert config.seeds == 2
  # Training batches come from the official reader's epochs (the default).
  drawn = []
  epoch_windows = text.epoch_windows
  monkeypatch.setattr(
    text, "epoch_windows", lambda *a: drawn.append(a[3:]) or epoch_windows(*a)
  )
  r = quartet_llm.run(config, str(tmp_path))
  assert config.data.sampling == "epoch"
  assert drawn and set(drawn) == {(config.data.batch_size, config.data.seq_len)}
  assert set(r["val_loss"]) == {"bf16", "quartet"}
  for m, v in r["val_loss_per_seed"].items():
    # A few steps from a uniform 256-way guess (5.55 nats) must go down.
    assert len(v) == 2 and all(np.isfinite(v)) and max(v) < np.log(256)
    assert r["val_loss"][m] == pytest.approx(np.mean(v))
    assert r["finite_fraction"][m] == 1.0
  # Seeds differ (own init and batches); the gap is paired seed by seed.
  assert r["val_loss_per_seed"]["bf16"][0] != r["val_loss_per_seed"]["bf16"][1]
  g = r["gap"]["quartet"]
  per_seed = np.subtract(
    r["val_loss_per_seed"]["quartet"], r["val_loss_per_seed"]["bf16"]
  )
  np.testing.assert_allclose(g["per_seed"], per_seed, rtol=1e-12)
  assert g["n"] == 2 and g["lo"] <= g["mean"] <= g["hi"]
  assert abs(g["mean"]) < 0.5
  assert os.path.exists(os.path.join(tmp_path, "loss_curves.png"))
  with open(os.path.join(tmp_path, "results.json")) as f:
    saved = json.load(f)
  assert saved["gap"]["quartet"]["mean"] == g["mean"]
  rows = train_lib.read_jsonl(str(tmp_path / "bf16"))
  assert {row["run"] for row in rows} == {"bf16/seed0", "bf16/seed1"}
  # The gap claim finds its number, band and divergence flag (the smoke run
  # has no QuEST-fwd-only / SR-bwd-only runs for the other two claims).
  (claim,) = [c for c in quartet_claims.CLAIMS if c.name == "quartet_llm_gap"]
  row = report.evaluate(claim, saved)
  assert row["verdict"] != "missing", row["reasons"]
  assert "[" in row["ours"]  # the interval is shown
  no_ablations = "smoke has no QuEST-fwd-only / SR-bwd-only runs"
  helpers.check_claim_keys(
    "quartet_llm",
    tmp_path,
    absent={
      "quartet_sr_backward_cheap": no_ablations,
      "quartet_forward_dominates_gap": no_ablations,
    },
  )


@pytest.mark.parametrize(
  "override, match",
  [
    (
      dict(methods=("bf16", "quartett")),
      r"config.methods='quartett' is not one of \[.*'quartet'",
    ),
    (dict(methods=("quartet",)), "must include 'bf16'"),
    (dict(implementation="cuda"), "config.implementation='cuda'"),
    (dict(seeds=0), "config.seeds=0"),
    (dict(compute_dtype="float16"), "config.compute_dtype='float16'"),
    (dict(interval_level=1.5), "config.interval_level=1.5"),
    (dict(model=dict(d_model=48)), "config.model.d_model=48"),
    (dict(model=dict(n_heads=3)), "must split into 3"),
  ],
)
def test_bad_config_fails_before_training(tmp_path, override, match):
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.update(override)
  with pytest.raises(ConfigError, match=match) as e:
    quartet_llm.run(config, str(tmp_path))
  assert "\n" not in str(e.value)
  # Nothing trained: no method sub-workdir exists.
  assert not any(os.path.isdir(tmp_path / m) for m in _quartet.METHODS)


@pytest.mark.parametrize("binary", [quartet_llm, quartet_scaling])
def test_short_corpus_fails_before_the_workdir_is_written(tmp_path, binary):
  # The smoke windows are 64 + 1 tokens; 2 % of 2,000 bytes is 40 for
  # validation. A corpus this short was refused after config.json was
  # written (so the corrected rerun in that workdir was refused as another
  # config), naming neither the file nor data.seq_len.
  corpus = tmp_path / "short.txt"
  corpus.write_text("x" * 2000)
  config = (config_lib if binary is quartet_llm else scaling_config).get_config(
    "quick,smoke"
  )
  with config.unlocked():
    config.data.path = str(corpus)
    config.data.seq_len = 64
  workdir = tmp_path / "w"
  with pytest.raises(ConfigError, match="validation split holds 40") as e:
    binary.run(config, str(workdir))
  assert "config.data.path=" in str(e.value)
  assert "config.data.seq_len=64" in str(e.value)
  assert not os.path.exists(workdir / "config.json")


def test_epoch_sampling_needs_a_batch_of_training_windows(tmp_path):
  # 1,960 training bytes hold 59 windows of 32: too few for a batch of 64.
  corpus = tmp_path / "short.txt"
  corpus.write_text("x" * 2000)
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.data.update(path=str(corpus), seq_len=32, batch_size=64)
  with pytest.raises(ConfigError, match="training split holds 1960") as e:
    quartet_llm.run(config, str(tmp_path / "w"))
  assert "data.batch_size=64, data.sampling='epoch'" in str(e.value)
  with config.unlocked():
    config.data.sampling = "shuffle"
  with pytest.raises(ConfigError, match="config.data.sampling"):
    quartet_llm.run(config, str(tmp_path / "w"))


def test_paired_interval_is_the_student_t_interval():
  a = np.array([3.10, 3.25, 3.05, 3.20])
  b = np.array([3.00, 3.10, 3.02, 3.05])
  r = _quartet.paired_interval(a, b, level=0.9)
  diff = a - b
  half = (
    scipy.stats.t.ppf(0.95, 3) * np.std(diff, ddof=1) / math.sqrt(len(diff))
  )
  assert r["mean"] == pytest.approx(diff.mean())
  assert (r["lo"], r["hi"]) == pytest.approx(
    (diff.mean() - half, diff.mean() + half)
  )
  assert r["n"] == 4 and r["comparator_finite"] == 1.0
  # A diverged comparator seed is dropped and counted; a diverged method
  # seed is infinitely worse, never dropped.
  r = _quartet.paired_interval(a, np.where([1, 1, 1, 0], b, np.nan))
  assert r["n"] == 3 and r["comparator_finite"] == 0.75
  r = _quartet.paired_interval(np.where([1, 0, 1, 1], a, np.inf), b)
  assert r["mean"] == np.inf and r["hi"] == np.inf
  # One seed: no interval.
  r = _quartet.paired_interval(a[:1], b[:1])
  assert (r["lo"], r["hi"]) == (-np.inf, np.inf)


def test_seed_groups_split_the_seeds():
  config = config_lib.get_config("quick")
  with config.unlocked():
    config.seeds, config.seeds_per_call = 5, 2
  assert _quartet.seed_groups(config) == [(0, 1), (2, 3), (4,)]
  config.seeds_per_call = 0
  assert _quartet.seed_groups(config) == [(0, 1, 2, 3, 4)]


def test_every_method_maps_to_a_model_config():
  config = config_lib.get_config("quick")
  for method in _quartet.METHODS:
    c = _quartet.model_config(config, method)
    assert c.d_model % 32 == 0 and c.mlp_hidden % 32 == 0
  paper = config_lib.get_config()
  c = _quartet.model_config(paper, "quartet")
  assert (c.n_layers, c.d_model, c.n_heads) == (6, 640, 5)


def test_paper_model_has_the_official_mlp_width():
  # int(8/3 640) = 1706 up to a multiple of 256: N as the paper's 30M model.
  c = _quartet.model_config(config_lib.get_config(), "quartet")
  assert c.mlp_hidden == 1792 and c.residual_init == "scaled"
  assert models.non_embedding_params(c) == 30_482_560


def _tokens_per_param(config):
  c = _quartet.model_config(config, "bf16")
  data, train = config.data, config.train
  tokens = train.num_steps * data.batch_size * data.seq_len
  return tokens / models.non_embedding_params(c)


def test_quick_matches_the_papers_tokens_per_param():
  # The paper's 30M row: 2861 steps x 512 x 512 tokens / 30,482,560 = 24.6.
  assert _tokens_per_param(config_lib.get_config()) == pytest.approx(
    24.6, abs=0.05
  )
  quick = config_lib.get_config("quick")
  assert 24 <= _tokens_per_param(quick) <= 26
  # The earlier quick (0.4M params, D/N 0.5) is a named reading of it.
  old = config_lib.get_config("quick,d128")
  assert models.non_embedding_params(_quartet.model_config(old, "bf16")) > 4e5
  assert _tokens_per_param(old) == pytest.approx(0.51, abs=0.01)
  with pytest.raises(ValueError, match="d128"):
    config_lib.get_config("gpu,d128")


def test_optimizer_decays_only_the_block_linears_from_lr_over_100():
  # Zero gradients: Adam's moment term is 0, so the first update is the
  # decoupled decay alone, -lr_0 * wd * p with lr_0 = lr / 100 (OneCycleLR's
  # first value) on the block linears' kernels and 0 everywhere else.
  config = config_lib.get_config("quick,smoke")
  llama = models.Llama(_quartet.model_config(config, "quartet"))
  params = llama.init(jax.random.key(0), np.zeros((1, 8), np.int32))
  tx = _quartet.make_optimizer(config)
  zeros = jax.tree.map(jnp.zeros_like, params)
  updates, _ = jax.jit(tx.update)(zeros, tx.init(params), params)
  lr0 = config.optim.learning_rate / 100 * config.optim.weight_decay
  flat = jax.tree_util.tree_leaves_with_path(updates)
  for path, u in flat:
    name = jax.tree_util.keystr(path)
    p = params
    for k in path:
      p = p[k.key]
    want = -lr0 * p if "block_" in name and "kernel" in name else 0 * p
    np.testing.assert_allclose(u, want, rtol=1e-5, atol=0, err_msg=name)
  assert sum("kernel" in jax.tree_util.keystr(p) for p, _ in flat) == 5


def test_old_optimizer_is_a_config_mode():
  # [ours] linear warmup from 0 and decay on every parameter.
  config = config_lib.get_config("quick,smoke")
  with config.unlocked():
    config.optim.schedule = "linear_warmup"
    config.optim.weight_decay_mask = "all"
  params = {"w": jnp.ones(3)}
  tx = _quartet.make_optimizer(config)
  u, _ = tx.update({"w": jnp.zeros(3)}, tx.init(params), params)
  np.testing.assert_array_equal(u["w"], 0.0)  # lr 0 at step 0
  config.optim.schedule = "cosine"
  with pytest.raises(ConfigError, match="config.optim.schedule"):
    _quartet.check_config(config)


def test_bf16_autocast_step_keeps_float32_params_and_optimizer_state():
  # As torch autocast: bf16 matmuls, float32 master weights and AdamW moments.
  config = config_lib.get_config("quick,smoke")
  assert config_lib.get_config().compute_dtype == "bfloat16"  # official
  assert config_lib.get_config("gpu").compute_dtype == "bfloat16"
  with config.unlocked():
    config.compute_dtype = "bfloat16"
  for method in ("bf16", "quartet"):
    llama = models.Llama(_quartet.model_config(config, method))
    assert llama.config.compute_dtype == "bfloat16"
    tx = _quartet.make_optimizer(config)
    tokens = jax.random.randint(jax.random.key(0), (2, 33), 0, 256)
    params = llama.init(jax.random.key(1), tokens[:, :-1])

    def loss_fn(p, batch, key, llama=llama):
      logits = llama.apply(p, batch[:, :-1], rngs={"quant": key})
      return models.next_token_loss(logits, batch[:, 1:]), {}

    step = jax.jit(train_lib.make_train_step(loss_fn, tx))
    state, metrics = step(
      train_lib.create_state(params, tx), tokens, jax.random.key(2)
    )
    assert np.isfinite(float(metrics["loss"]))
    for leaf in jax.tree.leaves((state.params, state.opt_state)):
      if jnp.issubdtype(leaf.dtype, jnp.floating):
        assert leaf.dtype == jnp.float32, method
    moved = jax.tree.map(
      lambda a, b: bool(jnp.any(a != b)), params, state.params
    )
    assert all(jax.tree.leaves(moved)), method
