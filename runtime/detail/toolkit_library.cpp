#include "runtime/detail/toolkit_library.hpp"

#include <cstdlib>

#ifndef KJIT_CUDA_TOOLKIT_LIBRARY_DIR
#define KJIT_CUDA_TOOLKIT_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace kjit::detail {

std::vector<std::string> toolkit_library_candidates(const char* env_var, std::initializer_list<const char*> sonames,
                                                    const char* file) {
    std::vector<std::string> c;
    if (const char* explicit_path = std::getenv(env_var); explicit_path && *explicit_path) c.emplace_back(explicit_path);
    for (const char* soname : sonames) c.emplace_back(soname);
    for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
        if (const char* dir = std::getenv(var); dir && *dir) c.push_back(std::string(dir) + "/lib64/" + file);
    }
    c.emplace_back(std::string("/usr/local/cuda/lib64/") + file);
    c.emplace_back(std::string(KJIT_CUDA_TOOLKIT_LIBRARY_DIR) + "/" + file);
    return c;
}

}  // namespace kjit::detail
