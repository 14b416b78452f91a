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


# The CLI checks the config before any workdir write (issue 33): every binary
# hands its check to `_cli.main`, and its `run` checks before `prepare_run`.
_NO_CHECK = ("experiments/reproduce.py",)  # a driver: its runs check themselves


def _runnable_binaries():
  out = []
  for path in _binaries():
    with open(os.path.join(REPO_ROOT, path)) as f:
      source = f.read()
    binary = not os.path.basename(path).startswith("_")
    if binary and "_cli.main(" in source and path not in _NO_CHECK:
      out.append((path, ast.parse(source)))
  return out


def _first_line(fn, name):
  lines = [
    n.lineno
    for n in ast.walk(fn)
    if isinstance(n, ast.Call) and _called_name(n) == name
  ]
  return min(lines) if lines else None


@pytest.mark.parametrize("path", [p for p, _ in _runnable_binaries()])
def test_binary_checks_its_config_before_any_write(path):
  tree = dict(_runnable_binaries())[path]
  mains = [
    n
    for n in ast.walk(tree)
    if isinstance(n, ast.Call)
    and _called_name(n) == "main"
    and isinstance(n.func, ast.Attribute)
    and getattr(n.func.value, "id", None) == "_cli"
  ]
  assert len(mains) == 1, f"{path}: one _cli.main(...) call"
  check = {k.arg: k.value for k in mains[0].keywords}.get("check")
  assert isinstance(check, ast.Name) and check.id == "check_config", (
    f"{path}: _cli.main(run, check=check_config)"
  )
  fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
  assert "check_config" in fns, f"{path}: defines check_config(config)"
  # run(), or the _run() it wraps: check_config comes before prepare_run.
  for name in ("run", "_run"):
    if name in fns and _first_line(fns[name], "prepare_run") is not None:
      first_check = _first_line(fns[name], "check_config")
      assert first_check is not None, f"{path}: {name}() calls check_config"
      assert first_check < _first_line(fns[name], "prepare_run"), (
        f"{path}: {name}() writes config.json before check_config"
      )


# Every variant a config ships passes its own binary's check: a variant that
# only its `,smoke` form ever ran could carry a value the full run refuses
# (the gpu variant of sfn had finetune.steps 1500 with log_every 200).
_VARIANTS = ("", "quick", "gpu", "quick,smoke", "gpu,smoke")


@pytest.mark.parametrize("path", [p for p, _ in _runnable_binaries()])
def test_every_variant_passes_its_own_check(path):
  import importlib  # pylint: disable=g-import-not-at-top

  name = os.path.basename(path)[:-3]
  configs = importlib.import_module(f"configs.{name}")
  binary = importlib.import_module(f"experiments.{name}")
  checked = 0
  for arg in _VARIANTS:
    try:
      config = configs.get_config(arg)
    except ValueError as e:
      if "unknown variant" in str(e):
        continue
      raise
    binary.check_config(config)
    checked += 1
  assert checked >= 2, f"{path}: fewer than two variants checked"
