#!/usr/bin/env bash
# A bounded attack on the kernel cache through the kjit command line, as a hostile user and a
# faulty machine would mount it (issue 30): damaged, planted and swapped files, special files, an
# unwritable folder and a full disk, a held lock, a thread limit, huge names. Every step runs
# under a time limit: a hang fails the step instead of the suite. What a served kernel is worth is
# checked by its bytes: the cubin kjit writes must be the one a cache-less compile writes.
#   tests/attack_test.sh PATH/TO/kjit
set -u
kjit=${1:?usage: attack_test.sh PATH/TO/kjit}
tmp=$(mktemp -d)
trap 'awk -v t="$tmp" '"'"'index($2, t) == 1 {print $2}'"'"' /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null; rm -rf "$tmp"' EXIT
unset KJIT_CACHE_PATH KJIT_CACHE_RECORD KJIT_CACHE_MAX_BYTES
export KJIT_CACHE_DIR="$tmp/unused"
passed=0
failed=0
limit=60  # seconds any one step may take

ok() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  echo "FAILED: $1"
  [ -f "$tmp/err" ] && sed -n 1,20p "$tmp/err"
}
# run STATUS TEXT CMD...: CMD exits STATUS within the limit and prints TEXT (on stdout or stderr).
run() {
  local want_status=$1 want_text=$2
  shift 2
  timeout "$limit" "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  if [ "$status" -eq "$want_status" ] && grep -qF -- "$want_text" "$tmp/out" "$tmp/err"; then ok; else
    fail "$(printf '%.200s' "$*") -> status $status (wanted $want_status and '$want_text')"
  fi
}

cat >"$tmp/a.json" <<'JSON'
{"kind": "elementwise", "name": "add_one", "in": "T x", "out": "T y", "op": "y = x + 1", "types": [{"T": "float32"}]}
JSON
cat >"$tmp/b.json" <<'JSON'
{"kind": "elementwise", "name": "twice", "in": "T x", "out": "T y", "op": "y = x * 2", "types": [{"T": "float32"}]}
JSON
cat >"$tmp/manifest.json" <<'JSON'
{"arch": ["sm_90"], "kernels": [
 {"kind": "elementwise", "name": "add_one", "in": "T x", "out": "T y", "op": "y = x + 1", "types": [{"T": "float32"}]},
 {"kind": "elementwise", "name": "twice", "in": "T x", "out": "T y", "op": "y = x * 2", "types": [{"T": "float32"}]}]}
JSON
# The cubins a compile without any cache writes: what every attacked cache must still give.
for k in a b; do
  KJIT_CACHE_DISABLE=1 timeout "$limit" "$kjit" compile --spec "$tmp/$k.json" --arch sm_90 -o "$tmp/$k.clean.cubin" >/dev/null 2>"$tmp/err" ||
    fail "a cache-less compile of $k"
done
# compiles_as KIND CACHE: kjit compile of kernel KIND with cache folder CACHE writes the clean cubin.
compiles_as() {
  rm -f "$tmp/got.cubin"
  if KJIT_CACHE_DIR=$2 timeout "$limit" "$kjit" compile --spec "$tmp/$1.json" --arch sm_90 -o "$tmp/got.cubin" >/dev/null 2>"$tmp/err" &&
     cmp -s "$tmp/got.cubin" "$tmp/$1.clean.cubin"; then ok; else fail "compile of $1 from the attacked cache $2 (${3:-})"; fi
}
# The manifest precompiled once; fresh_cache DIR gives DIR a copy of that cache to attack.
KJIT_CACHE_DIR=$tmp/pristine timeout "$limit" "$kjit" precompile "$tmp/manifest.json" --cache-dir "$tmp/pristine" >"$tmp/out" 2>"$tmp/err" ||
  fail "precompile of the manifest"
fresh_cache() {
  rm -rf "$1"
  cp -a "$tmp/pristine" "$1"
}

# Swapped aliases: kernel a's alias holds b's, and the other way round.
c=$tmp/swapped
fresh_cache "$c"
mapfile -t aliases < <(find "$c" -name '*.alias' | sort)
if [ "${#aliases[@]}" -ge 2 ]; then
  cp "${aliases[0]}" "$tmp/alias0"
  cp "${aliases[1]}" "${aliases[0]}"
  cp "$tmp/alias0" "${aliases[1]}"
  run 1 "alias" "$kjit" cache verify --cache-dir "$c"
  compiles_as a "$c" swapped
  compiles_as b "$c" swapped
else
  fail "precompile wrote ${#aliases[@]} aliases, wanted 2 or more"
fi

# Damaged entries: one byte flipped in the middle of every entry.
c=$tmp/damaged
fresh_cache "$c"
while IFS= read -r f; do
  size=$(stat -c %s "$f")
  printf '\x5a' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
done < <(find "$c" -name '*.kjit')
run 1 "damaged" "$kjit" cache verify --cache-dir "$c"
compiles_as a "$c" damaged

# Planted: a shard folder other users may write into is not read.
c=$tmp/planted
fresh_cache "$c"
find "$c" -mindepth 1 -maxdepth 1 -type d -exec chmod o+w {} +
compiles_as a "$c" "world-writable shard"
chmod -R o-w "$c"

# Special files: a FIFO as an entry and /dev/zero as the NVRTC identity record neither hang nor
# exhaust memory, and a FIFO is no clean entry.
c=$tmp/special
fresh_cache "$c"
entry=$(find "$c" -name '*.kjit' | head -n 1)
rm -f "$entry" && mkfifo "$entry"
run 1 "not a regular file" "$kjit" cache verify --cache-dir "$c"
compiles_as a "$c" "FIFO entry"
compiles_as b "$c" "FIFO entry"
if [ -e "$c/nvrtc-identity" ]; then rm -f "$c/nvrtc-identity"; fi
ln -s /dev/zero "$c/nvrtc-identity"
compiles_as a "$c" "/dev/zero as nvrtc-identity"

# A lock held by a stopped process: the compile waits KJIT_CACHE_LOCK_TIMEOUT, then compiles
# without storing. The lock's name comes from a first store of the same kernel.
c=$tmp/locked
fresh_cache "$c"
entry=$(KJIT_CACHE_DIR=$c "$kjit" cache ls --cache-dir "$c" | awk 'NR == 1 {print $1}')
if [ -n "$entry" ]; then
  shard=$c/${entry:0:2}
  find "$c" -name '*.kjit' -delete
  : >"$tmp/holding"
  flock "$shard/$entry.lock" sh -c "touch $tmp/held; sleep 120" &
  holder=$!
  for _ in $(seq 50); do [ -e "$tmp/held" ] && break; sleep 0.1; done
  start=$(date +%s)
  for k in a b; do KJIT_CACHE_LOCK_TIMEOUT=2 compiles_as $k "$c" "held lock"; done
  [ $(($(date +%s) - start)) -lt 30 ] && ok || fail "compiles beside a held lock took $(($(date +%s) - start)) s"
  kill "$holder" 2>/dev/null
  pkill -P "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
else
  fail "cache ls listed no entry"
fi

# Unwritable folder and full disk: precompile says what it could not store and exits 1.
c=$tmp/readonly
mkdir -p "$c" && chmod 0755 "$c"
if [ "$(id -u)" -ne 0 ]; then
  chmod 0500 "$c"
  run 1 "not stored" "$kjit" precompile "$tmp/manifest.json" --cache-dir "$c"
  chmod 0700 "$c"
elif mount --bind "$c" "$c" 2>/dev/null && mount -o remount,bind,ro "$c" 2>/dev/null; then
  run 1 "not stored" "$kjit" precompile "$tmp/manifest.json" --cache-dir "$c"
else
  echo "SKIPPED: no way to make a folder unwritable here (root without mount)"
fi
c=$tmp/full
mkdir -p "$c"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=16k tmpfs "$c" 2>/dev/null; then
  chmod 0700 "$c"
  run 1 "not stored" "$kjit" precompile "$tmp/manifest.json" --cache-dir "$c/kjit"
else
  echo "SKIPPED: no full disk (mounting a small tmpfs needs root)"
fi

# A thread limit: -j 64 where the system gives few threads uses what it got, never an abort.
# Thread stacks of 1 GiB in 4 GB of address space leave room for a few; that binds root too, whom
# a pids limit may not.
c=$tmp/threads
if (ulimit -s 1048576 && ulimit -v 4000000) 2>/dev/null; then
  run 0 "stored" sh -c 'ulimit -s 1048576; ulimit -v 4000000; exec "$@"' sh \
    "$kjit" precompile "$tmp/manifest.json" --cache-dir "$c" -j 64
else
  echo "SKIPPED: precompile under a thread limit (ulimit -s / -v cannot be set here)"
fi

# Huge names and lines: an error in bounded time with a bounded message.
long=$(head -c 120000 /dev/zero | tr '\0' 'x')
run 1 "error" "$kjit" check --in "T x" --out "T y" --op "y = $long" --types T=float32
[ "$(wc -c <"$tmp/err")" -lt 4096 ] && ok || fail "a 120k-character name gave $(wc -c <"$tmp/err") bytes of diagnostic"
run 0 "is valid" "$kjit" check --in "T x" --out "T y" --op "y = x" --name "$long"
run 1 "error" "$kjit" check --in "T x" --out "T y" --op "y = x" --name "$long-"
[ "$(wc -c <"$tmp/err")" -lt 4096 ] && ok || fail "a bad 120k-character kernel name gave $(wc -c <"$tmp/err") bytes of diagnostic"

echo "attack: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
