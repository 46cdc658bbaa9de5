// Where kjit looks for a CUDA toolkit library it loads at run time (NVRTC, cuBLAS, NCCL), in order:
// the path in `env_var`, the sonames through the loader's search path, then `file` in the
// `folders` (lib64 unless told otherwise) of $CUDA_PATH, $CUDA_HOME, /usr/local/cuda and the
// toolkit kjit was built with.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

namespace kjit::detail {

std::vector<std::string> toolkit_library_candidates(const char* env_var, std::initializer_list<const char*> sonames,
                                                    const char* file,
                                                    std::initializer_list<const char*> folders = {"lib64"});

}  // namespace kjit::detail
