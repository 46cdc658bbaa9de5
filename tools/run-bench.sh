#!/usr/bin/env bash
# Runs the benchmarks of issues 5, 6 and 7 on the GPU machine and merges them into one table:
#   1. BUILD_DIR/kjit bench --json OUT_DIR/kjit.jsonl   (if that program exists)
#   2. tools/bench/peers.py for CuPy, then for PyTorch (separate processes) -> OUT_DIR/peers.jsonl,
#      with the device-to-device copy ceiling measured in the same run
#   3. tools/bench/table.py -> OUT_DIR/table.md (the full report); the main table is printed last.
#
#   tools/run-bench.sh BUILD_DIR OUT_DIR          (BUILD_DIR may be '-': peers only)
#
# Environment (all optional):
#   BENCH_QUICK=1          fewer repeats everywhere (peers.py --quick; kjit_bench gets --quick
#                          only through KJIT_BENCH_ARGS)
#   BENCH_CASES=PATTERNS   peers.py --cases (ids, globs like 'ew_*', or groups ew, red, mm)
#   BENCH_IMPLS=cupy,torch which peers to run
#   KJIT_BENCH_ARGS=...    extra arguments for kjit_bench
#   PEERS_ARGS=...         extra arguments for peers.py (e.g. --verbose)
#   KJIT_BENCH_TIMEOUT=180, PEERS_TIMEOUT=170 (seconds, each peer process), CASE_TIMEOUT=120:
#   at worst 180 + 2 * 170 s, inside the GPU machine's 10-minute limit on one command
#   PYTHON=python3
# Logs: OUT_DIR/machine.txt, kjit-bench.log, peers-cupy.log, peers-torch.log.
# Exit status: 0 when the table was written (failed cases are in it), 1 otherwise.
set -uo pipefail
build_dir=${1:?usage: run-bench.sh BUILD_DIR OUT_DIR}
out_dir=${2:?usage: run-bench.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
bench="$here/bench"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
t_start=$(date +%s)

gpu_state() {
  nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,memory.used \
    --format=csv,noheader 2>&1 | head -4
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || cat /etc/hostname 2>/dev/null)"
  echo "commit: $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "gpu before (name, driver, pstate, sm MHz, mem MHz, max sm MHz, temp, power, mem used):"
  gpu_state
  "$python" -c 'import sys; print("python", sys.version.split()[0], sys.executable)' 2>&1
} > "$out_dir/machine.txt"
cat "$out_dir/machine.txt"

# ---- 1. kjit
rm -f "$out_dir/kjit.jsonl"
kjit_bench="$build_dir/kjit"
if [ "$build_dir" != "-" ] && [ -x "$kjit_bench" ]; then
  echo "== kjit_bench (log: kjit-bench.log)"
  # shellcheck disable=SC2086  # KJIT_BENCH_ARGS is a list of words
  LD_LIBRARY_PATH="$build_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout --kill-after=10 "${KJIT_BENCH_TIMEOUT:-180}" \
    "$kjit_bench" bench --json "$out_dir/kjit.jsonl" ${KJIT_BENCH_ARGS:-} > "$out_dir/kjit-bench.log" 2>&1
  status=$?
  [ "$status" -eq 124 ] && echo "   kjit_bench timed out after ${KJIT_BENCH_TIMEOUT:-180} s"
  echo "   exit $status, $(wc -l < "$out_dir/kjit.jsonl" 2>/dev/null || echo 0) records"
  [ "$status" -ne 0 ] && tail -5 "$out_dir/kjit-bench.log" | sed 's/^/   | /'
else
  echo "== kjit_bench: not found at $kjit_bench, kjit's columns stay empty"
fi

# ---- 2. peers, one process each (a crash or a stuck GPU call in one does not take the other)
rm -f "$out_dir/peers.jsonl"
peer_args=()
[ "${BENCH_QUICK:-0}" = "1" ] && peer_args+=(--quick)
[ -n "${BENCH_CASES:-}" ] && peer_args+=(--cases "$BENCH_CASES")
peer_args+=(--case-timeout "${CASE_TIMEOUT:-120}")
# shellcheck disable=SC2206  # PEERS_ARGS is a list of words
[ -n "${PEERS_ARGS:-}" ] && peer_args+=(${PEERS_ARGS})
IFS=',' read -r -a impls <<< "${BENCH_IMPLS:-cupy,torch}"
for impl in "${impls[@]}"; do
  echo "== peers.py --impl $impl (log: peers-$impl.log)"
  timeout --kill-after=10 "${PEERS_TIMEOUT:-170}" \
    "$python" "$bench/peers.py" --impl "$impl" --out "$out_dir/peers.jsonl" --append \
    "${peer_args[@]}" > "$out_dir/peers-$impl.log" 2>&1
  status=$?
  [ "$status" -eq 124 ] && echo "   timed out after ${PEERS_TIMEOUT:-170} s (the records written so far are kept)"
  echo "   exit $status; $(grep -c "\"impl\": \"\(ceiling\|$impl\)\"" "$out_dir/peers.jsonl" 2>/dev/null || echo 0) records so far for $impl and the ceiling"
  [ "$status" -ne 0 ] && tail -5 "$out_dir/peers-$impl.log" | sed 's/^/   | /'
done

{
  echo "gpu after:"
  gpu_state
  echo "total: $(( $(date +%s) - t_start )) s"
} >> "$out_dir/machine.txt"
tail -2 "$out_dir/machine.txt"

# ---- 3. the table
inputs=()
[ -s "$out_dir/kjit.jsonl" ] && inputs+=("$out_dir/kjit.jsonl")
[ -s "$out_dir/peers.jsonl" ] && inputs+=("$out_dir/peers.jsonl")
if [ "${#inputs[@]}" -eq 0 ]; then
  echo "no results at all: see the logs in $out_dir"
  exit 1
fi
"$python" "$bench/table.py" "${inputs[@]}" -o "$out_dir/table.md" || { echo "table.py failed"; exit 1; }
echo "== full report: $out_dir/table.md; the main table:"
echo
"$python" "$bench/table.py" "${inputs[@]}" --brief
exit 0
