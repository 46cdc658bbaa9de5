#!/usr/bin/env bash
# Builds kjit and runs the whole test suite (the README's test command; .ci/run calls it):
#   1. the release build and ctest (the [gpu] tests are reported as skipped without a GPU);
#   2. the CPU tests again in a build with AddressSanitizer and UndefinedBehaviorSanitizer;
#   3. the parser fuzzer (libFuzzer, clang) for a bounded time (KJIT_FUZZ_SECONDS, default 60).
#   tools/test.sh [BUILD_DIR]      (default: build; the others go beside it)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
jobs=$(nproc)

tools/setup.sh

echo "== release build and ctest"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure

echo "== CPU tests under AddressSanitizer and UndefinedBehaviorSanitizer"
cmake -S . -B "$build_dir-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKJIT_SANITIZERS=address,undefined \
  -DKJIT_BUILD_CLI=OFF -DKJIT_INSTALL=OFF
cmake --build "$build_dir-asan" -j "$jobs" --target kjit_tests
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp UBSAN_OPTIONS=print_stacktrace=1 \
  "$build_dir-asan/tests/kjit_tests" "~[gpu]~[nvrtc]~[.]"

echo "== parser fuzzer"
tools/fuzz.sh "$build_dir-fuzz" "${KJIT_FUZZ_SECONDS:-60}"
