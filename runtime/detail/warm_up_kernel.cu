// The empty kernel that runtime/detail/driver_warm_up.cpp loads (and may launch) on a new
// context before an application's first kernel, built into a fat binary for every architecture
// the toolkit targets (CMakeLists.txt) and carried in libkjit.
extern "C" __global__ void kjit_warm_up() {}
