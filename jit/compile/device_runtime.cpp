#include "jit/compile/device_runtime.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "jit/compile/loaded_library.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/nvjitlink.hpp"
#include "runtime/detail/toolkit_library.hpp"

namespace kjit::jit::compile {

std::vector<std::string> cudadevrt_candidates() {
    std::vector<std::string> c = kjit::detail::toolkit_library_candidates("KJIT_CUDADEVRT", {}, "libcudadevrt.a");
    // The toolkit nvJitLink comes from holds the device runtime it is meant to link.
    if (const kjit::detail::NvJitLinkApi* api = kjit::detail::try_nvjitlink(); api != nullptr && api->nvJitLinkVersion) {
        std::error_code ec;
        const std::string library = loaded_file(reinterpret_cast<const void*>(api->nvJitLinkVersion));
        const std::filesystem::path real = library.empty() ? std::filesystem::path() : std::filesystem::canonical(library, ec);
        if (!real.empty() && !ec) {
            const char* env = std::getenv("KJIT_CUDADEVRT");
            c.insert(c.begin() + (env != nullptr && *env != '\0' ? 1 : 0), (real.parent_path() / "libcudadevrt.a").string());
        }
    }
    return c;
}

std::string cudadevrt_path() {
    const std::vector<std::string> candidates = cudadevrt_candidates();
    std::error_code ec;
    for (const std::string& c : candidates)
        if (std::filesystem::is_regular_file(c, ec)) return c;
    std::string tried;
    for (const std::string& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
    throw NoDeviceError("the CUDA device runtime library libcudadevrt.a, which relocatable device code (-rdc, -dc) "
                        "is linked with, was not found (tried " + tried + "): install the CUDA toolkit or set "
                        "KJIT_CUDADEVRT to its path");
}

std::string cudadevrt_key() {
    static std::mutex mutex;
    static std::map<std::string, std::string> by_path;
    const std::string path = cudadevrt_path();
    const std::lock_guard lock(mutex);
    if (const auto it = by_path.find(path); it != by_path.end()) return it->second;
    const auto hash = file_xxh3(path);
    if (!hash) throw IoError("cannot read the CUDA device runtime library " + path);
    return by_path.emplace(path, fmt::format("cudadevrt:xxh3:{:016x}", *hash)).first->second;
}

}  // namespace kjit::jit::compile
