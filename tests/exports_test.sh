#!/bin/bash
# libkjit.so exports its public API (include/kjit/, marked KJIT_API) and nothing of kjit's
# internals (kjit::jit, kjit::cache, kjit::detail): they stay free to change between versions.
# Usage: exports_test.sh path/to/libkjit.so
set -euo pipefail
lib=$1
symbols=$(nm -D --defined-only "$lib" | c++filt)
internal=$(grep -E ' kjit::(jit|cache|detail)::' <<<"$symbols" || true)
if [ -n "$internal" ]; then
  echo "libkjit.so exports kjit's internals:" >&2
  head -20 <<<"$internal" >&2
  exit 1
fi
# A few of the public API's entry points, so that a build that exports nothing fails too.
for want in 'kjit::ElementwiseKernel::ElementwiseKernel' 'kjit::Array::empty' 'kjit::cache_stats()' \
            'typeinfo for kjit::Error' 'kjit::ReductionKernel::operator()'; do
  if ! grep -qF " $want" <<<"$symbols"; then
    echo "libkjit.so does not export $want" >&2
    exit 1
  fi
done
echo "libkjit.so exports $(wc -l <<<"$symbols") symbols, none of kjit's internals"
