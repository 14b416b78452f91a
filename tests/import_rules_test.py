"""The import rules of architecture.md, checked over every source file's AST."""

import ast
import os
import pathlib

import pytest

from tests.helpers import REPO_ROOT

_DOMAIN = ("optim", "quant", "flows", "pde", "data", "models")
_THIRD_PARTY_OK = None  # any non-project module


def _project_imports(path):
  """Top-level project modules imported by a file, as dotted names."""
  tree = ast.parse(pathlib.Path(path).read_text(), path)
  names = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      names += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
  return [
    n
    for n in names
    if n.split(".")[0] in ("lib", "experiments", "configs", "pallas_kernels")
  ]


def _all_imports(path):
  tree = ast.parse(pathlib.Path(path).read_text(), path)
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      out += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
      out.append(node.module)
  return out


def _sources(top):
  for root, _, files in os.walk(os.path.join(REPO_ROOT, top)):
    for f in files:
      if f.endswith(".py"):
        path = os.path.join(root, f)
        yield os.path.relpath(path, REPO_ROOT).replace(os.sep, "/"), path


def _allowed(rel: str, imported: str) -> bool:
  top = imported.split(".")[0]
  parts = rel.split("/")
  if parts[0] == "configs":
    return imported.startswith("configs.common") or imported == "configs"
  if parts[0] == "pallas_kernels":
    return top == "pallas_kernels"
  if parts[0] == "lib":
    pkg = parts[1] if len(parts) > 2 else None
    if top != "lib":
      return top == "pallas_kernels" and pkg not in ("core", "train")
    target = imported.split(".")[1] if imported.count(".") >= 1 else None
    if target in (None, pkg, "core"):
      return True
    if pkg == "train":
      return target in ("optim", "data")
    if pkg == "models":  # QuartetDense lives in lib.quant (WORKSPACE.md).
      return target == "quant"
    return False
  if parts[0] == "experiments":
    if top != "experiments":
      return True
    name = imported.split(".")[1] if "." in imported else None
    # Binaries share only private helpers (_cli, _hns) and the claim registry,
    # never each other.
    return name is None or name == "claims" or name.startswith("_")
  return True


@pytest.mark.parametrize(
  "top", ["configs", "pallas_kernels", "lib", "experiments"]
)
def test_import_direction(top):
  bad = []
  for rel, path in _sources(top):
    for imported in _project_imports(path):
      if not _allowed(rel, imported):
        bad.append(f"{rel} imports {imported}")
  assert not bad, "import rules of architecture.md broken:\n" + "\n".join(bad)


def test_configs_and_lib_core_stay_light():
  heavy = {
    "configs": ("jax", "flax", "optax", "numpy"),
    "lib/core": ("flax", "optax", "orbax"),
  }
  bad = []
  for top, banned in heavy.items():
    for rel, path in _sources(top):
      bad += [
        f"{rel} imports {m}"
        for m in _all_imports(path)
        if m.split(".")[0] in banned
      ]
  assert not bad, "\n".join(bad)


def test_only_experiments_define_flags():
  bad = []
  for top in ("lib", "configs", "pallas_kernels"):
    for rel, path in _sources(top):
      text = pathlib.Path(path).read_text()
      if "flags.DEFINE" in text or "FLAGS." in text:
        bad.append(rel)
  assert not bad, f"flags outside experiments/: {bad}"
