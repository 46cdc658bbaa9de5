#include "runtime/detail/toolkit_library.hpp"

#include <cstdlib>
#include <string_view>

#ifndef KJIT_CUDA_TOOLKIT_LIBRARY_DIR
#define KJIT_CUDA_TOOLKIT_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace kjit::detail {

std::vector<std::string> toolkit_library_candidates(const char* env_var, std::initializer_list<const char*> sonames,
                                                    const char* file, std::initializer_list<const char*> folders) {
    std::vector<std::string> c;
    if (const char* explicit_path = std::getenv(env_var); explicit_path && *explicit_path) c.emplace_back(explicit_path);
    for (const char* soname : sonames) c.emplace_back(soname);
    // The toolkit kjit was built with: its library folder is the lib64 one; the others are its
    // siblings when it ends in /lib64, and are not guessed otherwise.
    const std::string_view built(KJIT_CUDA_TOOLKIT_LIBRARY_DIR);
    const bool built_is_lib64 = built.size() >= 6 && built.substr(built.size() - 6) == "/lib64";
    for (const char* folder : folders) {
        const std::string sub = std::string("/") + folder + "/" + file;
        for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
            if (const char* dir = std::getenv(var); dir && *dir) c.push_back(std::string(dir) + sub);
        }
        c.emplace_back("/usr/local/cuda" + sub);
        if (std::string_view(folder) == "lib64") c.emplace_back(std::string(built) + "/" + file);
        else if (built_is_lib64) c.emplace_back(std::string(built.substr(0, built.size() - 6)) + sub);
    }
    return c;
}

}  // namespace kjit::detail
