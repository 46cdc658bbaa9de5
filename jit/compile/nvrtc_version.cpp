#include "jit/compile/nvrtc_version.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"

#ifndef KJIT_CUDA_TOOLKIT_LIBRARY_DIR
#define KJIT_CUDA_TOOLKIT_LIBRARY_DIR "/usr/local/cuda/lib64"
#endif

namespace kjit::jit::compile {
namespace {

const void* version_symbol(const kjit::detail::NvrtcApi& api) {
    if (api.nvrtcVersion == nullptr) throw NoDeviceError("the NVRTC table has no nvrtcVersion");
    return reinterpret_cast<const void*>(api.nvrtcVersion);
}

}  // namespace

std::optional<std::uint64_t> file_xxh3(const std::string& path) {
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) return std::nullopt;
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    std::vector<char> buffer(1 << 20);
    while (const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), f.get()))
        XXH3_64bits_update(&state, buffer.data(), n);
    if (std::ferror(f.get())) return std::nullopt;
    return XXH3_64bits_digest(&state);
}

std::string nvrtc_version_key(const kjit::detail::NvrtcApi& api) {
    // nvrtcVersion says only major.minor; the build comes from the library itself. Preferred: its
    // GNU build ID, which the linker derives from the content and which costs nothing to read from
    // memory. Hashing the file (109 MB for NVRTC 13.0) is the fallback, once per process.
    const void* symbol = version_symbol(api);
    int major = 0;
    int minor = 0;
    KJIT_NVRTC_CHECK(api.nvrtcVersion(&major, &minor));

    static std::mutex mutex;
    static std::map<std::string, std::string> build_by_file;
    const std::string file = loaded_file(symbol);
    std::string build;
    {
        const std::lock_guard lock(mutex);
        if (const auto it = build_by_file.find(file); it != build_by_file.end()) build = it->second;
    }
    if (build.empty()) {
        if (std::string id = elf_build_id(symbol); !id.empty()) {
            build = "bid:" + id;
        } else if (const auto hash = file_xxh3(file)) {
            build = fmt::format("xxh3:{:016x}", *hash);
        } else {
            throw Error(fmt::format("cannot identify the NVRTC build: '{}' has no build ID and cannot be read",
                                    file));
        }
        const std::lock_guard lock(mutex);
        build_by_file.emplace(file, build);
    }
    return fmt::format("nvrtc-{}.{}+{}", major, minor, build);
}

const std::string& toolkit_include_dir(const kjit::detail::NvrtcApi& api) {
    static std::mutex mutex;
    static std::map<std::string, std::string> dir_by_library;
    const std::string library = loaded_file(version_symbol(api));
    const std::lock_guard lock(mutex);
    if (const auto it = dir_by_library.find(library); it != dir_by_library.end()) return it->second;

    namespace fs = std::filesystem;
    std::vector<fs::path> candidates;
    std::error_code ec;
    if (!library.empty()) {
        const fs::path real = fs::canonical(library, ec);
        if (!ec) candidates.push_back(real.parent_path().parent_path() / "include");
    }
    for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
        if (const char* dir = std::getenv(var); dir != nullptr && *dir != '\0')
            candidates.push_back(fs::path(dir) / "include");
    }
    candidates.push_back(fs::path(KJIT_CUDA_TOOLKIT_LIBRARY_DIR).parent_path() / "include");
    candidates.emplace_back("/usr/local/cuda/include");
    candidates.emplace_back("/usr/include");
    std::string found;
    for (const fs::path& dir : candidates) {
        if (fs::exists(dir / "cuda_fp16.h", ec)) {
            found = dir.string();
            break;
        }
    }
    return dir_by_library.emplace(library, found).first->second;
}

}  // namespace kjit::jit::compile
