# Cross-compiling libkjit and the kjit CLI for aarch64 Linux (GH200, Grace Blackwell) on an x86-64
# Debian machine with g++-aarch64-linux-gnu: tools/cross-aarch64.sh uses it. Nothing built here runs
# here; the build proves the sources and the build files are not tied to x86-64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Programs (nvcc for find_package(CUDAToolkit)) come from the build machine; libraries and headers
# from the target's folders first. kjit's dependencies are header-only here (fmt, nlohmann-json,
# CLI11, xxhash, DLPack, the CUDA headers: libcuda and libnvrtc are loaded at run time), so their
# build-machine packages serve both.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# fmt's package files lie in the build machine's multiarch folder (kjit uses fmt header-only).
set(fmt_DIR /usr/lib/x86_64-linux-gnu/cmake/fmt CACHE PATH "fmt's package files")
