#!/usr/bin/env bash
# Installs the Debian packages kjit's build and tests need, when they are missing.
# Safe to run again: it only calls apt-get when something is absent.
set -euo pipefail

packages=(
  cmake g++ make
  catch2                 # test framework (2.13, header only)
  nlohmann-json3-dev     # manifests and cache metadata
  libcli11-dev           # the kjit command line
  libfmt-dev             # formatting (used header-only, so nothing extra at run time)
  libxxhash-dev          # cache keys and checksums (used header-only)
  libdlpack-dev          # DLPack exchange
  clang-14 libclang-rt-14-dev   # the parser fuzzer (libFuzzer) in tools/test.sh
  llvm-19-dev            # the host back end (libkjit_host: kernels on host arrays through LLVM)
  g++-aarch64-linux-gnu file   # the aarch64 cross build in tools/test.sh (tools/cross-aarch64.sh)
  dpkg-dev pkgconf lintian     # the .deb packages (cpack -G DEB: dpkg-shlibdeps), their test (tools/package-test.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "tools/setup.sh: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
