"""The four stethoscopes of "Who Reasons in the Large Language Models?".

Shao & Wu (NeurIPS 2025, arXiv 2505.20993) compare a base model A with B, A
fine-tuned for reasoning, module by module, and argue that reasoning lives
mainly in `o_proj`, the attention output projection:

- Delta: per module and layer, the l2 change |w(B) - w(A)| and the histogram
  of relative changes (w(B) - w(A)) / w(A); the paper finds o_proj's change
  large and its relative-change histogram bimodal.
- Merge: A with chosen modules copied from B. Norms are not merged unless
  asked (the authors' rebuttal).
- Freeze: fine-tune A with only chosen modules trainable.
- Destruction: zero or perturb a module and watch what breaks.

Every tool is a pure function of parameter trees. Modules are chosen by name
over the flax parameter tree (`select`), with patterns that match Llama/Qwen
style names (`q_proj`, `o_proj`, `gate_proj`, ...), common flax names
(`query`, `out`, ...) and ours; pass `patterns=` for any other naming. A
leaf's layer is the first integer of a path part such as `block_3` or
`layers_3` (`layer_of`).

The authors released no code; these tools follow the paper's description
(spec: extended_papers.md section 8).
"""

import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from operator import itemgetter

import jax
import jax.numpy as jnp
import numpy as np
import optax

from lib.core import errors
from lib.core import stats

# Module name -> regular expression searched in the leaf's path
# ("block_0/o_proj/kernel"). The default set covers Llama/Qwen/Mistral names,
# flax's MultiHeadDotProductAttention (query/key/value/out) and ours.
DEFAULT_PATTERNS: dict[str, str] = {
  "q": r"(^|/)(q_proj|query|wq|q)(/|$)",
  "k": r"(^|/)(k_proj|key|wk|k)(/|$)",
  "v": r"(^|/)(v_proj|value|wv|v)(/|$)",
  "o": r"(^|/)(o_proj|out_proj|out|wo|o)(/|$)",
  "gate": r"(^|/)(gate_proj|w1|gate)(/|$)",
  "up": r"(^|/)(up_proj|w3|up)(/|$)",
  "down": r"(^|/)(down_proj|w2|down)(/|$)",
  "norm": r"(^|/)[^/]*(norm|ln)[^/]*(/|$)",
  "embed": r"(^|/)(embed|embedding|embed_tokens|wte|Embed_\d+)(/|$)",
  "head": r"(^|/)(lm_head|head|unembed)(/|$)",
}
# Shorthands of the paper's groups.
GROUPS: dict[str, tuple[str, ...]] = {
  "attn": ("q", "k", "v", "o"),
  "qkv": ("q", "k", "v"),
  "mlp": ("gate", "up", "down"),
  "linears": ("q", "k", "v", "o", "gate", "up", "down"),
  "all": ("q", "k", "v", "o", "gate", "up", "down", "norm", "embed", "head"),
}


def path_name(path) -> str:
  """'block_0/o_proj/kernel' for a jax tree path."""
  parts = []
  for p in path:
    for attr in ("key", "name", "idx"):
      if hasattr(p, attr):
        parts.append(str(getattr(p, attr)))
        break
    else:
      parts.append(str(p))
  return "/".join(parts)


def layer_of(name: str) -> int | None:
  """The layer index of a leaf path ('block_3/...' -> 3), None outside layers."""
  for part in name.split("/"):
    m = re.fullmatch(r"(?:block|blocks|layer|layers|h|Block)_?(\d+)", part)
    if m:
      return int(m.group(1))
  return None


def expand(modules: Iterable[str], patterns: Mapping[str, str]) -> tuple:
  """Module names with groups ('attn', 'mlp', ...) expanded; unknown -> error."""
  if isinstance(modules, str):
    modules = (modules,)
  out = []
  for m in modules:
    if m in patterns:
      out.append(m)
    elif m in GROUPS:
      out.extend(GROUPS[m])
    else:
      raise errors.ConfigError(
        f"unknown module {m!r}: known modules {sorted(patterns)}, "
        f"groups {sorted(GROUPS)}"
      )
  return tuple(dict.fromkeys(out))


def module_of(name: str, patterns: Mapping[str, str] = DEFAULT_PATTERNS):
  """The first module whose pattern matches the leaf path, or None."""
  for module, pattern in patterns.items():
    if re.search(pattern, name):
      return module
  return None


def select(
  params,
  modules: Iterable[str],
  *,
  layers: Sequence[int] | None = None,
  patterns: Mapping[str, str] = DEFAULT_PATTERNS,
):
  """A tree of bools like `params`: True on the leaves of `modules`.

  Args:
    params: any parameter tree (flax variables or their 'params').
    modules: names of `patterns` or groups ('attn', 'qkv', 'mlp', 'linears',
      'all'); an empty sequence selects nothing.
    layers: only these layer indices (None: every layer, and leaves outside
      layers such as the embedding).
    patterns: module name -> regex searched in 'block_0/o_proj/kernel'.

  Raises:
    ConfigError: an unknown module name, a named module that matches no
      leaf of `params`, or a group none of whose modules does (a model
      without, say, gate/up/down still takes 'all').
  """
  wanted = expand(modules, patterns)
  found = set()

  def pick(path, _):
    name = path_name(path)
    module = module_of(name, patterns)
    if module not in wanted:
      return False
    if layers is not None and layer_of(name) not in set(layers):
      return False
    found.add(module)
    return True

  mask = jax.tree_util.tree_map_with_path(pick, params)
  requested = (modules,) if isinstance(modules, str) else tuple(modules)
  missing = [
    m
    for m in requested
    if not found.intersection((m,) if m in patterns else GROUPS[m])
  ]
  if missing:
    raise errors.ConfigError(
      f"modules {missing} match no parameter"
      + (f" in layers {list(layers)}" if layers is not None else "")
      + "; pass patterns= for this model's names"
    )
  return mask


def check_same_structure(a, b) -> None:
  """ConfigError unless a and b have the same tree structure and shapes."""
  ta, tb = jax.tree.structure(a), jax.tree.structure(b)
  if ta != tb:
    raise errors.ConfigError(
      "the two parameter trees differ in structure: "
      f"{len(jax.tree.leaves(a))} vs {len(jax.tree.leaves(b))} leaves "
      "(compare two checkpoints of the same model)"
    )
  for (path, x), y in zip(
    jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)
  ):
    if np.shape(x) != np.shape(y):
      raise errors.ConfigError(
        f"parameter {path_name(path)} has shape {np.shape(x)} in A but "
        f"{np.shape(y)} in B"
      )


# ----------------------------------------------------------------------------
# Merge, Freeze, Destruction.
# ----------------------------------------------------------------------------


def merge(
  a,
  b,
  modules: Iterable[str],
  *,
  layers: Sequence[int] | None = None,
  patterns: Mapping[str, str] = DEFAULT_PATTERNS,
):
  """A with the leaves of `modules` (in `layers`) copied from B.

  Norms are copied only when 'norm' is named (the paper keeps A's norms).
  merge(a, b, ()) is A, and merge(a, b, 'all') is B bit for bit when every
  leaf's name matches a pattern (leaves that match none stay A's).
  """
  check_same_structure(a, b)
  modules = tuple(modules) if not isinstance(modules, str) else (modules,)
  if not modules:
    return a
  mask = select(a, modules, layers=layers, patterns=patterns)
  return jax.tree.map(lambda m, x, y: y if m else x, mask, a, b)


def freeze(
  tx: optax.GradientTransformation,
  params,
  trainable: Iterable[str],
  *,
  layers: Sequence[int] | None = None,
  patterns: Mapping[str, str] = DEFAULT_PATTERNS,
) -> optax.GradientTransformation:
  """`tx` on the `trainable` modules; zero updates (bit-identical) elsewhere.

  Built with `optax.multi_transform`, so `tx`'s state exists only for the
  trained leaves and anything else in `tx` (weight decay, clipping) never
  touches a frozen one. (`optax.masked` alone would pass the raw gradient
  through on the unmasked leaves.)
  """
  mask = select(params, trainable, layers=layers, patterns=patterns)
  labels = jax.tree.map(lambda m: "train" if m else "freeze", mask)
  return optax.multi_transform(
    {"train": tx, "freeze": optax.set_to_zero()}, labels
  )


def freeze_where(
  tx: optax.GradientTransformation, mask
) -> optax.GradientTransformation:
  """`tx` with its updates zeroed (parameters bit-identical) where not `mask`.

  The Freeze stethoscope for a stack of runs that train different modules:
  `mask` is a tree of bools like the parameters and may be traced (indexed
  by a vmapped run's setting), and `tx`'s state exists for every leaf, so
  runs with different trainable modules share one state shape and one
  vmapped program. For a per-leaf `tx` (Adam, AdamW, SGD: no global-norm
  clipping) the trained leaves move exactly as under `freeze`, whose state
  covers only them; `freeze` is the right tool for one run. Extra arguments
  of `update` (e.g. `value=` for `optax.contrib.reduce_on_plateau`) reach
  `tx`.
  """
  inner = optax.with_extra_args_support(tx)

  def update(updates, state, params=None, **extra_args):
    updates, state = inner.update(updates, state, params, **extra_args)

    def zero(m, u):
      # Inside optax.masked / multi_transform the leaves not handed to this
      # transformation arrive as MaskedNode placeholders: pass them on.
      if isinstance(u, optax.MaskedNode):
        return u
      return jnp.where(m, u, jnp.zeros_like(u))

    return jax.tree.map(zero, mask, updates), state

  return optax.GradientTransformationExtraArgs(inner.init, update)


def destroy(
  params,
  modules: Iterable[str],
  *,
  layers: Sequence[int] | None = None,
  mode: str = "zero",
  scale: float = 1.0,
  key: jax.Array | None = None,
  patterns: Mapping[str, str] = DEFAULT_PATTERNS,
):
  """The chosen module(s) zeroed ('zero') or perturbed ('noise').

  'noise' adds scale * std(w) * N(0, 1) to each selected leaf (needs `key`).
  """
  errors.check(
    mode in ("zero", "noise"),
    errors.ConfigError,
    f"mode={mode!r}: 'zero' or 'noise'",
  )
  mask = select(params, modules, layers=layers, patterns=patterns)
  if mode == "zero":
    # np.zeros: no device program per leaf shape (works on tracers too).
    return jax.tree.map(
      lambda m, x: np.zeros(np.shape(x), x.dtype) if m else x, mask, params
    )
  errors.check(key is not None, errors.ConfigError, "mode='noise' needs a key")
  leaves, treedef = jax.tree.flatten(params)
  keys = jax.random.split(key, len(leaves))
  masks = jax.tree.leaves(mask)
  out = [
    x + scale * jnp.std(x) * jax.random.normal(k, x.shape, x.dtype) if m else x
    for m, x, k in zip(masks, leaves, keys)
  ]
  return jax.tree.unflatten(treedef, out)


# ----------------------------------------------------------------------------
# Delta.
# ----------------------------------------------------------------------------


def delta_norms(
  a, b, *, patterns: Mapping[str, str] = DEFAULT_PATTERNS
) -> dict:
  """Per module and layer: |w(B) - w(A)|_2, |w(A)|_2 and the relative change.

  Returns {module: {"layers": [l...], "delta": [...], "norm_a": [...],
  "relative": [...]}} with Frobenius norms over all of a module's leaves in
  that layer (a layer of None, e.g. the embedding, is reported as -1), and
  {module: totals} under "_total" (all layers together).
  """
  check_same_structure(a, b)
  acc: dict = {}
  for (path, x), y in zip(
    jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)
  ):
    name = path_name(path)
    module = module_of(name, patterns)
    if module is None:
      continue
    layer = layer_of(name)
    layer = -1 if layer is None else layer
    x64 = np.asarray(x, np.float64)
    d = np.asarray(y, np.float64) - x64
    slot = acc.setdefault(module, {}).setdefault(layer, [0.0, 0.0])
    slot[0] += float(np.sum(d * d))
    slot[1] += float(np.sum(x64 * x64))
  out = {}
  total = {}
  for module, by_layer in acc.items():
    ls = sorted(by_layer)
    dd = [by_layer[i][0] for i in ls]
    aa = [by_layer[i][1] for i in ls]
    out[module] = {
      "layers": ls,
      "delta": [float(np.sqrt(v)) for v in dd],
      "norm_a": [float(np.sqrt(v)) for v in aa],
      "relative": [
        float(np.sqrt(u / v)) if v > 0 else float("inf") for u, v in zip(dd, aa)
      ],
    }
    total[module] = {
      "delta": float(np.sqrt(sum(dd))),
      "relative": float(np.sqrt(sum(dd) / sum(aa)))
      if sum(aa)
      else float("inf"),
    }
  out["_total"] = total
  return out


def relative_changes(
  a,
  b,
  module: str,
  *,
  layers: Sequence[int] | None = None,
  eps: float = 1e-8,
  patterns: Mapping[str, str] = DEFAULT_PATTERNS,
) -> np.ndarray:
  """(w(B) - w(A)) / w(A) over every entry of `module` with |w(A)| > eps."""
  check_same_structure(a, b)
  mask = select(a, (module,), layers=layers, patterns=patterns)
  chunks = []
  for m, x, y in zip(
    jax.tree.leaves(mask), jax.tree.leaves(a), jax.tree.leaves(b)
  ):
    if not m:
      continue
    x = np.asarray(x, np.float64).ravel()
    y = np.asarray(y, np.float64).ravel()
    keep = np.abs(x) > eps
    chunks.append((y[keep] - x[keep]) / x[keep])
  return np.concatenate(chunks) if chunks else np.zeros((0,))


def trim_tails(x, fraction: float) -> np.ndarray:
  """The values of `x` between its `fraction` and 1 - `fraction` quantiles
  (both kept); `fraction` 0 keeps every value."""
  x = np.asarray(x, np.float64).ravel()
  errors.check(
    0.0 <= fraction < 0.5,
    errors.ConfigError,
    f"the trimmed fraction per tail must be in [0, 0.5), got {fraction}",
  )
  if fraction == 0 or x.size == 0:
    return x
  lo, hi = np.quantile(x, [fraction, 1.0 - fraction])
  return x[(x >= lo) & (x <= hi)]


def bimodality_coefficient(x, trim: float = 0.0) -> float:
  """Sarle's sample bimodality coefficient (skew^2 + 1) / (excess kurtosis + k).

  k = 3 (n - 1)^2 / ((n - 2)(n - 3)). A uniform distribution gives 5/9; larger
  values suggest bimodality (two separated modes approach 1), a normal 1/3.
  `trim`: the fraction of values dropped from each tail first (`trim_tails`).
  Relative changes (w_B - w_A) / w_A have heavy tails where w_A is near 0, and
  a few of those extremes set the raw coefficient (on pure noise it ranges
  over 0-0.4 from draw to draw); trimming 1 % a side reads the histogram's
  shape instead.
  """
  x = trim_tails(x, trim)
  n = x.size
  errors.check(
    n > 3, errors.ConfigError, f"bimodality needs > 3 values, got {n}"
  )
  c = x - x.mean()
  m2 = np.mean(c**2)
  if m2 == 0:
    return float("nan")
  g = np.mean(c**3) / m2**1.5
  kurt = np.mean(c**4) / m2**2 - 3.0
  # Bias-corrected sample skewness and excess kurtosis (SAS's formulas).
  g1 = g * np.sqrt(n * (n - 1)) / (n - 2)
  g2 = ((n + 1) * kurt + 6) * (n - 1) / ((n - 2) * (n - 3))
  return float((g1**2 + 1) / (g2 + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3))))


def delta_report(
  a, b, modules: Sequence[str], focus: str = "o", trim: float = 0.0
) -> dict:
  """Delta over independent seeds: a and b stack S runs on their leading axis.

  Per module: seed bands (`stats.band`) of the relative change
  |w(B) - w(A)| / |w(A)| and of |w(B) - w(A)| over all layers, of the
  bimodality coefficient of the relative-change histogram (`trim` of each
  tail dropped first, `bimodality_coefficient`), and the seed mean per
  layer; for `focus` (the paper's o_proj): its relative change minus the
  largest other module's and minus the second largest (> 0: `focus` ranks
  first or second, the paper's finding), its rank per seed (1 = largest),
  and its bimodality coefficient minus a uniform histogram's 5/9.
  """
  a, b = jax.tree.map(np.asarray, a), jax.tree.map(np.asarray, b)
  seeds = jax.tree.leaves(a)[0].shape[0]
  norms, bcs = [], []
  for s in range(seeds):
    pa, pb = (jax.tree.map(itemgetter(s), t) for t in (a, b))
    norms.append(delta_norms(pa, pb))
    bcs.append(
      [
        bimodality_coefficient(relative_changes(pa, pb, m), trim)
        for m in modules
      ]
    )
  total = lambda key: np.array(
    [[n["_total"][m][key] for m in modules] for n in norms]
  )
  rel, bcs, i = total("relative"), np.array(bcs), list(modules).index(focus)
  out = {"relative": {}, "delta": {}, "bimodality": {}, "per_layer": {}}
  for j, m in enumerate(modules):
    out["relative"][m] = stats.band(rel[:, j])
    out["delta"][m] = stats.band(total("delta")[:, j])
    out["bimodality"][m] = stats.band(bcs[:, j])
    out["per_layer"][m] = {
      k: np.mean([n[m][k] for n in norms], 0).tolist()
      for k in ("delta", "relative")
    }
  others = np.delete(rel, i, axis=1)
  out[f"{focus}_minus_max_other_relative"] = stats.band(
    rel[:, i] - others.max(1)
  )
  if others.shape[1] > 1:
    out[f"{focus}_minus_second_other_relative"] = stats.band(
      rel[:, i] - np.sort(others, axis=1)[:, -2]
    )
  out[f"{focus}_rank_relative"] = [int(1 + np.sum(r > r[i])) for r in rel]
  out[f"{focus}_bimodality_minus_uniform"] = stats.band(bcs[:, i] - 5.0 / 9.0)
  return out
