#!/usr/bin/env bash
# Copies what tools/run-gpu-tests.sh needs from a build folder (the kjit program, libkjit and the
# test binary, in the same layout) into a small folder that can travel to the GPU machine: the
# build folder itself holds objects and precompiled headers that need not travel.
#   tools/pack-for-gpu.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=${1:?usage: pack-for-gpu.sh BUILD_DIR OUT_DIR}
out=${2:?usage: pack-for-gpu.sh BUILD_DIR OUT_DIR}
rm -rf "$out"
mkdir -p "$out/tests"
cp -a "$build"/kjit "$build"/kjit-probe "$build"/libkjit.so* "$out/"
cp -a "$build/tests/kjit_tests" "$build/tests/kjit_saved_graph_replay" "$out/tests/"
# The nvcc-built binaries the raw_image tests load (beside kjit_tests), when the build made them.
if [ -d "$build/tests/binaries" ]; then cp -a "$build/tests/binaries" "$out/tests/"; fi
if compgen -G "$build/examples/kjit_example_*" > /dev/null; then
  mkdir -p "$out/examples"
  cp -a "$build"/examples/kjit_example_* "$out/examples/"
fi
# The host back end's outputs for the [gpu] agreement test (the GPU machine has no LLVM to make
# them): written here when the build has the host back end, read there by run-gpu-tests.sh.
if [ -e "$build/libkjit_host.so" ]; then
  KJIT_HOST_REFERENCE_DIR="$out/host-reference" "$build/tests/kjit_tests" "[host-reference]" > /dev/null
fi
# The docs' C++ blocks (cmake/doc_snippets.cmake), run there by run-gpu-tests.sh.
if compgen -G "$build/tests/kjit_doc_*" > /dev/null; then
  cp -a "$build"/tests/kjit_doc_* "$out/tests/"
fi
du -sh "$out"
