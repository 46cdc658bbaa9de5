#!/usr/bin/env bash
# Builds the parser fuzzer (libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer, Debian's
# clang-14) and runs it for a bounded time over the lexer, the parser and the parameter lists.
#   tools/fuzz.sh [OUT_DIR] [SECONDS]     (defaults: build-fuzz, 60)
# A crash, leak, hang (5 s per input) or undefined behaviour fails the run and leaves the input in
# OUT_DIR/crash-*; what it found grows the corpus in OUT_DIR/corpus for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build-fuzz}
seconds=${2:-60}
mkdir -p "$out/corpus"

sources=(tests/fuzz/parser_fuzzer.cpp jit/frontend/source.cpp jit/frontend/lexer.cpp jit/frontend/parser.cpp
         jit/frontend/parser_expressions.cpp jit/frontend/parser_statements.cpp jit/frontend/params.cpp jit/frontend/struct_decl.cpp
         runtime/dtype.cpp runtime/error.cpp runtime/detail/driver.cpp runtime/detail/dynamic_library.cpp
         runtime/detail/log.cpp)
binary="$out/parser_fuzzer"
# Rebuild only when a source is newer than the binary.
if [ ! -x "$binary" ] || [ -n "$(find "${sources[@]}" jit/frontend/*.hpp include/kjit/*.hpp -newer "$binary" | head -1)" ]; then
  clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I. -Iinclude -I/usr/local/cuda/include "${sources[@]}" -ldl -o "$binary"
fi
"$binary" "$out/corpus" -dict=tests/fuzz/parser_fuzzer.dict -max_total_time="$seconds" -max_len=4096 -timeout=5 \
  -artifact_prefix="$out/" -print_final_stats=1 2>&1 | tail -n 12
