#!/usr/bin/env bash
# Counts the instructions of a fresh process's first call of a cached elementwise kernel, on the
# pretend driver (no GPU needed), and prints where they go. On the H200 host that call's time
# follows its instruction count, its code being cold (docs/perf-log.md): this is the measure
# to watch when changing that path. Deterministic, unlike timing it on a shared machine.
#   tools/first-call-profile.sh [BUILD_DIR] [LINES]   (default: build, 45; needs valgrind)
# The callgrind file is kept as $BUILD_DIR/first-call.callgrind for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
lines=${2:-45}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KJIT_BENCH_CACHE_DIR="$work/cache" KJIT_BENCH_PRETEND_DRIVER=1
# The warm start as a process has it by default (the test runner turns it off unless set).
export KJIT_WARM_START=${KJIT_WARM_START:-1}
probe() { "$@" "$build/tests/kjit_tests" "[cache_bench_probe]" 2>&1; }
probe env > /dev/null                   # fills the cache
# Valgrind sets LD_LIBRARY_PATH, which changes the NVRTC identity record: one run to record it.
probe valgrind --tool=none > /dev/null
out="$build/first-call.callgrind"
probe valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
  '--toggle-collect=kjit::ElementwiseKernel::ElementwiseKernel*' \
  '--toggle-collect=kjit::ElementwiseKernel::operator()*' | grep -E "first call|Collected" || true
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | grep -E '^ *[0-9,]+ \(' | sed 1,12d |
  sed -E 's/\[[^]]*\]$//; s/std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >/std::string/g' |
  cut -c1-160 | head -n "$lines"
