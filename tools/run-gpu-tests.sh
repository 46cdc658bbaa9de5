#!/usr/bin/env bash
# Runs the [gpu] tests (then the CPU ones, as a check that the build is sound there too) from a
# build folder made on another machine, writing logs into LOG_DIR. Meant for the GPU test
# machine: build here with tools/test.sh, carry the build folder there, run this.
#   tools/run-gpu-tests.sh BUILD_DIR LOG_DIR
# Exit status: 0 when every test ran and passed, 1 otherwise (77 if there is no GPU at all).
set -uo pipefail
build_dir=${1:?usage: run-gpu-tests.sh BUILD_DIR LOG_DIR}
log_dir=${2:?usage: run-gpu-tests.sh BUILD_DIR LOG_DIR}
mkdir -p "$log_dir"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1 || true
} > "$log_dir/machine.txt"

"$build_dir/kjit" info > "$log_dir/info.txt" 2>&1
cat "$log_dir/info.txt"

status=0
# The host back end's outputs that pack-for-gpu.sh wrote, for "GPU and host back ends agree".
if [ -z "${KJIT_HOST_REFERENCE_DIR:-}" ] && [ -d "$build_dir/host-reference" ]; then
  export KJIT_HOST_REFERENCE_DIR="$build_dir/host-reference"
fi
"$build_dir/tests/kjit_tests" "[gpu]" --durations yes > "$log_dir/gpu-tests.txt" 2>&1 || status=$?
"$build_dir/tests/kjit_tests" "~[gpu]~[nvrtc]~[.]" > "$log_dir/cpu-tests.txt" 2>&1 || status=$((status == 0 ? $? : status))
bash "$(dirname "$0")/../tests/cli_test.sh" "$build_dir/kjit" > "$log_dir/cli-tests.txt" 2>&1 || status=$((status == 0 ? 1 : status))
for example in "$build_dir"/examples/kjit_example_*; do
  [ -x "$example" ] || continue
  if "$example" > "$log_dir/$(basename "$example").txt" 2>&1; then
    echo "[example] $(basename "$example"): ok"
  else
    echo "[example] $(basename "$example"): FAILED"; status=$((status == 0 ? 1 : status))
  fi
done
# The C++ blocks of the README and docs/ (cmake/doc_snippets.cmake), in a folder of their own
# (they write files there); 77 means one needed a GPU and found none.
mkdir -p "$log_dir/doc-snippets"
for doc in "$build_dir"/tests/kjit_doc_*; do
  [ -x "$doc" ] || continue
  doc_path="$(cd "$(dirname "$doc")" && pwd)/$(basename "$doc")"  # absolute: it runs from another folder
  (cd "$log_dir/doc-snippets" && KJIT_CACHE_DIR="$PWD/cache" "$doc_path") > "$log_dir/$(basename "$doc").txt" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "[doc] $(basename "$doc"): ok"
  elif [ "$rc" -eq 77 ]; then
    echo "[doc] $(basename "$doc"): skipped (no GPU)"
  else
    echo "[doc] $(basename "$doc"): FAILED"; tail -3 "$log_dir/$(basename "$doc").txt"; status=$((status == 0 ? 1 : status))
  fi
done
"$build_dir/tests/kjit_tests" "[compile_bench]" > "$log_dir/compile-bench.txt" 2>&1 || true
grep -A1 "warning:" "$log_dir/compile-bench.txt" | tail -1

grep -E "^(All tests passed|test cases:)" "$log_dir/gpu-tests.txt" | sed 's/^/[gpu] /'
grep -E "^(All tests passed|test cases:)" "$log_dir/cpu-tests.txt" | sed 's/^/[cpu] /'
tail -1 "$log_dir/cli-tests.txt" | sed 's/^/[cli] /'
grep -A3 "^FAILED" "$log_dir/cli-tests.txt" | head -20
if [ "$status" -ne 0 ]; then
  echo "FAILED (status $status); the failures:"
  grep -B2 -A12 -E "FAILED|failed with|due to unexpected exception" "$log_dir/gpu-tests.txt" | head -150
fi
exit "$status"
