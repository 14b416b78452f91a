#!/usr/bin/env bash
# Prepares gpu_deps/ (git-ignored) for a GPU box without a package registry,
# on a machine with one; tests/gpu/run.sh reads it there:
#   gpu_deps/wheels/            the wheels of tests/gpu/wheels.txt for CPython
#                               3.12 on manylinux x86_64 (the GPU image's)
#   gpu_deps/hamiltonian_pdes/  the official HNS code (bench_hns peer mode)
#
#   bash tests/gpu/fetch_deps.sh [PYTHON_VERSION]       # default 3.12
#
# HNS_PEER_SRC: where to take the official code from (a git URL or a local
# clone; default its GitHub repository), HNS_PEER_COMMIT the commit (default:
# the one the peer mode was checked against).
set -euo pipefail
cd "$(dirname "$0")/../.."
py="${1:-3.12}"
abi="cp${py/./}"
deps=gpu_deps
mkdir -p "$deps/wheels"
mapfile -t reqs < <(grep -v '^#' tests/gpu/wheels.txt | awk 'NF {print $1}')
pip download --no-deps --only-binary=:all: --python-version "$py" \
  --implementation cp --abi "$abi" \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$deps/wheels" "${reqs[@]}"

src="${HNS_PEER_SRC:-https://github.com/anthonyzhou-1/hamiltonian_pdes}"
commit="${HNS_PEER_COMMIT:-58ccf71}"
rm -rf "$deps/hamiltonian_pdes"
if [ -d "$src" ] && git --git-dir="$src" rev-parse "$commit" >/dev/null 2>&1; then
  mkdir -p "$deps/hamiltonian_pdes"  # a bare mirror or a .git directory
  git --git-dir="$src" archive "$commit" | tar -x -C "$deps/hamiltonian_pdes"
else
  git clone --quiet "$src" "$deps/hamiltonian_pdes"
  git -C "$deps/hamiltonian_pdes" checkout --quiet "$commit"
  rm -rf "$deps/hamiltonian_pdes/.git"
fi
du -sh "$deps"/*
