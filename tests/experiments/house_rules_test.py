"""House rules every binary follows, checked over experiments/*.py's AST.

- Random keys come from the config's seed through named streams
  (`lib.core.rng.stream`): no key built from a literal, `key(3)`,
  `PRNGKey(0)` or `key(config.seed + 11)` (issue 33).
- Every figure goes through `lib.train.save_figure` (process 0 only, any
  epath workdir), and one module, experiments/_plot.py, sets the backend.
"""

import ast
import glob
import os

import pytest

from tests.helpers import REPO_ROOT

_KEY_MAKERS = ("key", "PRNGKey", "root_key")
_PLOT_MODULE = "experiments/_plot.py"


def _binaries():
  paths = sorted(glob.glob(os.path.join(REPO_ROOT, "experiments", "*.py")))
  return [os.path.relpath(p, REPO_ROOT).replace(os.sep, "/") for p in paths]


def _called_name(node: ast.Call):
  f = node.func
  if isinstance(f, ast.Attribute):
    return f.attr
  if isinstance(f, ast.Name):
    return f.id
  return None


def _has_number(node) -> bool:
  return any(
    isinstance(n, ast.Constant)
    and isinstance(n.value, (int, float))
    and not isinstance(n.value, bool)
    for n in ast.walk(node)
  )


def literal_keys(source: str, filename: str = "<src>") -> list:
  """`line: call` for each key made from a number written in the source."""
  out = []
  for node in ast.walk(ast.parse(source, filename)):
    if (
      isinstance(node, ast.Call)
      and _called_name(node) in _KEY_MAKERS
      and any(_has_number(a) for a in list(node.args) + node.keywords)
    ):
      out.append(f"{node.lineno}: {ast.unparse(node)}")
  return out


def figure_bypasses(source: str, filename: str = "<src>") -> list:
  """`line: call` for each `matplotlib.use(...)` or direct `*.savefig(...)`."""
  out = []
  for node in ast.walk(ast.parse(source, filename)):
    if not isinstance(node, ast.Call):
      continue
    f = node.func
    direct_save = isinstance(f, ast.Attribute) and f.attr == "savefig"
    backend = (
      isinstance(f, ast.Attribute)
      and f.attr == "use"
      and isinstance(f.value, ast.Name)
      and f.value.id == "matplotlib"
    )
    if direct_save or backend:
      out.append(f"{node.lineno}: {ast.unparse(node)}")
  return out


@pytest.mark.parametrize(
  "source, flagged",
  [
    ("jax.random.key(3)", True),
    ("jax.random.PRNGKey(0)", True),
    ("random.key(config.train.seed + 11)", True),
    ("jax.random.key(1000 + i)", True),
    ("rng.root_key(0)", True),
    ("jax.random.key(config.seed)", False),
    ("rng.stream(rng.root_key(config.seed), 'noise', 3)", False),
  ],
)
def test_literal_key_detector(source, flagged):
  assert bool(literal_keys(source)) == flagged


@pytest.mark.parametrize(
  "source, flagged",
  [
    ("fig.savefig(path, dpi=120)", True),
    ("matplotlib.use('Agg')", True),
    ("train_lib.save_figure(fig, path, dpi=120)", False),
  ],
)
def test_figure_detector(source, flagged):
  assert bool(figure_bypasses(source)) == flagged


@pytest.mark.parametrize("rel", _binaries())
def test_no_literal_prng_keys(rel):
  with open(os.path.join(REPO_ROOT, rel)) as f:
    found = literal_keys(f.read(), rel)
  assert not found, f"{rel}: keys from literals, use rng.stream: {found}"


@pytest.mark.parametrize("rel", _binaries())
def test_figures_through_save_figure(rel):
  if rel == _PLOT_MODULE:
    return
  with open(os.path.join(REPO_ROOT, rel)) as f:
    found = figure_bypasses(f.read(), rel)
  assert not found, (
    f"{rel}: use lib.train.save_figure and experiments._plot: {found}"
  )


def test_one_place_sets_the_backend():
  with open(os.path.join(REPO_ROOT, _PLOT_MODULE)) as f:
    found = figure_bypasses(f.read(), _PLOT_MODULE)
  assert [c.split(": ", 1)[1] for c in found] == ["matplotlib.use('Agg')"]
