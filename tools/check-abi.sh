#!/usr/bin/env bash
# Checks libkjit.so's ABI surface against abi/libkjit<MAJOR>.symbols (docs/ABI.md):
#   - the soname is libkjit.so.<MAJOR of include/kjit/version.hpp>;
#   - the exported symbols are exactly those listed (a new one or a missing one fails);
#   - each lies in kjit's public namespace (not kjit::jit, kjit::cache, kjit::detail, nor std);
#   - each function declared `KJIT_API name(` in include/kjit/ is exported.
# tools/check-abi.sh [--update] path/to/libkjit.so
#   --update rewrites the list from the library: kept symbols keep their version, new ones get
#   the current version. Review the diff: a removed symbol needs a new major version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
lib=${1:?usage: tools/check-abi.sh [--update] path/to/libkjit.so}

version_part() { sed -n "s/^#define KJIT_VERSION_$1 \([0-9]*\)$/\1/p" "$root/include/kjit/version.hpp"; }
major=$(version_part MAJOR)
version="$major.$(version_part MINOR).$(version_part PATCH)"
list="$root/abi/libkjit$major.symbols"
tmp=$(mktemp -d /tmp/kjit-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libkjit.so.$major" ]; then
  echo "check-abi: $lib has soname '$soname', not libkjit.so.$major (docs/ABI.md)" >&2
  fail=1
fi

# Defined dynamic symbols, mangled: the ABI. _init and _fini are the loader's, not kjit's.
nm -D --defined-only "$lib" | awk '{print $NF}' | grep -vxE '_init|_fini' | LC_ALL=C sort -u >"$tmp/exported"

if [ "$update" -eq 1 ]; then
  [ -f "$list" ] && grep -E '^ ' "$list" | sed 's/^ //; s/@Base / /' >"$tmp/old" || : >"$tmp/old"
  {
    echo "# libkjit's exported symbols, each with the version that added it (docs/ABI.md)."
    echo "# Checked by tools/check-abi.sh (ctest kjit.abi); regenerate: tools/check-abi.sh --update build/libkjit.so"
    echo "libkjit.so.$major libkjit$major #MINVER#"
    while read -r sym; do
      added=$(awk -v s="$sym" '$1 == s {print $2}' "$tmp/old")
      echo " $sym@Base ${added:-$version}"
    done <"$tmp/exported"
  } >"$list"
  removed=$(LC_ALL=C comm -23 <(awk '{print $1}' "$tmp/old" | LC_ALL=C sort -u) "$tmp/exported")
  echo "check-abi: wrote $list ($(wc -l <"$tmp/exported") symbols)"
  if [ -n "$removed" ]; then
    echo "check-abi: these symbols were removed, which needs a new major version (docs/ABI.md):" >&2
    c++filt <<<"$removed" >&2
  fi
  exit 0
fi

if [ ! -f "$list" ]; then
  echo "check-abi: no $list: make it with tools/check-abi.sh --update $lib" >&2
  exit 1
fi
grep -E '^ ' "$list" | sed 's/^ //; s/@Base .*//' | LC_ALL=C sort -u >"$tmp/listed"
added=$(LC_ALL=C comm -13 "$tmp/listed" "$tmp/exported")
removed=$(LC_ALL=C comm -23 "$tmp/listed" "$tmp/exported")
if [ -n "$added" ]; then
  echo "check-abi: $lib exports symbols that abi/$(basename "$list") does not list:" >&2
  c++filt <<<"$added" | sed 's/^/  + /' >&2
  echo "  (an intended addition: tools/check-abi.sh --update $lib, and commit the list)" >&2
  fail=1
fi
if [ -n "$removed" ]; then
  echo "check-abi: $lib lacks symbols that abi/$(basename "$list") lists (an ABI break: docs/ABI.md):" >&2
  c++filt <<<"$removed" | sed 's/^/  - /' >&2
  fail=1
fi

# Every exported symbol is kjit's public API: kjit::..., or the typeinfo, virtual table... of a kjit class.
c++filt <"$tmp/exported" >"$tmp/demangled"
outside=$(grep -vE '^((typeinfo|typeinfo name|vtable|VTT|construction vtable|guard variable) for |non-virtual thunk to |virtual thunk to )?kjit::' "$tmp/demangled" || true)
internal=$(grep -E '(^| )kjit::(jit|cache|detail)::' "$tmp/demangled" || true)
if [ -n "$outside$internal" ]; then
  echo "check-abi: $lib exports symbols outside kjit's public API:" >&2
  printf '%s\n%s\n' "$outside" "$internal" | sed '/^$/d; s/^/  /' | head -40 >&2
  fail=1
fi

# Every function the headers declare KJIT_API (at the start of a line) is exported.
missing=""
while read -r name; do
  grep -qE "(^|[ :])kjit::([A-Za-z_0-9]+::)*$name(\[abi:cxx11\])?\(" "$tmp/demangled" || missing+="  $name"$'\n'
done < <(grep -hoE '^KJIT_API [^;(]*[^A-Za-z_0-9(]([A-Za-z_][A-Za-z_0-9]*)\(' "$root"/include/kjit/*.hpp |
         sed -E 's/.*[^A-Za-z_0-9]([A-Za-z_][A-Za-z_0-9]*)\($/\1/' | LC_ALL=C sort -u)
if [ -n "$missing" ]; then
  echo "check-abi: functions declared KJIT_API in include/kjit/ that $lib does not export:" >&2
  printf '%s' "$missing" >&2
  fail=1
fi

[ "$fail" -eq 0 ] && echo "check-abi: $lib ($soname) exports the $(wc -l <"$tmp/exported") symbols of abi/$(basename "$list"), all kjit's public API"
exit "$fail"
