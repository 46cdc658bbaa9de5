#!/usr/bin/env bash
# Runs the benchmarks of issues 5, 6, 7 and 33 on the GPU machine and merges them into one table:
#   1. BUILD_DIR/kjit bench --json OUT_DIR/kjit.jsonl, one process per group of cases (copy and
#      elementwise, reductions, matrix products, raw kernels, graphs; from `kjit bench --list`),
#      if that program exists
#   2. tools/bench/peers.py for CuPy, then for PyTorch (separate processes) -> OUT_DIR/peers.jsonl,
#      with the device-to-device copy ceiling measured in the same run
#   3. tools/bench/table.py -> OUT_DIR/table.md (the full report) and OUT_DIR/side-by-side.md (the
#      main table as docs/PERFORMANCE.md pastes it), which is printed last.
# It builds nothing. tools/side-by-side.sh is this with every case (issue 8's one command).
#
#   tools/run-bench.sh BUILD_DIR OUT_DIR          (BUILD_DIR may be '-': peers only)
#
# Time: the whole command keeps inside BENCH_BUDGET seconds (default 510, for the GPU machine's
# 10-minute limit on one command). Each step runs under `timeout`: its own limit (below), cut so
# that every later step keeps its floor (KJIT_FLOOR=40 s per kjit group, PEERS_FLOOR=60 s per
# peer) and the table its 10 s. A step with under 10 s left is skipped and says so. Records
# written before a step is stopped are kept, and the table is made from whatever there is.
#
# Environment (all optional):
#   BENCH_CASES=PATTERNS   the cases, for kjit and the peers alike: ids, globs like 'ew_*', or
#                          groups ew, red, mm, graph (comma-separated); default every case. 'copy' is
#                          always added (the ceiling is measured in the same run).
#   BENCH_QUICK=1          fewer repeats for the peers (peers.py --quick; kjit bench's repeats
#                          are fixed)
#   BENCH_IMPLS=cupy,torch which peers to run
#   KJIT_BENCH_ARGS=...    extra arguments for `kjit bench`; if they hold --cases, kjit runs those
#                          cases in one process and BENCH_CASES is for the peers only
#   PEERS_ARGS=...         extra arguments for peers.py (e.g. --verbose)
#   KJIT_BENCH_TIMEOUT=150 (seconds, each kjit process), PEERS_TIMEOUT=170 (each peer process),
#   CASE_TIMEOUT=120 (one case of a peer), BENCH_BUDGET=510, KJIT_FLOOR=40, PEERS_FLOOR=60
#   BENCH_TITLE=...        the title of side-by-side.md
#   PYTHON=python3
# Logs: OUT_DIR/machine.txt (GPU state before and after, each step's time), kjit-bench.log,
# peers-cupy.log, peers-torch.log.
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
deadline=$((t_start + ${BENCH_BUDGET:-510}))
kjit_floor=${KJIT_FLOOR:-40}
peers_floor=${PEERS_FLOOR:-60}
table_reserve=10
kill_after=5

gpu_state() {
  timeout 20 nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,memory.used \
    --format=csv,noheader 2>&1 | head -4
}

lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }

# step_limit OWN_LIMIT RESERVED_AFTER: the seconds a step may run (possibly <= 0).
step_limit() {
  local left=$((deadline - $(date +%s) - $2 - kill_after - table_reserve))
  if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# run_step NAME LIMIT LOG COMMAND...: runs COMMAND under timeout, its output appended to LOG;
# sets $status (124: stopped at the limit; 125: skipped) and notes the time in machine.txt.
run_step() {
  local name=$1 limit=$2 log=$3 t0
  shift 3
  t0=$(date +%s)
  if [ "$limit" -lt 10 ]; then
    echo "   skipped: only ${limit} s of BENCH_BUDGET=${BENCH_BUDGET:-510} left for it"
    echo "step $name: skipped (${limit} s left)" >> "$out_dir/machine.txt"
    status=125
    return
  fi
  timeout --kill-after=$kill_after "$limit" "$@" >> "$log" 2>&1
  status=$?
  [ "$status" -eq 124 ] || [ "$status" -eq 137 ] &&
    echo "   stopped at its limit of $limit s (the records written so far are kept)"
  echo "step $name: $(( $(date +%s) - t0 )) s (limit $limit s, exit $status)" >> "$out_dir/machine.txt"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname 2>/dev/null || cat /etc/hostname 2>/dev/null)"
  # A build packed on another machine says which commit it is (its checkout here may be older).
  echo "commit: $(cat "$build_dir/BUILD_COMMIT" 2>/dev/null || git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "budget: ${BENCH_BUDGET:-510} s"
  echo "gpu before (name, driver, pstate, sm MHz, mem MHz, max sm MHz, temp, power, mem used):"
  gpu_state
  "$python" -c 'import sys; print("python", sys.version.split()[0], sys.executable)' 2>&1
} > "$out_dir/machine.txt"
cat "$out_dir/machine.txt"

IFS=',' read -r -a impls <<< "${BENCH_IMPLS:-cupy,torch}"
IFS=',' read -r -a patterns <<< "${BENCH_CASES:-}"

# matches NAME: whether a kjit case name is selected by BENCH_CASES (an id, a glob, a group, or
# a kjit-only variant case such as ew_host_1k_batches of a selected id).
matches() {
  local p
  [ "${#patterns[@]}" -eq 0 ] && return 0
  [ "$1" = copy ] && return 0
  for p in "${patterns[@]}"; do
    p=${p// /}
    [ -z "$p" ] && continue
    # shellcheck disable=SC2053  # $p is a glob on purpose
    [[ $1 == $p || $1 == ${p}_* ]] && return 0
  done
  return 1
}

# ---- 1. kjit, one process per group (a stuck or crashed group does not take the others)
rm -f "$out_dir/kjit.jsonl" "$out_dir/kjit-bench.log"
kjit="$build_dir/kjit"
groups=()
declare -A group_cases=()
if [ "$build_dir" != "-" ] && [ -x "$kjit" ]; then
  if [[ " ${KJIT_BENCH_ARGS:-} " == *" --cases "* ]]; then
    groups=(given)
    group_cases[given]=""
  elif names=$(LD_LIBRARY_PATH="$build_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 60 "$kjit" bench --list \
                2> "$out_dir/kjit-bench.log") && [ -n "$names" ]; then
    for name in $names; do
      matches "$name" || continue
      g=${name%%_*}
      [ "$g" = copy ] && g=ew                        # the ceiling goes with the first group
      [ -n "${group_cases[$g]+x}" ] || groups+=("$g")
      group_cases[$g]="${group_cases[$g]:+${group_cases[$g]},}$name"
    done
  else
    echo "== kjit bench --list failed; kjit runs every case in one process"
    groups=(all)
    group_cases[all]=""
  fi
  if [ "${#groups[@]}" -eq 1 ] && [ "${groups[0]}" = ew ] && [ "${group_cases[ew]}" = copy ]; then
    groups=()                                         # nothing of kjit's matched BENCH_CASES
    echo "== kjit bench: no kjit case matches BENCH_CASES=${BENCH_CASES:-}"
  fi
  for ((k = 0; k < ${#groups[@]}; k++)); do
    g=${groups[$k]}
    later=$(( (${#groups[@]} - k - 1) * kjit_floor + ${#impls[@]} * peers_floor ))
    own=${KJIT_BENCH_TIMEOUT:-150}
    [ "$g" = all ] && own=$((own * 2))               # every case in one process
    limit=$(step_limit "$own" "$later")
    cases_arg=()
    [ -n "${group_cases[$g]}" ] && cases_arg=(--cases "${group_cases[$g]}")
    echo "== kjit bench, group $g (log: kjit-bench.log)${group_cases[$g]:+: ${group_cases[$g]}}"
    echo "== kjit bench ${cases_arg[*]} ${KJIT_BENCH_ARGS:-}" >> "$out_dir/kjit-bench.log"
    before=$(lines "$out_dir/kjit.jsonl")
    log_before=$(lines "$out_dir/kjit-bench.log")
    # shellcheck disable=SC2086  # KJIT_BENCH_ARGS is a list of words
    run_step "kjit-$g" "$limit" "$out_dir/kjit-bench.log" \
      env LD_LIBRARY_PATH="$build_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$kjit" bench --json "$out_dir/kjit.jsonl" "${cases_arg[@]}" ${KJIT_BENCH_ARGS:-}
    after=$(lines "$out_dir/kjit.jsonl")
    echo "   exit $status, $((after - before)) records"
    [ "$status" -ne 0 ] && [ "$status" -ne 125 ] &&
      tail -n +$((log_before + 1)) "$out_dir/kjit-bench.log" | tail -5 | sed 's/^/   | /'
  done
else
  echo "== kjit: no program at $kjit, kjit's columns stay empty"
fi

# ---- 2. peers, one process each (a crash or a stuck GPU call in one does not take the other)
rm -f "$out_dir/peers.jsonl"
peer_args=()
[ "${BENCH_QUICK:-0}" = "1" ] && peer_args+=(--quick)
[ -n "${BENCH_CASES:-}" ] && peer_args+=(--cases "$BENCH_CASES")
peer_args+=(--case-timeout "${CASE_TIMEOUT:-120}")
# shellcheck disable=SC2206  # PEERS_ARGS is a list of words
[ -n "${PEERS_ARGS:-}" ] && peer_args+=(${PEERS_ARGS})
for ((k = 0; k < ${#impls[@]}; k++)); do
  impl=${impls[$k]}
  limit=$(step_limit "${PEERS_TIMEOUT:-170}" $(( (${#impls[@]} - k - 1) * peers_floor )))
  echo "== peers.py --impl $impl (log: peers-$impl.log)"
  : > "$out_dir/peers-$impl.log"
  run_step "peers-$impl" "$limit" "$out_dir/peers-$impl.log" \
    "$python" "$bench/peers.py" --impl "$impl" --out "$out_dir/peers.jsonl" --append "${peer_args[@]}"
  echo "   exit $status; $(grep -c "\"impl\": \"\(ceiling\|$impl\)\"" "$out_dir/peers.jsonl" 2>/dev/null || echo 0) records so far for $impl and the ceiling"
  [ "$status" -ne 0 ] && [ "$status" -ne 125 ] && tail -5 "$out_dir/peers-$impl.log" | sed 's/^/   | /'
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
gpu=$(awk '/^gpu before/ { getline; print; exit }' "$out_dir/machine.txt" | grep ', ' | grep -v 'not found' | cut -d, -f1,2 | sed 's/, */, driver /')
intro="Command: \`${BENCH_COMMAND:-tools/run-bench.sh BUILD_DIR OUT_DIR}\`$([ -n "${BENCH_CASES:-}" ] && echo " with BENCH_CASES=$BENCH_CASES")$([ "${BENCH_QUICK:-0}" = 1 ] && echo ", BENCH_QUICK=1"), commit $(sed -n 's/^commit: //p' "$out_dir/machine.txt"), $(sed -n 's/^total: //p' "$out_dir/machine.txt") in all${gpu:+; GPU: $gpu}."
"$python" "$bench/table.py" "${inputs[@]}" --brief --heading-level 3 \
  --title "${BENCH_TITLE:-kjit, CuPy and PyTorch side by side, $(date -u +%Y-%m-%d)}" --intro "$intro" \
  -o "$out_dir/side-by-side.md" || { echo "table.py --brief failed"; exit 1; }
echo "== full report: $out_dir/table.md; the main table ($out_dir/side-by-side.md, for docs/PERFORMANCE.md):"
echo
cat "$out_dir/side-by-side.md"
exit 0
