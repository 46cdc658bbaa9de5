// The CUDA device runtime library (libcudadevrt.a), which code that launches kernels from the
// device (dynamic parallelism) is linked with: where it is, and what identifies it in cache keys.
#pragma once

#include <string>
#include <vector>

namespace kjit::jit::compile {

// Where kjit looks for libcudadevrt.a, in order: $KJIT_CUDADEVRT, the folder of the loaded
// nvJitLink (the toolkit's lib64), then the lib64 folders of $CUDA_PATH, $CUDA_HOME,
// /usr/local/cuda and the toolkit kjit was built with.
std::vector<std::string> cudadevrt_candidates();

// The first candidate that is a file. Throws NoDeviceError naming every place tried.
std::string cudadevrt_path();

// "cudadevrt:xxh3:<hex>" of the library's bytes, for cache keys; memoised per path (the toolkit
// does not change under a running process). Throws as cudadevrt_path, IoError when unreadable.
std::string cudadevrt_key();

}  // namespace kjit::jit::compile
