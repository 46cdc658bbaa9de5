// A __device__ function defined apart from the module that calls it, built by nvcc at build time
// (tests/CMakeLists.txt) into LTO-IR and a relocatable cubin, which raw_link_test.cpp links in.

// y = 2.5 x + 0.5
extern "C" __device__ float link_helper(float x) { return 2.5f * x + 0.5f; }
