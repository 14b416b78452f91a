"""SfN stethoscopes: the spec's oracles 1-5 and the one-line errors."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from lib import interp
from lib import models
from lib.core import errors
from lib.interp import tasks


def _llama(**kw):
  cfg = models.LlamaConfig(
    vocab_size=tasks.VOCAB_SIZE,
    d_model=32,
    n_layers=2,
    n_heads=4,
    mlp_hidden=64,
    max_len=16,
    linear="dense",
    split_projections=True,
    **kw,
  )
  return models.Llama(cfg)


def _two_models():
  model = _llama()
  x = np.zeros((1, 8), np.int32)
  a = model.init(jax.random.key(0), x)
  b = model.init(jax.random.key(1), x)
  # Norm scales start at 1 in both; make them differ so "full merge = B"
  # has to copy the norms too.
  b = jax.tree_util.tree_map_with_path(
    lambda p, v: v * 1.5 if "norm" in interp.path_name(p) else v, b
  )
  return model, a, b


def _tokens():
  return jax.random.randint(jax.random.key(7), (2, 12), 0, tasks.VOCAB_SIZE)


def test_split_projections_name_every_module_and_keep_default_tree():
  model, a, _ = _two_models()
  names = {
    interp.path_name(p) for p, _ in jax.tree_util.tree_leaves_with_path(a)
  }
  for m in ("q", "k", "v", "o", "gate", "up", "down"):
    assert f"params/block_1/{m}_proj/kernel" in names
  fused = models.Llama(
    models.LlamaConfig(d_model=32, mlp_hidden=64, linear="dense")
  )
  p = fused.init(jax.random.key(0), np.zeros((1, 8), np.int32))
  assert set(p["params"]["block_0"]) == {
    "attn_norm",
    "qkv",
    "out",
    "mlp_norm",
    "w12",
    "down",
  }
  # The fused and split layouts compute the same function of the same
  # weights (the fused kernels cut into their q/k/v and gate/up columns).
  split = jax.tree.map(lambda x: x, a)
  fused2 = models.Llama(
    models.LlamaConfig(d_model=32, mlp_hidden=64, linear="dense", n_layers=2)
  )
  p2 = fused2.init(jax.random.key(0), np.zeros((1, 8), np.int32))
  for layer in ("block_0", "block_1"):
    f = p2["params"][layer]
    s = dict(split["params"][layer])
    qkv = f["qkv"]["kernel"]
    s.update(
      q_proj={"kernel": qkv[:, :32]},
      k_proj={"kernel": qkv[:, 32:64]},
      v_proj={"kernel": qkv[:, 64:]},
      o_proj={"kernel": f["out"]["kernel"]},
      gate_proj={"kernel": f["w12"]["kernel"][:, :64]},
      up_proj={"kernel": f["w12"]["kernel"][:, 64:]},
      down_proj={"kernel": f["down"]["kernel"]},
      attn_norm=f["attn_norm"],
      mlp_norm=f["mlp_norm"],
    )
    split["params"][layer] = s
  for k in ("Embed_0", "final_norm", "lm_head"):
    split["params"][k] = p2["params"][k]
  split_model = models.Llama(
    models.LlamaConfig(
      d_model=32,
      mlp_hidden=64,
      linear="dense",
      n_layers=2,
      split_projections=True,
    )
  )
  t = jax.random.randint(jax.random.key(3), (2, 8), 0, 256)
  np.testing.assert_allclose(
    split_model.apply(split, t), fused2.apply(p2, t), rtol=1e-5, atol=1e-5
  )


def test_oracle1_empty_merge_is_a_full_merge_is_b_bit_exactly():
  model, a, b = _two_models()
  t = _tokens()
  empty = interp.merge(a, b, ())
  full = interp.merge(a, b, ("all",))
  np.testing.assert_array_equal(model.apply(empty, t), model.apply(a, t))
  np.testing.assert_array_equal(model.apply(full, t), model.apply(b, t))
  for x, y in zip(jax.tree.leaves(full), jax.tree.leaves(b)):
    np.testing.assert_array_equal(x, y)
  # A single-module merge copies exactly that module and keeps A's norms.
  m = interp.merge(a, b, ("o",))
  for path, leaf in jax.tree_util.tree_leaves_with_path(m):
    name = interp.path_name(path)
    src = b if "o_proj" in name else a
    want = src
    for p in path:
      want = want[p.key]
    np.testing.assert_array_equal(leaf, want, err_msg=name)


def test_oracle2_freeze_only_o_leaves_every_other_parameter_bit_identical():
  model, a, _ = _two_models()
  tx = interp.freeze(optax.adamw(1e-2, weight_decay=0.1), a, ("o",))
  state = tx.init(a)
  t = _tokens()

  def loss(p):
    return jnp.mean(model.apply(p, t) ** 2)

  p = a
  for _ in range(3):
    g = jax.grad(loss)(p)
    u, state = tx.update(g, state, p)
    p = optax.apply_updates(p, u)
  changed = 0
  for path, x in jax.tree_util.tree_leaves_with_path(p):
    name = interp.path_name(path)
    y = a
    for k in path:
      y = y[k.key]
    if "o_proj" in name:
      changed += int(not np.array_equal(x, y))
    else:
      np.testing.assert_array_equal(x, y, err_msg=name)
  assert changed == 2  # both layers' o_proj moved


def test_oracle3_delta_recovers_a_planted_delta():
  _, a, _ = _two_models()
  dw = 0.05 * jax.random.normal(jax.random.key(5), (32, 32))
  b = jax.tree.map(lambda x: x, a)
  b["params"]["block_1"] = dict(b["params"]["block_1"])
  w = a["params"]["block_1"]["v_proj"]["kernel"]
  b["params"]["block_1"]["v_proj"] = {"kernel": w + dw}
  d = interp.delta_norms(a, b)
  want = np.linalg.norm(
    np.asarray(w + dw, np.float64) - np.asarray(w, np.float64)
  )
  np.testing.assert_allclose(d["v"]["delta"], [0.0, want], rtol=1e-6)
  np.testing.assert_allclose(
    d["v"]["relative"][1],
    want / np.linalg.norm(np.asarray(w, np.float64)),
    rtol=1e-6,
  )
  for m in ("q", "k", "o", "gate", "up", "down", "norm", "embed", "head"):
    assert d["_total"][m]["delta"] == 0.0
  r = interp.relative_changes(a, b, "v", layers=(1,))
  np.testing.assert_allclose(
    r,
    (np.asarray(w + dw) - np.asarray(w)).ravel() / np.asarray(w).ravel(),
    rtol=1e-4,
  )


def test_oracle4_destroying_behind_a_zero_output_changes_nothing():
  model, a, _ = _two_models()
  t = _tokens()
  # Zero-initialise layer 1's o_proj: attention of layer 1 adds nothing to the
  # residual stream, so destroying its q, k or v (or o itself) is invisible.
  z = interp.destroy(a, ("o",), layers=(1,))
  ref = model.apply(z, t)
  for m in ("q", "k", "v", "o"):
    np.testing.assert_array_equal(
      model.apply(interp.destroy(z, (m,), layers=(1,)), t), ref
    )
  # ...whereas destroying layer 0's q changes the logits.
  assert not np.allclose(
    model.apply(interp.destroy(z, ("q",), layers=(0,)), t), ref
  )
  # Noise mode perturbs only the chosen leaves.
  n = interp.destroy(
    a, ("down",), layers=(0,), mode="noise", key=jax.random.key(0)
  )
  assert not np.array_equal(
    n["params"]["block_0"]["down_proj"]["kernel"],
    a["params"]["block_0"]["down_proj"]["kernel"],
  )
  np.testing.assert_array_equal(
    n["params"]["block_1"]["down_proj"]["kernel"],
    a["params"]["block_1"]["down_proj"]["kernel"],
  )


def test_oracle5_grading_is_deterministic_and_levels_are_right():
  ops = np.array([[123, 989], [500, 500], [7, 8]])
  digits = 3
  p = tasks.prompt_length(digits)
  full = [tasks.format_addition(a, b, digits, True)[p:] for a, b in ops]
  direct = [tasks.format_addition(a, b, digits, False)[p:] for a, b in ops]
  width = max(len(x) for x in full)
  pad = lambda xs: np.array([x + [tasks.PAD] * (width - len(x)) for x in xs])
  lv, ln = tasks.grade(pad(full), ops, digits)
  np.testing.assert_array_equal(lv, [4, 4, 4])
  np.testing.assert_array_equal(ln, [len(x) for x in full])
  lv, _ = tasks.grade(pad(direct), ops, digits)
  np.testing.assert_array_equal(lv, [3, 3, 3])
  wrong = [list(x) for x in full]
  wrong[0][-2] = (
    tasks.DIGIT0 + (wrong[0][-2] - tasks.DIGIT0 + 1) % 10
  )  # top digit
  wrong[1][2] = tasks.DIGIT0 + 9  # a carry of the chain, answer still right
  wrong[2] = [tasks.DIGIT0] * width  # no EOS: malformed
  lv, _ = tasks.grade(pad(wrong), ops, digits)
  np.testing.assert_array_equal(lv, [2, 3, 1])
  again, _ = tasks.grade(pad(wrong), ops, digits)
  np.testing.assert_array_equal(lv, again)


def test_bimodality_coefficient_separates_one_mode_from_two():
  r = np.random.default_rng(0)
  normal = r.normal(size=20_000)
  two = np.concatenate([r.normal(-3, 0.5, 10_000), r.normal(3, 0.5, 10_000)])
  np.testing.assert_allclose(
    interp.bimodality_coefficient(normal), 1 / 3, atol=0.02
  )
  np.testing.assert_allclose(
    interp.bimodality_coefficient(r.uniform(size=50_000)), 5 / 9, atol=0.01
  )
  assert interp.bimodality_coefficient(two) > 0.8


def test_trimmed_bimodality_reads_the_shape_not_a_few_extremes():
  # Two modes (coefficient ~0.9) plus 0.5 % of far outliers, as relative
  # changes get where W_A is near 0: the raw coefficient falls below a
  # uniform's 5/9, the 1 %-trimmed one reads the two modes.
  r = np.random.default_rng(2)
  two = np.concatenate([r.normal(-3, 0.5, 10_000), r.normal(3, 0.5, 10_000)])
  extremes = r.choice([-1.0, 1.0], 100) * r.uniform(1e3, 1e4, 100)
  x = r.permutation(np.concatenate([two, extremes]))
  assert interp.bimodality_coefficient(x) < 5 / 9
  assert interp.bimodality_coefficient(x, trim=0.01) > 0.8
  kept = interp.trim_tails(x, 0.01)
  assert kept.size == pytest.approx(0.98 * x.size, abs=2)
  assert np.abs(kept).max() < 10
  np.testing.assert_array_equal(interp.trim_tails(x, 0.0), x)
  with pytest.raises(errors.ConfigError, match=r"in \[0, 0.5\)"):
    interp.trim_tails(x, 0.5)


def test_delta_report_ranks_o_against_the_largest_and_second_largest():
  # Every entry of a module scaled by (1 + c): its relative change is |c|.
  scale = {"q": 0.3, "o": 0.2, "k": 0.05, "v": 0.04, "gate": 0.03}
  scale.update(up=0.02, down=0.01)
  r = np.random.default_rng(3)
  a = {
    "block_0": {
      f"{m}_proj": {"kernel": r.normal(size=(2, 8, 8))} for m in scale
    }
  }
  b = jax.tree_util.tree_map_with_path(
    lambda p, x: x * (1 + scale[interp.module_of(interp.path_name(p))]), a
  )
  d = interp.delta_report(a, b, tuple(scale), focus="o")
  np.testing.assert_allclose(d["o_minus_max_other_relative"]["seeds"], -0.1)
  np.testing.assert_allclose(d["o_minus_second_other_relative"]["seeds"], 0.15)
  assert d["o_rank_relative"] == [2, 2]


def test_select_works_on_foreign_names_and_groups():
  tree = {
    "layers_0": {"self_attn": {"query": 1.0, "out": 2.0}, "mlp": {"w1": 3.0}},
    "ln_f": {"scale": 4.0},
  }
  mask = interp.select(tree, ("o", "norm"))
  assert mask == {
    "layers_0": {
      "self_attn": {"query": False, "out": True},
      "mlp": {"w1": False},
    },
    "ln_f": {"scale": True},
  }
  assert interp.layer_of("layers_0/self_attn/out") == 0
  assert interp.expand(("mlp",), interp.DEFAULT_PATTERNS) == (
    "gate",
    "up",
    "down",
  )


def test_bad_input_one_line_errors():
  _, a, b = _two_models()
  with pytest.raises(errors.ConfigError, match="unknown module 'oproj'"):
    interp.merge(a, b, ("oproj",))
  other = models.Llama(
    models.LlamaConfig(
      d_model=32,
      mlp_hidden=64,
      n_layers=1,
      linear="dense",
      split_projections=True,
    )
  ).init(jax.random.key(0), np.zeros((1, 8), np.int32))
  with pytest.raises(errors.ConfigError, match="differ in structure"):
    interp.merge(a, other, ("o",))
  with pytest.raises(errors.ConfigError, match="differ in structure"):
    interp.delta_norms(a, other)
  wide = models.Llama(
    models.LlamaConfig(
      d_model=32,
      mlp_hidden=96,
      n_layers=2,
      linear="dense",
      split_projections=True,
    )
  ).init(jax.random.key(0), np.zeros((1, 8), np.int32))
  with pytest.raises(errors.ConfigError, match="shape"):
    interp.merge(a, wide, ("o",))
  with pytest.raises(errors.ConfigError, match="match no parameter"):
    interp.select({"dense": {"kernel": 1.0}}, ("o",))
  with pytest.raises(errors.ConfigError, match="mode="):
    interp.destroy(a, ("o",), mode="scramble")
  with pytest.raises(errors.ConfigError, match="seq_len"):
    tasks.addition_examples(np.array([[1, 2]]), 3, 10, scratchpad=True)


def test_freeze_where_is_adam_on_the_trained_leaves_of_each_vmapped_run():
  """Runs with different trained modules share one vmapped program: a trained
  leaf takes Adam's first step -lr g / (|g| + eps) (bias-corrected moments of
  one gradient), a frozen leaf keeps its bits."""
  r = np.random.default_rng(0)
  p = {
    f"block_0/{m}_proj": {"kernel": r.normal(size=(3, 4)).astype(np.float32)}
    for m in ("q", "o")
  }
  g = jax.tree.map(lambda x: 2 * x, p)  # the gradient of sum(x^2)
  masks = [interp.select(p, ("o",)), interp.select(p, ("q", "o"))]
  table = jax.tree.map(lambda *m: jnp.array(m), *masks)
  lr, eps = 0.1, 1e-8
  tx = optax.adam(lr, eps=eps)

  def one_step(run):
    t = interp.freeze_where(tx, jax.tree.map(lambda m: m[run], table))
    u, _ = t.update(g, t.init(p), p)
    return optax.apply_updates(p, u)

  new = jax.jit(jax.vmap(one_step))(jnp.arange(2))
  step = jax.tree.map(lambda x: -lr * x / (np.abs(x) + eps), g)
  for run, mask in enumerate(masks):
    for name, m in mask.items():
      got = new[name]["kernel"][run]
      if m["kernel"]:
        want = p[name]["kernel"] + step[name]["kernel"]
        np.testing.assert_allclose(got, want, atol=2e-6, err_msg=name)
      else:
        np.testing.assert_array_equal(got, p[name]["kernel"], err_msg=name)


def test_delta_report_finds_a_planted_bimodal_o_change_over_seeds():
  """Per seed, o changes by exactly +-10 % (relative change 0.1, two modes:
  Sarle's coefficient near 1) and every other linear by 1 % noise (about
  0.01, one normal mode: 1/3)."""
  r = np.random.default_rng(1)
  modules = ("q", "k", "v", "o", "gate", "up", "down")
  a = {  # two seeds (leading axis) of a two-layer model
    f"block_{i}": {
      f"{m}_proj": {"kernel": r.normal(size=(2, 32, 32))} for m in modules
    }
    for i in range(2)
  }
  a["final_norm"] = {"scale": np.ones((2, 32))}

  def change(path, x):
    name = interp.path_name(path)
    if interp.module_of(name) == "o":
      return x * (1 + 0.1 * r.choice([-1.0, 1.0], size=x.shape))
    if interp.module_of(name) == "norm":
      return x
    return x * (1 + 0.01 * r.normal(size=x.shape))

  b = jax.tree_util.tree_map_with_path(change, a)
  d = interp.delta_report(a, b, modules, focus="o")
  np.testing.assert_allclose(d["relative"]["o"]["seeds"], [0.1, 0.1])
  np.testing.assert_allclose(d["relative"]["q"]["seeds"], [0.01] * 2, rtol=0.1)
  np.testing.assert_allclose(
    d["o_minus_max_other_relative"]["mean"], 0.09, atol=0.002
  )
  assert d["o_rank_relative"] == [1, 1]
  np.testing.assert_allclose(d["bimodality"]["o"]["seeds"], [1, 1], atol=0.02)
  np.testing.assert_allclose(d["bimodality"]["up"]["mean"], 1 / 3, atol=0.03)
  np.testing.assert_allclose(
    d["o_bimodality_minus_uniform"]["mean"], 1 - 5 / 9, atol=0.02
  )
  assert len(d["per_layer"]["o"]["relative"]) == 2


def test_freeze_where_passes_extra_arguments_to_the_inner_transformation():
  # update(..., value=loss) raised "unexpected keyword argument 'value'"
  # for a tx that needs it (reduce_on_plateau), while `freeze` forwarded it.
  params = {"o": jnp.ones(3), "q": jnp.ones(3)}
  mask = {"o": True, "q": False}
  inner = optax.chain(
    optax.sgd(0.1), optax.contrib.reduce_on_plateau(patience=0, factor=0.5)
  )
  tx = interp.freeze_where(inner, mask)
  state, ref_state = tx.init(params), inner.init(params)
  grads = jax.tree.map(jnp.ones_like, params)
  for loss in (1.0, 2.0, 3.0, 4.0):  # a plateau: the inner scale drops
    value = jnp.asarray(loss)
    updates, state = tx.update(grads, state, params, value=value)
    ref, ref_state = inner.update(grads, ref_state, params, value=value)
    np.testing.assert_array_equal(updates["o"], ref["o"])
    np.testing.assert_array_equal(updates["q"], 0.0)
  assert float(ref["o"][0]) > -0.1  # the plateau did reduce the step


def test_a_group_needs_one_of_its_modules_not_all():
  # A model without gate/up/down (an attention-only or GELU-MLP model):
  # merge(a, b, 'all') raised "modules ['gate', 'up', 'down'] match no
  # parameter" although its docstring promises B.
  def tree(scale):
    block = {m: {"kernel": scale * jnp.ones((2, 2))} for m in "qkvo"}
    block["norm"] = {"scale": scale * jnp.ones(2)}
    return {"embed": scale * jnp.ones((3, 2)), "block_0": block}

  a, b = tree(1.0), tree(2.0)
  for x, y in zip(
    jax.tree.leaves(interp.merge(a, b, "all")), jax.tree.leaves(b)
  ):
    np.testing.assert_array_equal(x, y)
  assert sum(jax.tree.leaves(interp.select(a, "attn"))) == 4
  with pytest.raises(errors.ConfigError, match=r"\['mlp'\] match no"):
    interp.select(a, "mlp")
  with pytest.raises(errors.ConfigError, match=r"\['gate'\] match no"):
    interp.select(a, ("o", "gate"))


def test_freeze_where_inside_optax_masked_and_multi_transform():
  # The leaves a wrapper keeps from it arrive as optax.MaskedNode: zeros_like
  # raised "requires ndarray or scalar arguments, got MaskedNode".
  params = {"o": jnp.ones(3), "q": jnp.ones(3), "k": jnp.ones(3)}
  trained = {"o": True, "q": False, "k": True}
  grads = jax.tree.map(jnp.ones_like, params)
  masked = optax.masked(
    interp.freeze_where(optax.sgd(0.1), trained),
    {"o": True, "q": True, "k": False},
  )
  updates, _ = masked.update(grads, masked.init(params), params)
  # o: handed over and trained; q: handed over, frozen; k: not handed over
  # (optax.masked passes its raw gradient through).
  np.testing.assert_array_equal(updates["o"], np.float32(-0.1))
  np.testing.assert_array_equal(updates["q"], 0.0)
  np.testing.assert_array_equal(updates["k"], 1.0)
  multi = optax.multi_transform(
    {"a": interp.freeze_where(optax.sgd(0.1), trained), "b": optax.sgd(1.0)},
    {"o": "a", "q": "a", "k": "b"},
  )
  updates, _ = multi.update(grads, multi.init(params), params)
  np.testing.assert_array_equal(updates["o"], np.float32(-0.1))
  np.testing.assert_array_equal(updates["q"], 0.0)
  np.testing.assert_array_equal(updates["k"], -1.0)
