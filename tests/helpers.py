"""Shared test helpers: run an experiment binary as a user would; platforms."""

import contextlib
import json
import os
import shutil
import subprocess
import sys

import jax
import pytest

from pallas_kernels.mxfp4.ffi import _loader
from pallas_kernels.mxfp4.ffi import build

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def most_optimizations_disabled(disabled: bool):
  """Sets XLA's `jax_disable_most_optimizations` inside; restores it after."""
  before = jax.config.read("jax_disable_most_optimizations")
  jax.config.update("jax_disable_most_optimizations", disabled)
  try:
    yield
  finally:
    jax.config.update("jax_disable_most_optimizations", before)


# JAX's persistent compilation cache for this test session (both xdist
# workers and the binaries they start): conftest.py points JAX at it.
JAX_CACHE_DIR = os.path.join(
  os.environ.get("TMPDIR", "/tmp"),
  "tests_jax_cache_"
  + (os.environ.get("PYTEST_XDIST_TESTRUNUID") or str(os.getpid())),
)


def run_binary(module: str, *args: str, timeout: float = 300, env=None):
  """Runs `python -m <module> args...` from the repo root; returns CompletedProcess."""
  full_env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
  return subprocess.run(
    [sys.executable, "-m", module, *args],
    cwd=REPO_ROOT,
    capture_output=True,
    text=True,
    timeout=timeout,
    env=full_env,
  )


def free_port() -> int:
  """A free TCP port on the loopback interface."""
  import socket

  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def run_two_processes(module: str, *args: str, env=None, timeout: float = 300):
  """The documented localhost multi-process command: 2 processes x 4 CPU
  devices, `--distributed`. `env` maps a process id to extra variables.

  Returns the two combined stdout/stderr logs; fails unless both exit 0.
  """
  port = free_port()
  procs = []
  for pid in range(2):
    full_env = dict(
      os.environ,
      JAX_PLATFORMS="cpu",
      JAX_NUM_CPU_DEVICES="4",
      JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
      JAX_NUM_PROCESSES="2",
      JAX_PROCESS_ID=str(pid),
      **((env or {}).get(pid, {})),
    )
    procs.append(
      subprocess.Popen(
        [sys.executable, "-m", module, "--distributed", *args],
        cwd=REPO_ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
      )
    )
  logs = []
  try:
    logs = [p.communicate(timeout=timeout)[0] for p in procs]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]
  return logs


# A test parametrized over PLATFORMS runs its body on CPU everywhere (interpret
# mode for Pallas, the CPU FFI library) and once more on the GPU where there is
# one (tests/gpu/run.sh); the `gpu` case skips elsewhere (tests/conftest.py).
PLATFORMS = ("cpu", pytest.param("gpu", marks=pytest.mark.gpu))


def device(platform: str):
  """The first device of `platform` ("cpu" or "gpu")."""
  return jax.devices(platform)[0]


def on(platform: str):
  """Context: uncommitted arrays and jitted calls go to `platform`."""
  return jax.default_device(device(platform))


def put(tree, platform: str):
  """`tree` committed to `platform`, so jitted calls on it run there."""
  return jax.device_put(tree, device(platform))


def report(name: str, **values) -> None:
  """Appends {"test": name, **values} to $TESTS_REPORT (a JSON-lines file)
  when set: the agreement figures tests/gpu/run.sh prints. No-op otherwise."""
  path = os.environ.get("TESTS_REPORT")
  if not path:
    return
  row = {"test": name, **{k: _plain(v) for k, v in values.items()}}
  with open(path, "a") as f:
    f.write(json.dumps(row) + "\n")


def _plain(v):
  try:
    return float(v) if not isinstance(v, (str, bool, int)) else v
  except (TypeError, ValueError):
    return str(v)


def ffi_library(platform: str):
  """The MXFP4 FFI library for `platform`, built if stale (a no-op when
  tests/run.sh or tests/gpu/run.sh already built it); skips without g++.
  A failed build fails every later call at once, without building again."""
  if shutil.which(os.environ.get("CXX", "g++")) is None:
    pytest.skip("g++ not found (the FFI libraries need it)")
  return _build_once(platform)


_BUILT = {}


def _build_once(platform: str):
  if platform not in _BUILT:
    try:
      path = build.build_cpu()
      _BUILT[platform] = build.build_cuda() if platform == "gpu" else path
    except Exception as e:  # noqa: BLE001 (kept, raised again below)
      _BUILT[platform] = e
  if isinstance(_BUILT[platform], Exception):
    raise RuntimeError(f"building the FFI library failed: {_BUILT[platform]}")
  return _BUILT[platform]


def cuda_gemm_path() -> str:
  """`last_cuda_gemm_path()` checked against the GPU's compute capability:
  Hopper and older take dequantise + BF16; returns the path."""
  path = _loader.last_cuda_gemm_path()
  cc = str(getattr(device("gpu"), "compute_capability", "0"))
  if int(cc.split(".")[0]) < 10:
    assert path == "dequant_bf16", (cc, path)
  else:
    assert path in ("fp4", "dequant_bf16"), (cc, path)
  return f"{path}_sm{cc}"


def config_differences(a, b, prefix: str = "") -> dict:
  """{dotted key: (value in a, value in b)} where two ConfigDicts differ."""
  a, b = a.to_dict() if prefix == "" else a, b.to_dict() if prefix == "" else b
  out = {}
  for key in sorted(set(a) | set(b)):
    va, vb = a.get(key), b.get(key)
    if isinstance(va, dict) and isinstance(vb, dict):
      out.update(config_differences(va, vb, f"{prefix}{key}."))
    elif va != vb:
      out[f"{prefix}{key}"] = (va, vb)
  return out


def check_claim_keys(experiment: str, workdir, absent=None) -> None:
  """Fails unless every registered claim of `experiment` finds each key the
  report reads (`report.claim_keys`: metric, interval, comparator_diverged,
  ours_diverged, samples) in the smoke run's results.json under `workdir`,
  read as
  `report.absent_keys` reads it: a renamed key fails here rather than turning
  a claim "missing" in REPORT.md.

  `absent` names the keys this test's run cannot write (e.g. a setting only
  the quick run has), with why: {claim name: why} for all of a claim's keys,
  {claim name: {role: why}} for some. They must be absent (a stale entry
  fails too), so every key not checked here is named with its reason.
  claims_report_test.py fails for any experiment with claims whose smoke test
  does not call this.
  """
  from experiments.claims import all_claims
  from experiments.claims import report as report_lib

  with open(os.path.join(str(workdir), "results.json")) as f:
    results = json.load(f)
  absent = absent or {}
  claims = [c for c in all_claims() if c.experiment == experiment]
  assert claims, f"no registered claim runs {experiment!r}"
  unknown = set(absent) - {c.name for c in claims}
  assert not unknown, f"absent names no claim of {experiment}: {unknown}"
  problems = []
  for c in claims:
    missing = report_lib.absent_keys(c, results)
    why = absent.get(c.name, {})
    expected = set(report_lib.claim_keys(c) if isinstance(why, str) else why)
    for role, key in missing.items():
      if role not in expected:
        problems.append(f"{c.name}: no {role} `{key}`")
    for role in expected - set(missing):
      problems.append(f"{c.name}: {role} is listed absent but present")
  # A claim's count_key must set its sample count: the report's commands
  # that would settle it change that key (report.settle_commands).
  counted = [c for c in claims if c.count_key and c.name not in absent]
  if counted:
    with open(os.path.join(str(workdir), "config.json")) as f:
      config = json.load(f)
  for c in counted:
    for samples in report_lib.sample_lists(results, c.samples):
      why = report_lib.count_mismatch(c, config, len(samples))
      if why is not None:
        problems.append(f"{c.name}: {why}")
  assert not problems, f"{experiment} smoke results.json: " + "; ".join(
    problems
  )
