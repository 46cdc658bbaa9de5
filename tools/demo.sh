#!/usr/bin/env bash
# Builds kjit and runs `kjit demo` (the README's first command).
#   tools/demo.sh [BUILD_DIR]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

tools/setup.sh
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)" --target kjit_cli
"$build_dir/kjit" demo
