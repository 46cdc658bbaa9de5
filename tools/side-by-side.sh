#!/usr/bin/env bash
# Issue 8's side-by-side, in one command on the GPU machine: every benchmark case of the
# elementwise, reduction, matmul and CUDA graph issues (host-time and first-call cases included)
# in kjit, CuPy and PyTorch, then one table with kjit ÷ CuPy and kjit ÷ PyTorch, the percentage
# of the copy ceiling measured in the same run, and each goal met or missed.
#
#   tools/side-by-side.sh BUILD_DIR OUT_DIR
#
# It builds nothing: BUILD_DIR holds a `kjit` program built elsewhere (tools/pack-for-gpu.sh
# BUILD_DIR .gpu carries one), and CuPy and PyTorch must be importable by $PYTHON (python3).
# This is tools/run-bench.sh with every case (BENCH_CASES and KJIT_BENCH_ARGS are ignored); its
# other knobs apply, BENCH_QUICK=1 among them. The whole command keeps inside BENCH_BUDGET
# seconds (default 510, under the machine's 10-minute limit on one command), each step under its
# own limit (tools/run-bench.sh says how), so a slow or stuck step costs its own records, not the
# table.
#
# Expected time on the H200 (estimated from the code, not yet measured whole): kjit 1-2 minutes
# (its kernels compiled into an empty cache, about 2 s per reduction module; ten fresh processes
# for the first-call case; about 15 s of matrix products), CuPy about a minute, PyTorch under a
# minute: 2.5-4.5 minutes in all (tools/bench/README.md has the details).
#
# Writes OUT_DIR/side-by-side.md (the main table, to paste into docs/PERFORMANCE.md's "Side by
# side" section; the table it replaces moves to docs/perf-log.md), OUT_DIR/table.md (the full
# report: every variant, the peers against the issues' numbers), the records (kjit.jsonl,
# peers.jsonl), the logs and machine.txt; prints the table.
# Exit status: 0 when the table was written (failed cases are in it), 1 otherwise.
set -uo pipefail
build_dir=${1:?usage: side-by-side.sh BUILD_DIR OUT_DIR}
out_dir=${2:?usage: side-by-side.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -x "$build_dir/kjit" ]; then
  echo "side-by-side.sh: no kjit program at $build_dir/kjit (this script builds nothing:" \
       "build it, e.g. tools/test.sh, and carry it with tools/pack-for-gpu.sh)" >&2
  exit 1
fi
if ! list=$(LD_LIBRARY_PATH="$build_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            timeout 60 "$build_dir/kjit" bench --list 2>&1); then
  echo "side-by-side.sh: $build_dir/kjit bench --list failed:" >&2
  echo "$list" | tail -5 >&2
  exit 1
fi

export BENCH_CASES=""
unset KJIT_BENCH_ARGS
export BENCH_COMMAND="tools/side-by-side.sh $build_dir $out_dir"
export BENCH_TITLE="${BENCH_TITLE:-kjit, CuPy and PyTorch side by side, $(date -u +%Y-%m-%d)}"
exec "$here/run-bench.sh" "$build_dir" "$out_dir"
