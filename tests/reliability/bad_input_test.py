"""A table of bad inputs run as a user would, and what each must give.

CASES run the binaries through the command line: each must end with exit
code 1, a last stderr line `error: ...` naming the problem, and no Python
traceback anywhere in stderr. The inputs: config keys and values, data
files, method names, library calls reached from a binary (periodic grid,
FFI library), the multi-process environment, and workdirs whose checkpoints
are damaged or belong to another model.

IN_PROCESS (issue 32) runs what a binary runs after its flags are parsed
(`_cli.execute`: training sections, workdir lock, `run`) or the library call
a binary reaches, in this process (no start-up or compilation per case):
users' data files (disaggregated_eval's CSV, compact_memory's feature
files), damaged run files (metrics.jsonl), a full disk, figures, config
values. Each case expects a one-line error (an exception the CLI prints as
`error: <one line>` with exit code 1) matching a pattern, or a correct result
passing a check; `outcome` classifies what happened, so a failure says
whether the input gave a traceback or a silently wrong result.
`test_the_table_counts_every_kind` counts the cases per kind and outcome.
"""

import collections
import os
import pathlib
import re
import shutil
import socket

import numpy as np
import pytest

from lib.core import errors
from tests.helpers import run_binary
from tests.reliability.conftest import SIMPLICITY_BIAS
from tests.reliability.conftest import SIMPLICITY_BIAS_ARGS

SB = "experiments.simplicity_bias"
SB_SMOKE = (
  "--config=configs/simplicity_bias.py:quick,smoke",
  "--config.spurious.enabled=false",
)
CDF = "experiments.cdflow_density"
CDF_SMOKE = ("--config=configs/cdflow_density.py:quick,smoke",)
QLLM = "experiments.quartet_llm"
QLLM_SMOKE = ("--config=configs/quartet_llm.py:quick,smoke",)
HNS = "experiments.bench_hns"
HNS_SMOKE = ("--config=configs/bench_hns.py:quick,smoke",)
MX = "experiments.bench_mxfp4"
MX_SMOKE = ("--config=configs/bench_mxfp4.py:quick,smoke",)
ADV = "experiments.hns_advection"
ADV_SMOKE = ("--config=configs/hns_advection.py:quick,smoke",)


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _dist_env(pid: int) -> dict:
  return {
    "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{_free_port()}",
    "JAX_NUM_PROCESSES": "2",
    "JAX_PROCESS_ID": str(pid),
  }


def _files(tmp_path) -> dict:
  """Data files for the table: token and image arrays with bad values."""
  nan_tokens = np.arange(100, dtype=np.float32) % 200
  nan_tokens[7] = np.nan
  frac_tokens = np.arange(100, dtype=np.float64) % 200
  frac_tokens[3] = 2.5
  nan_images = np.zeros((40, 8, 8), np.float32)
  nan_images[1, 2, 3] = np.nan
  files = {
    "nan_tokens": nan_tokens,
    "frac_tokens": frac_tokens,
    "nan_images": nan_images,
  }
  paths = {}
  for name, arr in files.items():
    paths[name] = str(tmp_path / f"{name}.npy")
    np.save(paths[name], arr)
  paths["empty_dir"] = str(tmp_path / "empty")
  os.makedirs(paths["empty_dir"], exist_ok=True)
  return paths


# (id, module, args, env, pattern the last line must match after "error: ")
CASES = [
  (
    "extra_positional_argument",
    SB,
    ("adam",),
    {},
    r"unexpected positional argument\(s\) \['adam'\]",
  ),
  ("unknown_key", SB, ("--config.train.lerning_rate=1",), {}, "lerning_rate"),
  (
    "negative_steps",
    SB,
    ("--config.train.num_steps=-1",),
    {},
    r"num_steps=-1 must be >= 0",
  ),
  (
    "zero_batch_size",
    CDF,
    ("--config.optim.batch_size=0",),
    {},
    r"optim\.batch_size=0 must be a positive integer",
  ),
  (
    "bad_optimizer_name",
    SB,
    ("--config.optimizers=('gd','adamw')",),
    {},
    r"config\.optimizers holds 'adamw'",
  ),
  (
    "negative_learning_rate",
    SB,
    ("--config.optim.adam_lr=-0.1",),
    {},
    r"config\.optim\.adam_lr=-0\.1 must be a finite number > 0",
  ),
  (
    "bad_linear_name",
    CDF,
    ("--config.vector.linears=('cd','lux')",),
    {},
    r"config\.vector\.linears holds 'lux'",
  ),
  (
    "missing_image_file",
    CDF,
    ("--config.data.images_npy=/no/such/images.npy",),
    {},
    r"images_npy '/no/such/images\.npy' not found",
  ),
  (
    "nan_image_file",
    CDF,
    ("--config.data.images_npy={nan_images}",),
    {},
    r"non-finite",
  ),
  (
    "missing_token_file",
    QLLM,
    ("--config.data.path=/no/such/tokens.npy",),
    {},
    r"'/no/such/tokens\.npy' does not exist",
  ),
  (
    "nan_token_file",
    QLLM,
    ("--config.data.path={nan_tokens}",),
    {},
    r"non-finite value \(nan\) at index 7",
  ),
  (
    "fractional_token_file",
    QLLM,
    ("--config.data.path={frac_tokens}",),
    {},
    r"non-integer value \(2\.5\) at index 3",
  ),
  (
    "periodic_grid_zero",
    ADV,
    ("--config.pde.n_x=0",),
    {},
    r"n_x|n >= 2",
  ),
  (
    "bad_stencil_name",
    HNS,
    ("--config.j_stencil=upwind",),
    {},
    r"config\.j_stencil='upwind' is not one of",
  ),
  (
    "bad_gemm_implementation",
    MX,
    ("--config.gemm_implementations=('xla','triton')",),
    {},
    r"gemm_implementations holds 'triton'",
  ),
  (
    "gemm_k_not_multiple_of_32",
    MX,
    ("--config.gemm_shapes=((64,48,64),)",),
    {},
    r"gemm_shapes \(64, 48, 64\): entry 1=48 must be a multiple of 32",
  ),
  (
    "ffi_library_not_built",
    QLLM,
    ("--config.implementation=ffi",),
    {"QUARTET_MXFP4_FFI_DIR": "{empty_dir}"},
    r"MXFP4 FFI library for cpu is not built .*build it with",
  ),
  (
    "distributed_without_coordinator",
    SB,
    ("--distributed",),
    {"JAX_NUM_PROCESSES": "2"},
    r"JAX_COORDINATOR_ADDRESS and JAX_PROCESS_ID not set",
  ),
  (
    "distributed_garbage_env",
    SB,
    ("--distributed",),
    {"JAX_NUM_PROCESSES": "two", "JAX_PROCESS_ID": "0"},
    r"JAX_NUM_PROCESSES='two' must be an integer",
  ),
  (
    "distributed_peer_never_starts",
    SB,
    ("--distributed", "--distributed_timeout_s=3"),
    "dist0",
    r"process 0 of 2 waited 3 s .* but process 1 of 2 never joined",
  ),
  (
    "distributed_coordinator_never_starts",
    SB,
    ("--distributed", "--distributed_timeout_s=3"),
    "dist1",
    r"process 1 of 2 could not reach the coordinator \(process 0\)",
  ),
]


def _fill(value, paths):
  return value.format(**paths) if isinstance(value, str) else value


def assert_one_line_error(proc, pattern: str) -> str:
  """Exit code 1, last stderr line `error: <pattern...>`, no traceback."""
  lines = [line for line in proc.stderr.splitlines() if line.strip()]
  last = lines[-1] if lines else ""
  assert proc.returncode == 1, (proc.returncode, proc.stderr[-3000:])
  assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
  assert last.startswith("error: "), proc.stderr[-3000:]
  assert re.search(pattern, last), (pattern, last)
  return last


@pytest.mark.parametrize(
  "module,args,env,pattern",
  [case[1:] for case in CASES],
  ids=[case[0] for case in CASES],
)
def test_bad_input_is_one_line(tmp_path, module, args, env, pattern):
  paths = _files(tmp_path)
  smoke = {
    SB: SB_SMOKE,
    CDF: CDF_SMOKE,
    QLLM: QLLM_SMOKE,
    HNS: HNS_SMOKE,
    MX: MX_SMOKE,
    ADV: ADV_SMOKE,
  }[module]
  if isinstance(env, str):  # a fresh port per run
    env = _dist_env(int(env[-1]))
  env = {k: _fill(v, paths) for k, v in env.items()}
  args = [_fill(a, paths) for a in args]
  workdir = str(tmp_path / "run")
  proc = run_binary(
    module, *smoke, *args, f"--workdir={workdir}", env=env, timeout=240
  )
  assert_one_line_error(proc, pattern)


def _damaged_copy(reference, tmp_path) -> str:
  workdir = str(tmp_path / "run")
  shutil.copytree(reference, workdir)
  return workdir


def test_every_checkpoint_damaged_is_one_line(
  tmp_path, simplicity_bias_reference
):
  workdir = _damaged_copy(simplicity_bias_reference, tmp_path)
  ckpt = os.path.join(workdir, "adam", "ckpt")
  steps = sorted(os.listdir(ckpt))
  for step in steps:
    for root, _, files in os.walk(os.path.join(ckpt, step)):
      for f in files:
        if os.path.basename(root) == "d":
          open(os.path.join(root, f), "wb").close()
  proc = run_binary(
    SIMPLICITY_BIAS, *SIMPLICITY_BIAS_ARGS, f"--workdir={workdir}"
  )
  last = assert_one_line_error(proc, r"no readable checkpoint in .*adam/ckpt")
  assert ", ".join(steps) in last or ", ".join(sorted(steps, key=int)) in last
  # One warning per damaged step, each naming it.
  for step in steps:
    assert f"checkpoint step {step} in" in proc.stderr


def test_checkpoint_of_another_model_is_one_line(
  tmp_path, simplicity_bias_reference
):
  workdir = _damaged_copy(simplicity_bias_reference, tmp_path)
  proc = run_binary(
    SIMPLICITY_BIAS,
    *SIMPLICITY_BIAS_ARGS,
    "--config.model.m=32",
    "--config.allow_config_change=True",
    f"--workdir={workdir}",
  )
  assert_one_line_error(
    proc,
    r"written by another model \(leaf '1\.params\.W' has shape \(16, 2\) "
    r"there, \(32, 2\) here\); use a new --workdir",
  )


def test_library_errors_are_user_errors():
  """What the binaries reach: each is a type the CLI prints as one line."""
  import jax.numpy as jnp

  from experiments import _cli
  from lib import pde
  from pallas_kernels.mxfp4 import ops
  from pallas_kernels.mxfp4.ffi import _loader

  def user_error(fn):
    with pytest.raises(Exception) as e:
      fn()
    assert _cli.is_user_error(e.value, errors.UserError), repr(e.value)
    assert "\n" not in _cli.one_line(e.value)
    return str(e.value)

  assert "got 0" in user_error(lambda: pde.periodic_grid(0, 1.0))
  assert "got 2.5" in user_error(lambda: pde.periodic_grid(2.5, 1.0))
  assert "got nan" in user_error(lambda: pde.periodic_grid(8, float("nan")))
  a, _ = ops.quantize_quest(jnp.ones((4, 64)))
  b, _ = ops.quantize_quest(jnp.ones((3, 96)))
  message = user_error(lambda: ops.mx_matmul(a, b))
  assert "same K" in message and "[4, 64]" in message and "[3, 96]" in message
  message = user_error(lambda: ops.mx_matmul(a, a, implementation="x"))
  assert "unknown implementation 'x'" in message
  assert _cli.is_user_error(_loader.FfiLibraryNotBuiltError("x"))
  assert not _cli.is_user_error(ValueError("a bug"), errors.UserError)


# -----------------------------------------------------------------------------
# In process: users' data, run files, the disk, figures, config values.
# -----------------------------------------------------------------------------

CSV_HEADER = "score,label,group\n"
# Four rows: both labels in both groups (what every metric needs).
CSV_GOOD = "0.2,0,0\n0.7,1,0\n0.4,0,1\n0.9,1,1\n"


def outcome(fn):
  """("error", line) when `fn` raises what the CLI prints as one line and
  exit code 1; ("traceback", "Type: message") for any other exception;
  ("result", value) when it returns."""
  from experiments import _cli

  try:
    value = fn()
  except Exception as e:
    if _cli.is_user_error(e, errors.UserError):
      return "error", _cli.one_line(e)
    return "traceback", f"{type(e).__name__}: {e}"[:300]
  return "result", value


def _experiment(name, tmp_path, **overrides):
  """Runs experiments.<name> at smoke scale as the CLI does after parsing
  `--config.<key>=<value>` overrides (dotted keys)."""
  import importlib

  from experiments import _cli

  module = importlib.import_module(f"experiments.{name}")
  config = importlib.import_module(f"configs.{name}").get_config("quick,smoke")
  for key, value in overrides.items():
    node, *path = key.split(".")
    parent = config
    for part in [node, *path][:-1]:
      parent = parent[part]
    parent[[node, *path][-1]] = value
  return _cli.execute(module.run, config, str(tmp_path / "run"))


def _disaggregated(tmp_path, rows, header=CSV_HEADER, **overrides):
  path = tmp_path / "scores.csv"
  path.write_bytes(
    rows if isinstance(rows, bytes) else (header + rows).encode()
  )
  return _experiment(
    "disaggregated_eval",
    tmp_path,
    csv_path=str(path),
    settings=("covariate_shift",),
    **overrides,
  )


def _load_csv(tmp_path, rows, **kwargs):
  from lib import evaluation as ev

  path = tmp_path / "scores.csv"
  path.write_text(CSV_HEADER + rows)
  columns = {"score": "score", "label": "label", "group": "group"}
  return ev.load_csv(str(path), columns, **kwargs)


def _features(n_per_task=(30, 30), classes=2, seed=0):
  rng = np.random.default_rng(seed)
  task_ids = np.repeat(np.arange(len(n_per_task)), n_per_task)
  labels = np.arange(len(task_ids)) % classes
  features = rng.normal(size=(len(task_ids), 3)) + labels[:, None]
  return {"features": features, "labels": labels, "task_ids": task_ids}


def _compact(tmp_path, arrays=None, *, save=None, name="f.npz", **overrides):
  path = str(tmp_path / name)
  if save is not None:
    save(path)
  else:
    np.savez(path, **(arrays or _features()))
  return _experiment(
    "compact_memory",
    tmp_path,
    datasets=("file",),
    feature_file=path,
    methods=("batch", "compact"),
    **overrides,
  )


def _metrics(tmp_path, lines):
  from lib import train as train_lib

  path = tmp_path / "metrics.jsonl"
  path.write_text("".join(line + "\n" for line in lines))
  return train_lib.read_jsonl(str(tmp_path))


def _with_nan(key, index=3):
  arrays = _features()
  arrays[key] = arrays[key].astype(np.float64)
  arrays[key][index] = np.nan
  return arrays


def _full_disk_results(tmp_path):
  from lib import train as train_lib

  os.symlink("/dev/full", tmp_path / "results.json.tmp")
  return train_lib.write_results(str(tmp_path), {"a": 1})


def _full_disk_metrics(tmp_path):
  from lib.train import metrics

  os.symlink("/dev/full", tmp_path / "metrics.jsonl")
  return metrics.MetricWriter(str(tmp_path)).write(1, {"loss": 1.0})


def _figure_on_full_disk(tmp_path):
  """A figure that cannot be written: a warning, and False (nothing lost)."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  from lib import train as train_lib

  def draw(path):
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    train_lib.save_figure(fig, path)

  os.symlink("/dev/full", tmp_path / "f.png")
  return train_lib.draw_figure(draw, str(tmp_path / "f.png"))


def _forest_point_outside_band(tmp_path):
  """A percentile interval that misses its point estimate is drawn as given."""
  from experiments import disaggregated_eval as dis

  band = {"mean": 0.30, "lo": 0.05, "hi": 0.20}  # the point lies above hi
  stat = {"log_loss": band, "recall": band}
  model = {s: stat for s in ("disparity", "T1(X)", "T1(Y)", "T1(R)")}
  path = str(tmp_path / "forest.png")
  dis.forest_figure(path, {"setting": {"xa": model, "x": model}}, 0.02)
  return os.path.getsize(path)


def _labels_and_groups(expected_a):
  def check(data):
    np.testing.assert_array_equal(data["a"], expected_a)
    np.testing.assert_array_equal(data["y"], [0, 1, 0, 1])

  return check


def _log_every_zero(name):
  return lambda tmp_path: _experiment(name, tmp_path, **{"train.log_every": 0})


# (id, kind, fn(tmp_path), expected: a pattern of the one-line error, or a
# check of the result).
IN_PROCESS = [
  # disaggregated_eval --config.csv_path=...: the inputs.
  (
    "csv_labels_coded_0_2",
    "csv",
    lambda t: _disaggregated(t, CSV_GOOD + "0.3,2,0\n"),
    r"scores\.csv row 5 \(line 6\), column 'label': 2 is not a binary "
    r"label; expected 0 or 1",
  ),
  (
    "csv_scores_as_logits",
    "csv",
    lambda t: _disaggregated(t, "-1.3,0,0\n" + CSV_GOOD),
    r"row 1 .*column 'score': -1\.3 is not a probability \(logits\? pass "
    r"1 / \(1 \+ exp\(-logit\)\)\)",
  ),
  (
    "csv_one_group",
    "csv",
    lambda t: _disaggregated(t, "0.2,0,0\n0.7,1,0\n"),
    r"column 'group': no row of group 1; a disaggregated evaluation needs "
    "both groups",
  ),
  (
    "csv_groups_coded_1_2",
    "csv",
    lambda t: _disaggregated(t, "0.2,0,1\n0.7,1,2\n"),
    r"row 2 .*column 'group': 2 is not a group code .*csv_group_values",
  ),
  (
    "csv_three_groups",
    "csv",
    lambda t: _disaggregated(t, CSV_GOOD + "0.5,1,3\n"),
    r"row 5 .*column 'group': 3 is not a group code",
  ),
  (
    "csv_header_only",
    "csv",
    lambda t: _disaggregated(t, ""),
    r"scores\.csv holds a header but no data rows",
  ),
  (
    "csv_nan_label",
    "csv",
    lambda t: _disaggregated(t, CSV_GOOD + "0.5,nan,1\n"),
    r"row 5 .*column 'label': 'nan' is not finite",
  ),
  (
    "csv_row_missing_a_field",
    "csv",
    lambda t: _disaggregated(t, CSV_GOOD + "0.5,1\n"),
    r"row 5 \(line 6\), column 'group': the value is missing",
  ),
  # Ours.
  (
    "csv_row_with_an_extra_field",
    "csv",
    lambda t: _disaggregated(t, "0.5,1,1,7\n" + CSV_GOOD),
    r"row 1 \(line 2\) has more fields than the header's 3",
  ),
  (
    "csv_score_not_a_number",
    "csv",
    lambda t: _disaggregated(t, CSV_GOOD + "high,1,1\n"),
    r"column 'score': 'high' is not a number",
  ),
  (
    "csv_group_with_one_label",
    "csv",
    lambda t: _disaggregated(t, "0.2,0,0\n0.7,1,0\n0.4,1,1\n0.9,1,1\n"),
    r"group 1 has only label\(s\) \[1\]; recall, specificity and AUC",
  ),
  (
    "csv_not_text",
    "csv",
    lambda t: _disaggregated(t, b"\x89PNG\r\n\x1a\n\xff\xfe\x00"),
    r"cannot read '.*scores\.csv' as a CSV",
  ),
  (
    "csv_group_outside_the_mapping",
    "csv",
    lambda t: _disaggregated(
      t,
      "0.2,0,F\n0.7,1,F\n0.4,0,M\n0.9,1,X\n",
      csv_group_values=("F", "M"),
    ),
    r"row 4 .*column 'group': 'X' is not a mapped group value; expected "
    r"one of the mapped group values \['F', 'M'\]",
  ),
  (
    "csv_group_values_not_two",
    "config",
    lambda t: _disaggregated(t, CSV_GOOD, csv_group_values=("a", "b", "c")),
    r"config\.csv_group_values=.* must be \(\) or the two values",
  ),
  (
    "csv_groups_mapped_from_names",
    "csv",
    lambda t: _load_csv(
      t, "0.2,0,F\n0.7,1,F\n0.4,0,M\n0.9,1,M\n", group_values=("F", "M")
    ),
    _labels_and_groups([0, 0, 1, 1]),
  ),
  (
    "csv_groups_mapped_in_reverse",
    "csv",
    lambda t: _load_csv(
      t, "0.2,0,F\n0.7,1,F\n0.4,0,M\n0.9,1,M\n", group_values=("M", "F")
    ),
    _labels_and_groups([1, 1, 0, 0]),
  ),
  # compact_memory --config.feature_file=...: the inputs.
  (
    "features_as_csv",
    "feature file",
    lambda t: _compact(
      t, save=lambda p: pathlib.Path(p).write_text("1,2,3\n"), name="f.csv"
    ),
    r"feature file '.*f\.csv' is a \.csv; expected an \.npz with arrays "
    r"features \[N, d\], labels \[N\], task_ids \[N\]",
  ),
  (
    "features_as_npy",
    "feature file",
    lambda t: _compact(
      t, save=lambda p: np.save(p, np.ones((4, 3))), name="f.npy"
    ),
    r"feature file '.*f\.npy' is a \.npy; expected an \.npz",
  ),
  (
    "features_nan_label",
    "feature file",
    lambda t: _compact(t, _with_nan("labels")),
    r"f\.npz labels\[3\] is nan; expected integer labels",
  ),
  (
    "features_task_of_one_example",
    "feature file",
    lambda t: _compact(t, _features((1, 30)), file_memory_sizes=(2,)),
    r"config\.file_memory_sizes holds 2, more memory points than task 1 .*"
    r"has training examples \(1\)",
  ),
  (
    "features_memory_larger_than_a_task",
    "feature file",
    lambda t: _compact(t, _features((30, 30)), file_memory_sizes=(2, 40)),
    r"config\.file_memory_sizes holds 40, more memory points than task 1 .*"
    r"\(24\); use sizes <= 24",
  ),
  # Ours.
  (
    "features_one_task",
    "feature file",
    lambda t: _compact(t, _features((40,))),
    r"holds 1 task: a continual run needs at least 2",
  ),
  (
    "features_fractional_task_id",
    "feature file",
    lambda t: _compact(
      t, {**_features(), "task_ids": np.r_[0.5, np.zeros(29), np.ones(30)]}
    ),
    r"task_ids\[0\] is 0\.5; expected integer task ids",
  ),
  (
    "features_npz_lacks_labels",
    "feature file",
    lambda t: _compact(t, {"features": np.ones((4, 3)), "task_ids": [0] * 4}),
    r"lacks arrays \['labels'\] \(it has \['features', 'task_ids'\]\)",
  ),
  (
    "features_npz_truncated",
    "feature file",
    lambda t: _compact(
      t, save=lambda p: pathlib.Path(p).write_bytes(b"PK\x03\x04 cut short")
    ),
    r"f\.npz' is not a readable \.npz",
  ),
  (
    "features_object_array",
    "feature file",
    lambda t: _compact(
      t, {**_features(), "labels": np.array([{"a": 1}] * 60, dtype=object)}
    ),
    r"f\.npz' is not a readable \.npz \(Object arrays cannot be loaded",
  ),
  (
    "digits_memory_larger_than_a_task",
    "config",
    lambda t: _experiment(
      "compact_memory",
      t,
      datasets=("digits",),
      **{"digits.memory_sizes": (2, 5000)},
    ),
    r"config\.digits\.memory_sizes holds 5000, more memory points than task",
  ),
  # Run files: metrics.jsonl, a full disk, figures.
  (
    "metrics_damaged_last_line",
    "run files",
    lambda t: _metrics(t, ['{"step": 1}', '{"step": 2}', '{"step": 3, "lo']),
    lambda rows: rows == [{"step": 1}, {"step": 2}],
  ),
  (
    "metrics_damaged_middle_line",
    "run files",
    lambda t: _metrics(t, ['{"step": 1}', "\x00\x00garbage", '{"step": 3}']),
    r"metrics\.jsonl line 2 is damaged \(.*\): delete that line",
  ),
  (
    "metrics_line_not_an_object",
    "run files",
    lambda t: _metrics(t, ['{"step": 1}', "[1, 2]", '{"step": 3}']),
    r"metrics\.jsonl line 2 is damaged \(a JSON list, not an object\)",
  ),
  (
    "results_on_a_full_disk",
    "filesystem",
    _full_disk_results,
    r"cannot write .*results\.json: No space left on device",
  ),
  (
    "metrics_on_a_full_disk",
    "filesystem",
    _full_disk_metrics,
    r"cannot write .*metrics\.jsonl: No space left on device",
  ),
  (
    "figure_on_a_full_disk",
    "filesystem",
    _figure_on_full_disk,
    lambda written: written is False,
  ),
  (
    "forest_point_outside_its_band",
    "figure",
    _forest_point_outside_band,
    lambda size: size > 0,
  ),
  # Config values.
  *[
    (f"{name}_log_every_zero", "config", _log_every_zero(name), pattern)
    for name, pattern in (
      ("compact_memory", r"config\.train\.log_every=0 must be > 0"),
      ("dpo_diversity", r"config\.train\.log_every=0 must be > 0"),
      ("drag", r"config\.train\.log_every=0 must be > 0"),
      ("mix", r"config\.train\.log_every=0 must be > 0"),
      ("sfn", r"config\.train\.log_every=0 must be > 0"),
      ("trpe", r"config\.train\.log_every=0 must be > 0"),
    )
  ],
  (
    "drag_no_temperature",
    "config",
    lambda t: _experiment("drag", t, taus=()),
    r"config\.taus=\(\) names no DRAG temperature",
  ),
]


@pytest.mark.parametrize(
  "fn,expected",
  [case[2:] for case in IN_PROCESS],
  ids=[case[0] for case in IN_PROCESS],
)
def test_bad_input_in_process(tmp_path, fn, expected):
  kind, value = outcome(lambda: fn(tmp_path))
  if isinstance(expected, str):
    assert kind == "error", (kind, value)
    assert "\n" not in value and re.search(expected, value), value
  else:
    assert kind == "result", (kind, value)
    assert expected(value) is not False, value


def test_the_table_counts_every_kind():
  """Every kind of issue 32 is in the table, and the table's size."""
  ids = [c[0] for c in CASES] + [c[0] for c in IN_PROCESS]
  assert len(set(ids)) == len(ids)
  kinds = collections.Counter(c[1] for c in IN_PROCESS)
  expects = collections.Counter(
    "error" if isinstance(c[3], str) else "result" for c in IN_PROCESS
  )
  assert kinds == {
    "csv": 15,
    "feature file": 10,
    "run files": 3,
    "filesystem": 3,
    "figure": 1,
    "config": 9,
  }, kinds
  assert expects == {"error": 36, "result": 5}, expects
  assert len(CASES) == 21
