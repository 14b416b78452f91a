#!/usr/bin/env bash
# Every GPU check and benchmark in one run, within a time budget (issue 34):
#
#   bash tests/gpu/run.sh OUT_DIR
#
# 1. installs what the image lacks from gpu_deps/wheels (tests/gpu/wheels.txt;
#    made beforehand by tests/gpu/fetch_deps.sh), offline;
# 2. builds the MXFP4 FFI libraries (CPU + CUDA with the image's nvcc);
# 3. runs the `gpu`-marked tests (Pallas kernels compiled by Triton, FFI
#    handlers, quartet_linear xla|pallas|ffi, one training step GPU == CPU);
# 4. runs bench_mxfp4, bench_hns (peer mode against gpu_deps/hamiltonian_pdes
#    when torch and einops import), bench_mxfp4_ffi and bench_cdflow at their
#    `gpu` variants;
# 5. prints a summary table (tests/gpu/summary.py).
#
# Without a GPU the same script runs end to end as a rehearsal: the GPU
# tests skip (saying why), the CUDA build is skipped, and the benchmarks run
# at `gpu,smoke` size on CPU. Every step has its own time limit, capped by
# what is left of the whole budget (GPU_RUN_BUDGET_S, default 540 s, so one
# run fits a 10-minute command); a failed or timed-out step is recorded and
# the next one runs; the summary comes at the end whatever happened.
# Outputs under OUT_DIR: logs/<step>.log, steps.tsv, pytest.xml,
# tests_report.jsonl (agreement figures), bench_*/results.json, summary.json,
# summary.md. Environment: PYTHON (default python), GPU_DEPS (default
# gpu_deps), GPU_RUN_BUDGET_S, GPU_RUN_STEPS (a space-separated subset of
# ffi_build gpu_tests bench_mxfp4 bench_hns bench_mxfp4_ffi bench_cdflow to
# rerun only those; default all).
set -u
cd "$(dirname "$0")/../.." || exit 2
if [ $# -ne 1 ]; then
  echo "usage: bash tests/gpu/run.sh OUT_DIR" >&2
  exit 2
fi
mkdir -p "$1/logs" || exit 2
OUT=$(cd "$1" && pwd)
BUDGET=${GPU_RUN_BUDGET_S:-540}
DEPS=${GPU_DEPS:-gpu_deps}
PY=${PYTHON:-python}
START=$SECONDS
STEPS="$OUT/steps.tsv"
: >"$STEPS"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# Python's own logs only (XLA's C++ INFO lines would drown the step logs).
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-1}

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$STEPS"; }

# step NAME MAX_SECONDS NOTE CMD...: runs CMD under a limit of MAX_SECONDS or
# what is left of the budget (20 s kept for the summary), logs, records.
step() {
  local name=$1 max=$2 note=$3
  shift 3
  if [ -n "${GPU_RUN_STEPS:-}" ] && [ "$name" != install ] &&
    [[ " $GPU_RUN_STEPS " != *" $name "* ]]; then
    record "$name" skipped 0 "not in GPU_RUN_STEPS"
    return
  fi
  local limit=$((BUDGET - (SECONDS - START) - 20))
  ((limit > max)) && limit=$max
  if ((limit < 15)); then
    record "$name" skipped 0 "budget of ${BUDGET}s spent"
    echo "== $name: skipped (budget of ${BUDGET}s spent)"
    return
  fi
  echo "== $name (limit ${limit}s)"
  echo "   \$ $*"
  local t0=$SECONDS rc status
  timeout --kill-after=10 "$limit" "$@" >"$OUT/logs/$name.log" 2>&1
  rc=$?
  if ((rc == 124 || rc == 137)); then
    status="timeout(${limit}s)"
  elif ((rc != 0)); then
    status="failed(rc=$rc)"
  else
    status=ok
  fi
  record "$name" "$status" $((SECONDS - t0)) "$note"
  echo "   $status in $((SECONDS - t0))s; last lines of logs/$name.log:"
  tail -n 4 "$OUT/logs/$name.log" | cut -c1-200 | sed 's/^/   | /'
}

skip() {
  record "$1" skipped 0 "$2"
  echo "== $1: skipped ($2)"
}

summary() {
  echo
  timeout 60 "$PY" tests/gpu/summary.py "$OUT" "$((SECONDS - START))" ||
    { echo "summary failed; steps:"; cat "$STEPS"; }
}
trap 'echo "interrupted"; record run interrupted $((SECONDS - START)) ""; summary; exit 143' TERM INT

# --- the machine ---------------------------------------------------------
{
  date -u
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v nvcc >/dev/null && nvcc --version | tail -n 2
  "$PY" --version
} >"$OUT/logs/machine.log" 2>&1

step install 90 "missing wheels from $DEPS/wheels" \
  "$PY" tests/gpu/install_wheels.py "$DEPS/wheels"

BACKEND=$(timeout 120 "$PY" -c \
  'import jax; print(jax.__version__, jax.default_backend(), jax.devices()[0].device_kind)' \
  2>>"$OUT/logs/machine.log" | tail -n 1)
echo "jax, backend, device: ${BACKEND:-unknown (see logs/machine.log)}"
echo "jax backend device: $BACKEND" >>"$OUT/logs/machine.log"
if [[ "$BACKEND" == *" gpu "* ]]; then
  GPU=1
  VARIANT=gpu
else
  GPU=0
  VARIANT=gpu,smoke
  echo "no GPU backend: CPU rehearsal (GPU tests skip, no CUDA build," \
    "benchmarks at gpu,smoke size)"
fi

# --- build ------------------------------------------------------------------
if ((GPU)); then
  step ffi_build 150 "CPU + CUDA libraries (image's nvcc)" \
    "$PY" -m pallas_kernels.mxfp4.ffi.build --cuda
else
  step ffi_build 120 "CPU library only (no GPU: CUDA build skipped)" \
    "$PY" -m pallas_kernels.mxfp4.ffi.build --cpu
fi

# --- tests --------------------------------------------------------------------
rm -f "$OUT/tests_report.jsonl"
if ((GPU)); then
  PLATFORMS=cuda,cpu
  NOTE="pytest -m gpu on the GPU"
else
  PLATFORMS=""
  NOTE="pytest -m gpu: every test skips without a GPU"
fi
step gpu_tests 210 "$NOTE" env TESTS_JAX_PLATFORMS="$PLATFORMS" \
  TESTS_REPORT="$OUT/tests_report.jsonl" \
  "$PY" -m pytest -m gpu -rA -q -p no:cacheprovider \
  --junitxml="$OUT/pytest.xml" tests/gpu tests/pallas_kernels

# --- benchmarks ------------------------------------------------------------
bench() {
  local name=$1 max=$2 note=$3
  shift 3
  step "$name" "$max" "$note" "$PY" -m "experiments.$name" \
    --config "configs/$name.py:$VARIANT" --workdir "$OUT/$name" "$@"
}
bench bench_mxfp4 160 "$VARIANT"

PEER="$DEPS/hamiltonian_pdes"
if [ -f "$PEER/modules/models/NeuralFunctional.py" ] &&
  timeout 120 "$PY" -c "import torch, einops" >/dev/null 2>&1; then
  XLA_PYTHON_CLIENT_PREALLOCATE=false \
    bench bench_hns 120 "$VARIANT, peer mode ($PEER)" \
    --config.peer_repo="$(cd "$PEER" && pwd)"
else
  bench bench_hns 120 "$VARIANT, NO peer mode (no $PEER, or torch/einops missing)"
fi
bench bench_mxfp4_ffi 90 "$VARIANT"
bench bench_cdflow 150 "$VARIANT"

trap - TERM INT
summary
