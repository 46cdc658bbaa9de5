#!/usr/bin/env bash
# Cross-compiles libkjit and the kjit CLI for aarch64 Linux (GH200, Grace Blackwell) with Debian's
# g++-aarch64-linux-gnu, to keep the sources and build files free of x86-64 assumptions. Nothing
# runs: this machine has no aarch64 processor. The host back end (LLVM), the tests and the
# examples are left out.
#   tools/cross-aarch64.sh [BUILD_DIR]      (default: build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-aarch64}

cmake -S . -B "$build_dir" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DKJIT_BUILD_TESTS=OFF -DKJIT_BUILD_EXAMPLES=OFF -DKJIT_BUILD_HOST_BACKEND=OFF -DKJIT_INSTALL=OFF
cmake --build "$build_dir" -j "$(nproc)" --target kjit kjit_cli
for f in "$build_dir/libkjit.so" "$build_dir/kjit"; do
  file -L "$f" | grep -q "ARM aarch64" || { echo "tools/cross-aarch64.sh: $f is not an aarch64 binary" >&2; exit 1; }
done
echo "aarch64 cross build: ok ($build_dir/libkjit.so, $build_dir/kjit)"
