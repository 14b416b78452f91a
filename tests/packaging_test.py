"""Packaging: `import lib` from any directory once installed, the notebooks run as plain
Python and are committed clean, requirements are pinned and split, and CI runs exactly
the README's test command."""

import importlib.metadata
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIST = "neurips25-jax"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# name==version, optionally with an environment marker (`; sys_platform ...`).
PIN = re.compile(
  r"^[A-Za-z0-9_.-]+(\[[A-Za-z0-9_,.-]+\])?==[0-9][0-9A-Za-z.]*"
  r"(\s*;\s*[A-Za-z_]+\s*==\s*\"[^\"]+\"(\s+and\s+[A-Za-z_]+\s*==\s*\"[^\"]+\")*)?$"
)
DEV_TOOLS = ("pytest", "pytest-xdist", "ruff")


def _installed():
  """The installed distribution, or None."""
  try:
    return importlib.metadata.distribution(DIST)
  except importlib.metadata.PackageNotFoundError:
    return None


def _run_python(code: str, cwd: pathlib.Path, **env):
  """Runs `python -c code` in a fresh interpreter from `cwd`, on the CPU.

  PYTHONPATH is dropped (so the repository is not on the path) unless given.
  """
  base = {
    k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "XLA_FLAGS")
  }
  return subprocess.run(
    [sys.executable, "-c", code],
    cwd=cwd,
    env={**base, "JAX_PLATFORMS": "cpu", **env},
    capture_output=True,
    text=True,
    timeout=300,
  )


def test_import_from_any_directory(tmp_path):
  """`cd /tmp && python -c "import lib.quant, lib.flows, lib.optim"` works."""
  dist = _installed()
  if dist is None:
    pytest.skip(
      f"{DIST} is not installed here: run `pip install -e .` (CI does)"
    )
  proc = _run_python(
    "import lib.quant, lib.flows, lib.optim, lib.train, configs, experiments\n"
    "import pallas_kernels.mxfp4.ffi._paths as p\n"
    "import lib; print(lib.__file__); print(p.SRC_DIR)",
    tmp_path,
  )
  assert proc.returncode == 0, proc.stderr[-3000:]
  lib_file, ffi_dir = map(pathlib.Path, proc.stdout.split())
  assert not lib_file.is_relative_to(tmp_path)
  # The FFI sources travel with the package (package data), so building works.
  assert (ffi_dir / "mxfp4_cpu.cc").is_file(), ffi_dir
  url = json.loads(dist.read_text("direct_url.json") or "{}")
  if url.get("dir_info", {}).get("editable") and url["url"] == ROOT.as_uri():
    assert lib_file == ROOT / "lib" / "__init__.py"


def _code_cells(path: pathlib.Path) -> list[str]:
  cells = json.loads(path.read_text())["cells"]
  return [
    c["source"] if isinstance(c["source"], str) else "".join(c["source"])
    for c in cells
    if c["cell_type"] == "code"
  ]


def test_there_is_a_quickstart_notebook():
  assert ROOT / "notebooks" / "quickstart.ipynb" in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path):
  cells = json.loads(path.read_text())["cells"]
  for i, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
    assert cell.get("outputs", []) == [], (
      f"{path.name}: code cell {i} has outputs"
    )
    assert cell.get("execution_count") is None, (
      f"{path.name}: code cell {i} has an execution count (clear it)"
    )
  for i, source in enumerate(_code_cells(path)):
    magics = [line for line in source.splitlines() if line[:1] in ("%", "!")]
    assert not magics, f"{path.name}: cell {i} is not plain Python: {magics}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_outside_the_repository(path, tmp_path):
  """The code cells, concatenated, run from a temporary directory (no Jupyter).

  Without an install the repository goes on PYTHONPATH, so that the notebook is
  still tested; test_import_from_any_directory covers the install.
  """
  env = {"TMPDIR": str(tmp_path), "MPLBACKEND": "Agg"}
  if _installed() is None:
    env["PYTHONPATH"] = str(ROOT)
  proc = _run_python("\n\n".join(_code_cells(path)), tmp_path, **env)
  assert proc.returncode == 0, (
    f"{path.name} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
  )


def _requirements(name: str) -> list[str]:
  lines = (ROOT / name).read_text().splitlines()
  return [
    line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()
  ]


def _name(requirement: str) -> str:
  return re.split(r"[\[=<>]", requirement)[0].lower()


def test_requirements_are_pinned_and_split():
  runtime = _requirements("requirements.txt")
  dev = _requirements("requirements-dev.txt")
  for req in runtime + dev:
    assert PIN.match(req), f"not pinned as name==version: {req!r}"
  runtime_names = {_name(r) for r in runtime}
  assert {"jax", "jaxlib", "flax", "optax", "chex"} <= runtime_names
  assert not runtime_names & {_name(r) for r in dev}
  assert not runtime_names & set(DEV_TOOLS), "dev tools belong in -dev"
  assert set(DEV_TOOLS) <= {_name(r) for r in dev}


def test_ci_runs_the_readme_test_command():
  readme = (ROOT / "README.md").read_text()
  blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
  commands = [b.strip() for b in blocks if "tests/run.sh" in b]
  assert len(commands) == 1, commands
  assert "requirements-dev.txt" in commands[0] and "-e ." in commands[0]
  ci = (ROOT / ".ci" / "run").read_text().splitlines()
  assert commands[0] in [line.strip() for line in ci], ".ci/run != README"
