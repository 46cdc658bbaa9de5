#!/usr/bin/env bash
# Builds kjit's .deb packages from a release build folder and uses them without the source tree
# (issue 37; .ci/run through tools/test.sh):
#   1. cpack -G DEB; the packages' Depends (no GPU driver, no CUDA) and libkjit.so.0's NEEDED;
#   2. every package unpacked (dpkg -x) into a scratch root;
#   3. a CMake project (tests/package_consumer, copied out) finds kjit there with find_package,
#      builds, and runs a first kernel on host arrays through libkjit-host0;
#   4. the same program built with `c++ $(pkg-config --cflags --libs kjit)`;
#   5. `kjit --version`, `kjit info` and `kjit run --device cpu` from kjit-tools;
#   6. a root without libkjit-host0: the host kernel's error says how to install it;
#   7. lintian on the packages: no errors.
#   tools/package-test.sh [BUILD_DIR]     (default: build; scratch files in a mktemp folder)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/kjit-package-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
step() { echo "== package test: $*"; }

step "cpack -G DEB in $build"
rm -rf "$build/packages"
(cd "$build" && cpack -G DEB >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
debs=("$build"/packages/*.deb)
for want in libkjit0 libkjit-dev libkjit-host0 kjit-tools; do
  ls "$build"/packages/"${want}"_*.deb >/dev/null 2>&1 || { echo "no $want package made" >&2; ls "$build/packages" >&2; exit 1; }
done
for deb in "${debs[@]}"; do
  name=$(dpkg-deb -f "$deb" Package)
  depends=$(dpkg-deb -f "$deb" Depends)
  printf '%-14s %8s bytes  Depends: %s\n' "$name" "$(stat -c %s "$deb")" "$depends"
  if grep -qiE 'cuda|nvidia|nvrtc|cublas' <<<"$depends"; then
    echo "$name depends on a GPU driver or CUDA: $depends" >&2; exit 1
  fi
  case $name in
    libkjit-dev|libkjit-host0) grep -qE "(^|, )libkjit0 \(= " <<<"$depends" || { echo "$name: no libkjit0 (= version)" >&2; exit 1; } ;;
    kjit-tools) grep -qE "(^|, )libkjit0 " <<<"$depends" || { echo "$name: no libkjit0" >&2; exit 1; } ;;
  esac
  [ "$name" = libkjit-host0 ] && { grep -q libllvm19 <<<"$depends" || { echo "libkjit-host0 does not depend on libllvm19" >&2; exit 1; }; }
  [ "$name" = libkjit0 ] && { grep -q libc6 <<<"$depends" || { echo "libkjit0 has no dpkg-shlibdeps Depends" >&2; exit 1; }; }
done

step "unpack into a scratch root (dpkg -x)"
root=$work/root
for deb in "${debs[@]}"; do dpkg -x "$deb" "$root"; done
lib=$(dirname "$(find "$root" -name 'libkjit.so.0' | head -1)")
[ -n "$lib" ] || { echo "no libkjit.so.0 in the packages" >&2; exit 1; }
prefix=$root/usr
needed=$(readelf -d "$lib/libkjit.so.0" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "libkjit.so.0 NEEDED: $needed"
if grep -qE 'libcuda|libnvrtc|libcublas|libnvJitLink|libLLVM' <<<"$needed"; then
  echo "libkjit.so.0 links a CUDA or LLVM library (they are loaded at run time)" >&2; exit 1
fi
# Nothing from the build or source tree may be used from here on.
export LD_LIBRARY_PATH=$lib
unset KJIT_HOST_BACKEND
export KJIT_CACHE_DIR=$work/cache

step "CMake consumer (find_package(kjit))"
cp -r "$src/tests/package_consumer" "$work/consumer"
cmake -S "$work/consumer" -B "$work/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
grep -q "^kjit_DIR:PATH=$prefix/" "$work/consumer-build/CMakeCache.txt" || { echo "find_package(kjit) found kjit outside the root" >&2; grep kjit_DIR "$work/consumer-build/CMakeCache.txt" >&2; exit 1; }
cmake --build "$work/consumer-build" >/dev/null
ldd "$work/consumer-build/consumer" | grep -q "libkjit.so.0 => $lib/" || { echo "consumer does not load the root's libkjit" >&2; exit 1; }
"$work/consumer-build/consumer" --need-host

step "pkg-config consumer (c++ \$(pkg-config --cflags --libs kjit))"
flags=$(PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config --cflags --libs kjit)
echo "pkg-config --cflags --libs kjit: $flags"
echo "pkg-config --modversion kjit: $(PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config --modversion kjit)"
# shellcheck disable=SC2086
c++ $flags "$work/consumer/main.cpp" -o "$work/pc-consumer"
"$work/pc-consumer" --need-host

step "kjit-tools"
"$prefix/bin/kjit" --version
"$prefix/bin/kjit" info
# x.npy = float32 [1, 2, 3, 4], written by hand (no numpy needed); y = 2 * x on the host back end.
header="{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
while [ $(( (10 + ${#header} + 1) % 64 )) -ne 0 ]; do header+=" "; done
{ printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( (${#header} + 1) % 256 )))\\x$(printf %02x $(( (${#header} + 1) / 256 )))"
  printf '%s\n' "$header"; printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40'; } >"$work/x.npy"
"$prefix/bin/kjit" run --in "T x, T a" --out "T y" --op "y = a * x" --arg x="$work/x.npy" --arg a=float32:2 \
  --save y="$work/y.npy" --device cpu
y=$(tail -c 16 "$work/y.npy" | od -An -tf4 | xargs)
[ "$y" = "2 4 6 8" ] || { echo "kjit run --device cpu: y = $y, not 2 4 6 8" >&2; exit 1; }
echo "kjit run --device cpu: y = $y"

step "without libkjit-host0 the host kernel says how to install it"
bare=$work/bare
for deb in "$build"/packages/libkjit0_*.deb "$build"/packages/libkjit-dev_*.deb; do dpkg -x "$deb" "$bare"; done
bare_lib=$(dirname "$(find "$bare" -name 'libkjit.so.0' | head -1)")
LD_LIBRARY_PATH=$bare_lib "$work/pc-consumer" --no-host

step "lintian"
if ! command -v lintian >/dev/null; then echo "no lintian (tools/setup.sh installs it)" >&2; exit 1; fi
# Tags lintian reports, with their severity; any error (E:) fails.
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" | tee "$work/lintian.log" || {
  echo "lintian reports errors on the packages" >&2; exit 1; }
echo "lintian: $(grep -c '^E:' "$work/lintian.log" || true) errors, $(grep -c '^W:' "$work/lintian.log" || true) warnings"
echo "== package test: passed"
