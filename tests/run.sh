#!/usr/bin/env bash
# The test command (README): lint, build the CPU FFI library if its sources exist, run pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
if [ -f pallas_kernels/mxfp4/ffi/build.py ]; then
  python -m pallas_kernels.mxfp4.ffi.build --cpu
fi
python -m pytest -n 2 -q --durations=15 "$@"
