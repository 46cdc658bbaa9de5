#!/usr/bin/env bash
# Builds kjit and runs the whole test suite with ctest (the README's test command; .ci/run calls
# it). Works on a machine without a GPU: the [gpu] tests are then reported as skipped.
#   tools/test.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

tools/setup.sh
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)"
ctest --test-dir "$build_dir" --output-on-failure
