#!/usr/bin/env bash
# The kjit command line: exit statuses (0 ok, 1 user error) and the exact diagnostic format.
#   tests/cli_test.sh PATH/TO/kjit
set -u
kjit=${1:?usage: cli_test.sh PATH/TO/kjit}
tmp=$(mktemp -d)
# Mounts a case below made (read-only binds, a full tmpfs) go first, innermost first.
trap 'awk -v t="$tmp" '"'"'index($2, t) == 1 {print $2}'"'"' /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null; rm -rf "$tmp"' EXIT
export KJIT_CACHE_DIR="$tmp/cache"  # never the user's cache
passed=0
failed=0

# expect STATUS EXPECTED_STDERR_OR_STDOUT_SUBSTRING -- ARGS...
expect() {
  local want_status=$1 want_text=$2
  shift 3
  "$kjit" "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  if [ "$status" -eq "$want_status" ] && grep -qF -- "$want_text" "$tmp/out" "$tmp/err"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: kjit $* -> status $status (wanted $want_status), output:"
    cat "$tmp/out" "$tmp/err"
    echo "(wanted to see: $want_text)"
  fi
}

expect 0 "kernel 'axpb' is valid for T=float32" -- check --in "T x, T a, T b" --out "T y" --op "y = a * x + b" --name axpb --types T=float32
expect 0 "is valid for some types of T" -- check --in "T x" --out "T y" --op "y = x % 2"
expect 1 "% needs integer operands, not float32 and int32" -- check --in "T x" --out "T y" --op "y = x % 2" --types T=float32
expect 1 "unknown type 'flaot32'" -- check --in "flaot32 x" --out "float32 y" --op "y = x"
expect 1 "missing --op" -- check --in "T x" --out "T y"
expect 1 "must look like T=float32" -- check --in "T x" --out "T y" --op "y = x" --types T
expect 1 "A subcommand is required" --
# CuPy's forms (issue 29): NVRTC's -D options as constants, loop_prep and after_loop.
expect 0 "y = x * (FACTOR);" -- source --in "T x" --out "T y" --op "y = x * FACTOR" --nvrtc-option=-DFACTOR=3 --types T=float32
expect 1 "unknown name 'FACTOR'" -- check --in "T x" --out "T y" --op "y = x * FACTOR" --types T=float32
expect 0 "kernel_prep(" -- source --in "T x, raw T t" --out "T y" --op "y = x * s" --loop-prep "T s = t[0];" --after-loop "s = 0;" --types T=float32
expect 1 "are for elementwise kernels" -- check --in "T x" --out "T y" --map x --reduce "a + b" --post "y = a" --loop-prep "int k = 0;"
cat > "$tmp/hooks.json" <<'JSON'
{"kind": "elementwise", "name": "hooks", "in": "T x, raw T t", "out": "T y", "op": "y = x * s",
 "loop_prep": "T s = t[0] * FACTOR;", "after_loop": "s = 0;", "options": ["-DFACTOR=2"], "types": [{"T": "float64"}]}
JSON
expect 0 "_kjit_state.s = t[0] * (FACTOR);" -- source --spec "$tmp/hooks.json"

# The diagnostic is exactly where:LINE:COL, the source line, the caret and the hint.
"$kjit" check --in "T x" --out "T y" --op $'y = x;\ny = sqr(x);' >"$tmp/out" 2>"$tmp/err"
printf 'op:2:5: error: unknown function %s\ny = sqr(x);\n    ^\nhint: did you mean %s?\n' "'sqr'" "'sqrt'" >"$tmp/want"
if cmp -s "$tmp/err" "$tmp/want"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAILED: diagnostic format:"; cat "$tmp/err"; fi

# source and compile, from flags and from a spec file.
expect 0 "y = a * x + b;" -- source --in "T x, T a, T b" --out "T y" --op "y = a * x + b" --types T=float64
expect 1 "needs types for the placeholders (T)" -- source --in "T x" --out "T y" --op "y = x"
cat >"$tmp/spec.json" <<'JSON'
{"kind": "elementwise", "name": "axpb", "in": "T x, T a, T b", "out": "T y",
 "op": "y = a * x + b", "types": [{"T": "float32"}, {"T": "float64"}]}
JSON
expect 0 "kernel 'axpb' is valid for T=float64" -- check --spec "$tmp/spec.json"
expect 1 "works on one type binding; the spec has 2" -- compile --spec "$tmp/spec.json"
expect 0 "written to $tmp/axpb.cubin" -- compile --spec "$tmp/spec.json" --types T=float32 --arch sm_90 -o "$tmp/axpb.cubin"
if [ "$(head -c 4 "$tmp/axpb.cubin" | od -An -c | tr -d ' ')" = "177ELF" ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAILED: the cubin is not an ELF file"; fi
expect 0 "for sm_80" -- compile --spec "$tmp/spec.json" --types T=float32 --arch sm_80 -o "$tmp/axpb.ptx"
grep -q ".entry axpb_contiguous32" "$tmp/axpb.ptx" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: PTX lacks the entry"; }
expect 1 "must end in .cubin or .ptx" -- compile --spec "$tmp/spec.json" --types T=float32 -o "$tmp/axpb.bin"
# Issue 30: -o F wrote the fixed name F.tmp, through whatever symlink was planted there.
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/planted.cubin.tmp"
expect 0 "written to $tmp/planted.cubin" -- compile --spec "$tmp/spec.json" --types T=float32 --arch sm_90 -o "$tmp/planted.cubin"
[ "$(cat "$tmp/victim")" = precious ] && [ -f "$tmp/planted.cubin" ] && [ ! -L "$tmp/planted.cubin" ] && passed=$((passed + 1)) \
  || { failed=$((failed + 1)); echo "FAILED: kjit compile -o wrote through a planted symlink"; }
expect 1 "arch='sm90' is not a GPU architecture" -- compile --spec "$tmp/spec.json" --types T=float32 --arch sm90
echo '{"in": 3, "out": "T y", "op": "y = x"}' >"$tmp/bad.json"
expect 1 "\"in\" must be a string" -- check --spec "$tmp/bad.json"
echo '{"in": "T x", "out": "T y", "op": "y = x", "options": "-lineinfo"}' >"$tmp/badopt.json"
expect 1 "\"options\" must be a list of strings" -- check --spec "$tmp/badopt.json"
echo '{"in": "T x", "out": "T y", "op": "y = x", "options": ["-lineinfo"], "types": [{"T": "int8"}]}' >"$tmp/opt.json"
expect 0 "for sm_90" -- compile --spec "$tmp/opt.json" --arch sm_90
echo '{"in": ' >"$tmp/broken.json"
expect 1 "is not valid JSON" -- check --spec "$tmp/broken.json"

# Reduction kernels: --map/--reduce/--post/--identity/--reduce-type, or a spec of "kind": "reduction".
l2=(--in "T x" --out "T y" --map "x * x" --reduce "a + b" --post "y = sqrt(a)" --identity 0 --name l2)
expect 0 "kernel 'l2' is valid for T=float32" -- check "${l2[@]}" --types T=float32
expect 0 "kernel 'l2' is valid for some types of T" -- check "${l2[@]}"
expect 1 "map:1:1: error: unknown function 'sqr'" -- check --in "T x" --out "T y" --map "sqr(x)" --reduce "a + b" --post "y = a"
expect 1 "reduce:1:5: error: unknown name 'c'" -- check --in "T x" --out "T y" --map x --reduce "a + c" --post "y = a"
expect 1 "identity:1:4: error: expected an expression" -- check --in "T x" --out "T y" --map x --reduce "a + b" --post "y = a" --identity "0 +" --types T=float32
expect 1 "reduce_type:1:1: error: unknown reduce type 'flot64'" -- check "${l2[@]}" --reduce-type flot64 --types T=float32
expect 1 "--op is for elementwise kernels" -- check "${l2[@]}" --op "y = x"
expect 1 "missing --post" -- check --in "T x" --out "T y" --map x --reduce "a + b"
expect 1 "missing --map" -- check --in "T x" --out "T y" --reduce "a + b" --post "y = a"
expect 1 "--identity is for reductions" -- check --in "T x" --out "T y" --op "y = x" --identity 0
expect 1 "--reduce-type is for reductions" -- check --in "T x" --out "T y" --op "y = x" --reduce-type float64
expect 0 "// kjit reduction kernel 'l2'" -- source "${l2[@]}" --types T=float64
expect 0 "reduce type: float64" -- source "${l2[@]}" --reduce-type float64 --types T=float32
expect 1 "needs types for the placeholders (T)" -- source "${l2[@]}"
expect 0 "entry points: l2_full32 l2_full64" -- compile "${l2[@]}" --types T=float32 --arch sm_90 -o "$tmp/l2.cubin"
if [ "$(head -c 4 "$tmp/l2.cubin" | od -An -c | tr -d ' ')" = "177ELF" ]; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAILED: the reduction's cubin is not an ELF file"; fi
expect 0 "reduce type int64, no identity" -- compile --in "T x" --out "T y" --map x --reduce "max(a, b)" --post "y = a" --reduce-type int64 --types T=int32 --arch sm_90
cat >"$tmp/l2.json" <<'JSON'
{"kind": "reduction", "name": "l2", "in": "T x", "out": "T y", "map": "x * x",
 "reduce": "a + b", "post": "y = sqrt(a)", "identity": "0", "types": [{"T": "float32"}, {"T": "float64"}]}
JSON
expect 0 "kernel 'l2' is valid for T=float64" -- check --spec "$tmp/l2.json"
expect 1 "works on one type binding; the spec has 2" -- compile --spec "$tmp/l2.json"
expect 0 "compiled 'l2' (T=float64) for sm_90" -- compile --spec "$tmp/l2.json" --types T=float64 --arch sm_90
expect 1 "give either --spec or --map, not both" -- check --spec "$tmp/l2.json" --map x
echo '{"kind": "reduction", "in": "T x", "out": "T y", "map": "x", "post": "y = a"}' >"$tmp/noreduce.json"
expect 1 "missing \"reduce\"" -- check --spec "$tmp/noreduce.json"
echo '{"kind": "reduction", "in": "T x", "out": "T y", "map": "x", "reduce": "a + b", "post": "y = a", "identity": 0}' >"$tmp/badid.json"
expect 1 "\"identity\" must be a string" -- check --spec "$tmp/badid.json"

# record -> precompile -> cache commands. 60 modules, as calls load them: two elementwise kernels
# (seven variants each) and a reduction (a module per strategy and index width, small and bins in one: 16), for two
# architectures.
export KJIT_CACHE_DIR="$tmp/app-cache"
KJIT_CACHE_RECORD="$tmp/m.json" "$kjit" compile --spec "$tmp/spec.json" --types T=float32 --arch sm_90 >/dev/null
KJIT_CACHE_RECORD="$tmp/m.json" "$kjit" compile --in "T x" --out "T y" --op "y = x * 2" --name twice --types T=int32 --arch sm_90 >/dev/null
KJIT_CACHE_RECORD="$tmp/m.json" "$kjit" compile "${l2[@]}" --reduce-type float64 --types T=float32 --arch sm_90 >/dev/null
grep -q '"name": "twice"' "$tmp/m.json" && grep -q '"name": "axpb"' "$tmp/m.json" && grep -q '"kind": "reduction"' "$tmp/m.json" \
  && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: the recorded manifest lacks a kernel"; cat "$tmp/m.json"; }
expect 0 "60 compiled, 60 stored, 0 not stored, 0 already cached, 0 failed" -- precompile "$tmp/m.json" --arch sm_80,sm_90 --cache-dir "$tmp/shipped" -j 2
expect 0 "0 compiled, 0 stored, 0 not stored, 60 already cached, 0 failed" -- precompile "$tmp/m.json" --arch sm_80,sm_90 --cache-dir "$tmp/shipped"
expect 0 "60 entries" -- cache stats --cache-dir "$tmp/shipped"
expect 0 "last used" -- cache ls --cache-dir "$tmp/shipped"
expect 0 "60 entries checked, 0 damaged; 0 damaged plan notes; 0 damaged aliases" -- cache verify --cache-dir "$tmp/shipped"
# Two aliases' files exchanged (issue 30): each names the other alias, which verify reports.
aliases=($(find "$tmp/shipped" -name '*.alias' | sort | head -2))
cp "${aliases[0]}" "$tmp/alias0" && cp "${aliases[1]}" "${aliases[0]}" && cp "$tmp/alias0" "${aliases[1]}"
expect 1 "damaged alias: ${aliases[0]}" -- cache verify --cache-dir "$tmp/shipped"
cp "${aliases[0]}" "${aliases[1]}" && cp "$tmp/alias0" "${aliases[0]}"
expect 0 "0 damaged aliases" -- cache verify --cache-dir "$tmp/shipped"
victim=$(find "$tmp/shipped" -name '*.kjit' | head -1)
printf 'X' | dd of="$victim" bs=1 seek=100 conv=notrunc status=none
expect 1 "damaged: $victim" -- cache verify --cache-dir "$tmp/shipped"
expect 0 "bytes left" -- cache prune --cache-dir "$tmp/shipped" --max-bytes 0
expect 0 "0 entries" -- cache stats --cache-dir "$tmp/shipped"
expect 0 "cleared" -- cache clear --cache-dir "$tmp/app-cache"
echo '{"kernels": [{"kind": "elementwise", "name": "bad", "in": "T x", "out": "T y", "op": "y = sqr(x)", "types": [{"T": "float32"}]}]}' >"$tmp/badm.json"
expect 1 "unknown function 'sqr'" -- precompile "$tmp/badm.json" --arch sm_90 --cache-dir "$tmp/x"
expect 1 "\"kernels\" must be a list" -- precompile "$tmp/bad.json" --arch sm_90 --cache-dir "$tmp/x"
echo '{"kernels": [{"kind": "reduction", "name": "badr", "in": "T x", "out": "T y", "map": "x", "reduce": "a + b", "types": [{"T": "float32"}]}]}' >"$tmp/badr.json"
expect 1 "kernel 0 ('badr'): missing \"post\"" -- precompile "$tmp/badr.json" --arch sm_90 --cache-dir "$tmp/x"

# Issue 30: what could not be stored or removed is said, and fails the command. A folder is made
# unwritable by a read-only bind mount for root (who writes anywhere), by mode 0500 otherwise.
make_unwritable() {
  if [ "$(id -u)" -ne 0 ]; then chmod 0500 "$1"; return; fi
  mount --bind "$1" "$1" 2>/dev/null || return 1
  mount -o remount,bind,ro "$1" 2>/dev/null || { umount "$1"; return 1; }
}
make_writable() { if [ "$(id -u)" -ne 0 ]; then chmod 0700 "$1"; else umount "$1"; fi; }
skipped() { echo "SKIPPED: $1 (cannot make a folder unwritable or mount a tmpfs here)"; }
echo '{"kernels": [{"kind": "elementwise", "name": "twice", "in": "T x", "out": "T y", "op": "y = x * 2", "types": [{"T": "int32"}]}]}' >"$tmp/small.json"
expect 0 "7 compiled, 7 stored, 0 not stored" -- precompile "$tmp/small.json" --arch sm_90 --cache-dir "$tmp/c2" -j 2
mkdir -m 0700 "$tmp/ro-empty"
if make_unwritable "$tmp/ro-empty"; then
  expect 1 "7 compiled, 0 stored, 7 not stored, 0 already cached, 0 failed" -- precompile "$tmp/small.json" --arch sm_90 --cache-dir "$tmp/ro-empty" -j 2
  expect 1 "7 compiled kernel builds were not stored in $tmp/ro-empty" -- precompile "$tmp/small.json" --arch sm_90 --cache-dir "$tmp/ro-empty"
  make_writable "$tmp/ro-empty"
  make_unwritable "$tmp/c2"
  expect 1 "cannot clear $tmp/c2: the folder cannot be written to" -- cache clear --cache-dir "$tmp/c2"
  make_writable "$tmp/c2"
  [ "$(find "$tmp/c2" -name '*.kjit' | wc -l)" -eq 7 ] && passed=$((passed + 1)) \
    || { failed=$((failed + 1)); echo "FAILED: cache clear of an unwritable folder removed entries"; }
  # A shard whose files cannot be removed: the rest goes, and what is left is named.
  shard=$(dirname "$(find "$tmp/c2" -name '*.kjit' | head -1)")
  make_unwritable "$shard"
  expect 1 "could not be removed" -- cache clear --cache-dir "$tmp/c2"
  expect 1 "kjit cache clear: cannot remove $shard/" -- cache clear --cache-dir "$tmp/c2"
  make_writable "$shard"
else
  skipped "precompile into, and cache clear of, an unwritable folder"
fi
if [ "$(id -u)" -eq 0 ] && mkdir "$tmp/full" && mount -t tmpfs -o size=16k tmpfs "$tmp/full" 2>/dev/null; then
  expect 1 "not stored in $tmp/full/cache" -- precompile "$tmp/small.json" --arch sm_90 --cache-dir "$tmp/full/cache" -j 2
  umount "$tmp/full"
else
  skipped "precompile onto a full disk"
fi
# A FIFO as an entry (nothing would ever write to it) neither blocks verify nor passes it.
fifo=$(find "$tmp/c2" -name '*.kjit' | head -1)
rm "$fifo" && mkfifo -m 0600 "$fifo"
expect 1 "damaged: $fifo: not a regular file" -- cache verify --cache-dir "$tmp/c2"
expect 1 "no cache folder $tmp/nowhere" -- cache verify --cache-dir "$tmp/nowhere"
expect 1 "no cache folder $tmp/nowhere" -- cache clear --cache-dir "$tmp/nowhere"
[ ! -e "$tmp/nowhere" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: cache clear made the folder"; }
export KJIT_CACHE_DIR="$tmp/cache"

# kjit run: mistakes are found before the GPU is needed.
run_kernel=(--in "T x, T a" --out "T y" --op "y = a * x")
expect 1 "the kernel has no parameter 'b'" -- run "${run_kernel[@]}" --arg x=x.npy --arg b=2
expect 1 "not a .npy file nor a number" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2.5x
expect 1 "the kernel has no output 'x'" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2 --save x=o.npy
expect 1 "must end in .npy" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2 --save y=o.txt
expect 1 "input 'x' needs a value" -- run "${run_kernel[@]}" --arg a=2
expect 1 "--axis is for reductions" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2 --axis 0
expect 1 "--keepdims is for reductions" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2 --keepdims
expect 1 "--axis '0,x': write axes as integers" -- run "${l2[@]}" --arg x=x.npy --axis 0,x
expect 1 "--axis '': write axes as integers" -- run "${l2[@]}" --arg x=x.npy --axis ""
expect 1 "--size is for elementwise kernels" -- run "${l2[@]}" --arg x=x.npy --size 10
expect 1 "input 'x' needs a value" -- run "${l2[@]}" --axis 1
expect 1 "the kernel has no output 'x'" -- run "${l2[@]}" --arg x=x.npy --save x=o.npy
if "$kjit" info | grep -q "^devices: [1-9]" && python3 -c "import numpy" 2>/dev/null; then
  # On a GPU: a real run against NumPy.
  python3 -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng().standard_normal((37, 41)).astype(np.float32))"
  expect 0 "y: float32 (37, 41) -> $tmp/y.npy" -- run "${run_kernel[@]}" --arg x="$tmp/x.npy" --arg a=float32:2.5 --save y="$tmp/y.npy"
  if python3 -c "import numpy as np; x = np.load('$tmp/x.npy'); y = np.load('$tmp/y.npy'); assert y.dtype == np.float32 and np.array_equal(y, np.float32(2.5) * x)"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAILED: kjit run's y.npy is not 2.5 * x"
  fi
  # Reductions against NumPy: float64 sums (one order of addition against another: close, not equal).
  python3 -c "import numpy as np; np.save('$tmp/x64.npy', np.random.default_rng().standard_normal((37, 41, 5)))"
  sum=(--in "T x" --out "T y" --map x --reduce "a + b" --post "y = a" --identity 0 --name total)
  expect 0 "y: float64 (37, 5) -> $tmp/s1.npy" -- run "${sum[@]}" --arg x="$tmp/x64.npy" --axis 1 --save y="$tmp/s1.npy"
  expect 0 "y: float64 (1, 41, 1) -> $tmp/s02.npy" -- run "${sum[@]}" --arg x="$tmp/x64.npy" --axis 0,-1 --keepdims --save y="$tmp/s02.npy"
  expect 0 "y: float32 () -> $tmp/l2.npy" -- run "${l2[@]}" --arg x="$tmp/x.npy" --save y="$tmp/l2.npy"
  if python3 -c "
import numpy as np
x = np.load('$tmp/x64.npy'); x32 = np.load('$tmp/x.npy')
s1 = np.load('$tmp/s1.npy'); s02 = np.load('$tmp/s02.npy'); l2 = np.load('$tmp/l2.npy')
assert s1.shape == (37, 5) and np.allclose(s1, x.sum(axis=1), rtol=1e-12, atol=1e-12)
assert s02.shape == (1, 41, 1) and np.allclose(s02, x.sum(axis=(0, 2), keepdims=True), rtol=1e-12, atol=1e-12)
assert l2.dtype == np.float32 and l2.shape == () and np.isclose(l2, np.sqrt((x32.astype(np.float64) ** 2).sum()), rtol=1e-5)
"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAILED: kjit run's reductions differ from NumPy's"
  fi
else
  expect 1 "kjit run needs a GPU for --device gpu" -- run "${run_kernel[@]}" --arg x=x.npy --arg a=2 --device gpu
  expect 1 "kjit run needs a GPU for --device gpu" -- run "${l2[@]}" --arg x=x.npy --axis -1 --axis 0 --keepdims --device gpu
fi
# The host back end (when built: libkjit_host.so beside libkjit) against NumPy, GPU or not.
if [ -e "$(dirname "$kjit")/libkjit_host.so" ] && /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 -c "import numpy as np; np.save('$tmp/xc.npy', np.random.default_rng().standard_normal((37, 41)).astype(np.float32))"
  expect 0 "y: float32 (37, 41) -> $tmp/yc.npy" -- run "${run_kernel[@]}" --arg x="$tmp/xc.npy" --arg a=float32:2.5 --save y="$tmp/yc.npy" --device cpu
  if /usr/bin/python3 -c "import numpy as np; x = np.load('$tmp/xc.npy'); y = np.load('$tmp/yc.npy'); assert y.dtype == np.float32 and np.array_equal(y, np.float32(2.5) * x)"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAILED: kjit run --device cpu's y.npy is not 2.5 * x"
  fi
  # Reductions on the CPU against NumPy, and the same bits with one thread as with every core
  # (75850 elements: three chunks of the host pool).
  /usr/bin/python3 -c "import numpy as np; np.save('$tmp/xr.npy', np.random.default_rng().standard_normal((370, 41, 5)))"
  sum=(--in "T x" --out "T y" --map x --reduce "a + b" --post "y = a" --identity 0 --name total)
  expect 0 "y: float64 (1, 41, 1) -> $tmp/sc.npy" -- run "${sum[@]}" --arg x="$tmp/xr.npy" --axis 0,-1 --keepdims --save y="$tmp/sc.npy" --device cpu
  expect 0 "y: float64 () -> $tmp/sa.npy" -- run "${sum[@]}" --arg x="$tmp/xr.npy" --save y="$tmp/sa.npy" --device cpu
  KJIT_HOST_THREADS=1 expect 0 "y: float64 () -> $tmp/sa1.npy" -- run "${sum[@]}" --arg x="$tmp/xr.npy" --save y="$tmp/sa1.npy" --device cpu
  if /usr/bin/python3 -c "
import numpy as np
x = np.load('$tmp/xr.npy'); sc = np.load('$tmp/sc.npy'); sa = np.load('$tmp/sa.npy'); sa1 = np.load('$tmp/sa1.npy')
assert sc.shape == (1, 41, 1) and np.allclose(sc, x.sum(axis=(0, 2), keepdims=True), rtol=1e-12, atol=1e-12)
assert np.isclose(sa, x.sum(), rtol=1e-12, atol=1e-12) and sa.tobytes() == sa1.tobytes()
"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); echo "FAILED: kjit run --device cpu's reductions differ from NumPy's"
  fi
fi

# kjit demo: flag errors; then, on a GPU, every scenario at 1% of its size checked against the CPU,
# else the no-GPU path (compiles the kernels into the cache, says no GPU was found, exits 0).
# has TEXT: the last command's stdout contains TEXT.
has() {
  if grep -qF -- "$1" "$tmp/out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: kjit demo's output lacks: $1"; cat "$tmp/out"; fi
}
expect 1 "--scenario: 6 not in {1,2,3,4,5,all}" -- demo --scenario 6
expect 1 "--size-scale: must be a number in (0, 1], not '0'" -- demo --size-scale 0
expect 1 "--size-scale: must be a number in (0, 1], not '2'" -- demo --size-scale 2
expect 1 "--size-scale: must be a number in (0, 1], not '1e-3x'" -- demo --size-scale 1e-3x
if "$kjit" info | grep -q "^devices: [1-9]"; then
  expect 0 "Every result matched the CPU's." -- demo --size-scale 0.01
  has "check: all 3,000,000 values equal the CPU's, bit for bit"
  has " float64: (1000 x 1000) @ (1000 x 1000)"
  has " float32: (1000 x 1000) @ (1000 x 1000)"
  [ "$(grep -c "check: 64 sampled entries match" "$tmp/out")" -eq 2 ] && passed=$((passed + 1)) \
    || { failed=$((failed + 1)); echo "FAILED: kjit demo did not check both matrix products"; }
  has "check: all 800 days match the CPU's"
  has "GPU: kjit kernel"
  has "copy host -> device"
  has "GPU: kjit graph replays"
  has "check: the graph's results equal the calls' bit for bit"
  has "GPU: one fused kjit kernel"
  has "check: all 1,000,000 values within 6e-7 of double precision"
  expect 0 "Every result matched the CPU's." -- demo --size-scale 0.001 --scenario 3
else
  expect 0 "No GPU was found" -- demo --size-scale 0.001
  has "scenario 1  elementwise demo_add_scalar (T=float64)"
  has "scenario 2  matmul: cuBLAS's GEMM, nothing to compile"
  has "scenario 3  kjit_segments (group_sorted_keys)"
  has "scenario 3  reduction demo_day_mean (T=float64)"
  has "scenario 4  reduction demo_energy (T=float64)"
  has "scenario 5  expression sqrt(a*x + b) * c (float32)"
  has "13 compiled by NVRTC, 0 found in the kernel cache"
  expect 0 "0 compiled by NVRTC, 13 found in the kernel cache" -- demo
  expect 0 "No GPU was found" -- demo --scenario 2
  has "0 compiled by NVRTC, 0 found in the kernel cache"
fi

# kjit bench --crossover: CSV of sizes 10^3.. (the GPU columns empty without a GPU); flag errors.
expect 0 "n,cpu_1_thread_ms," -- bench --crossover --max-exp 4 --csv "$tmp/cross.csv"
if [ "$(wc -l < "$tmp/cross.csv")" -eq 3 ] && grep -q '^10000,[0-9.e-]*,[0-9.e-]*,' "$tmp/cross.csv"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAILED: crossover CSV:"; cat "$tmp/cross.csv"; fi
expect 1 "--max-exp" -- bench --crossover --max-exp 12

# Issue 30: precompile and run against a strained machine and hostile files.
# with_limits SETUP [PREFIX]: makes "$kjit" a wrapper that runs SETUP (ulimit settings), then
# kjit behind PREFIX (e.g. timeout 20), until the next call of without_limits.
kjit_plain=$kjit
with_limits() {
  printf '#!/bin/sh\n%s\nexec %s "%s" "$@"\n' "$1" "${2:-}" "$kjit_plain" >"$tmp/kjit-limited"
  chmod +x "$tmp/kjit-limited"
  kjit=$tmp/kjit-limited
}
without_limits() { kjit=$kjit_plain; }
# check NAME CONDITION...: passes when the command succeeds.
check() {
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; cat "$tmp/out" "$tmp/err"; fi
}
cat >"$tmp/m30.json" <<'JSON'
{"kernels": [
 {"kind": "elementwise", "name": "p", "in": "T x", "out": "T y", "op": "y = x", "types": [{"T": "float32"}, {"T": "float64"}]},
 {"kind": "elementwise", "name": "q", "in": "T x", "out": "T y", "op": "y = x + 1", "types": [{"T": "int32"}]}]}
JSON
# -j 8 where the system gives fewer threads (the issue's -j 64 under a pids limit aborted): thread
# stacks of 1 GiB in 4 GB of address space leave room for a few. This binds root too, whom a pids
# limit or RLIMIT_NPROC may not.
if (ulimit -s 1048576 && ulimit -v 4000000) 2>/dev/null; then
  with_limits "ulimit -s 1048576; ulimit -v 4000000"
  expect 0 "threads asked for" -- precompile "$tmp/m30.json" --arch sm_90 --cache-dir "$tmp/few-threads" -j 8
  without_limits
else
  echo "SKIPPED: precompile with few threads (ulimit -s / -v cannot be set here)"
fi
# An architecture that cannot be compiled for is reported once, not once per job.
sed 's/^{"kernels"/{"arch": ["sm_9x"], "kernels"/' "$tmp/m30.json" >"$tmp/arch30.json"
expect 1 "arch='sm_9x' is not a GPU architecture" -- precompile "$tmp/arch30.json" --cache-dir "$tmp/arch30"
check "precompile reports a bad architecture once" [ "$(grep -c "failed: " "$tmp/err")" -eq 1 ]
# kjit run: a FIFO is refused at once (it blocked forever), a device too.
mkfifo "$tmp/fifo.npy"
with_limits ":" "timeout 20"
expect 1 "is a FIFO (named pipe), not a regular file" -- run "${run_kernel[@]}" --arg x="$tmp/fifo.npy" --arg a=2 --device cpu
without_limits
ln -s /dev/zero "$tmp/zero.npy"
expect 1 "is a character device, not a regular file" -- run "${run_kernel[@]}" --arg x="$tmp/zero.npy" --arg a=2 --device cpu
# npy_file FILE HEADER: a version 1.0 .npy preamble with this header dict (padded, '\n'-ended).
npy_file() {
  local header="$2" len
  while [ $(( (10 + ${#header} + 1) % 64 )) -ne 0 ]; do header="$header "; done
  len=$(( ${#header} + 1 ))
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o $((len & 255)))\\$(printf %03o $((len >> 8)))"; printf '%s\n' "$header"; } >"$1"
}
# An 8 GiB array that this process cannot allocate (its address space is capped at 2 GB): the
# file and the size are named; it was "internal error: std::bad_alloc".
npy_file "$tmp/big.npy" "{'descr': '|u1', 'fortran_order': False, 'shape': (8589934592,), }"
if truncate -s $((128 + 8589934592)) "$tmp/big.npy" 2>/dev/null; then
  with_limits "ulimit -v 2000000"
  expect 1 "'$tmp/big.npy': its data, shape (8589934592,) of uint8, is 8589934592 bytes (8192 MiB), more than this process can allocate" -- run "${run_kernel[@]}" --arg x="$tmp/big.npy" --arg a=2 --device cpu
  without_limits
else
  echo "SKIPPED: kjit run of an 8 GiB sparse .npy (truncate cannot make one here)"
fi
rm -f "$tmp/big.npy"
# A header that claims more data than the file has is damaged: said before allocating.
npy_file "$tmp/claims.npy" "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
expect 1 "the data is truncated: shape (1099511627776,) of float64 needs 8796093022208 bytes but the file has 0" -- run "${run_kernel[@]}" --arg x="$tmp/claims.npy" --arg a=2 --device cpu
# A header key carrying an escape sequence reaches the terminal escaped.
npy_file "$tmp/esc.npy" "$(printf "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\033[2Jboo': 1}")"
expect 1 "unexpected key '\\x1b[2Jboo'" -- run "${run_kernel[@]}" --arg x="$tmp/esc.npy" --arg a=2 --device cpu
check "kjit run prints no raw escape byte from a file" [ "$(grep -c "$(printf '\033')" "$tmp/err")" -eq 0 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
