#include "jit/nvrtc_identity.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "jit/arch.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/nvrtc_version.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit {
namespace {

constexpr const char* kRecordName = "nvrtc-identity.json";

// What decides which libnvrtc the loader opens (runtime/detail/nvrtc.cpp).
nlohmann::json environment() {
    nlohmann::json env = nlohmann::json::object();
    for (const char* var : {"KJIT_NVRTC_LIBRARY", "LD_LIBRARY_PATH", "CUDA_PATH", "CUDA_HOME"}) {
        const char* v = std::getenv(var);
        env[var] = v != nullptr ? v : "";
    }
    return env;
}

// The file's identity: a replaced or rebuilt library changes at least one of these.
std::optional<nlohmann::json> file_identity(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return std::nullopt;
    return nlohmann::json{{"path", path},
                          {"size", static_cast<std::uint64_t>(st.st_size)},
                          {"mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec},
                          {"inode", static_cast<std::uint64_t>(st.st_ino)}};
}

}  // namespace

std::optional<NvrtcIdentity> remembered_nvrtc(const std::string& cache_dir) {
    if (cache_dir.empty()) return std::nullopt;
    try {
        // Read whole, then parsed from memory: parsing through an istream costs more than the rest.
        std::string text;
        {
            FILE* f = std::fopen((cache_dir + "/" + kRecordName).c_str(), "rb");
            if (f == nullptr) return std::nullopt;
            char buf[4096];
            for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
            std::fclose(f);
        }
        const nlohmann::json record = nlohmann::json::parse(text);
        if (record.at("environment") != environment()) return std::nullopt;
        const std::optional<nlohmann::json> now = file_identity(record.at("file").at("path").get<std::string>());
        if (!now || *now != record.at("file")) return std::nullopt;
        return NvrtcIdentity{record.at("version_key").get<std::string>(),
                             record.at("archs").get<std::vector<int>>()};
    } catch (const std::exception&) {
        return std::nullopt;  // a damaged record is no record
    }
}

void remember_nvrtc(const std::string& cache_dir) {
    if (cache_dir.empty() || !kjit::detail::nvrtc_loaded()) return;
    try {
        const kjit::detail::NvrtcApi& api = kjit::detail::nvrtc();
        const std::optional<nlohmann::json> file =
            file_identity(detail::loaded_file(reinterpret_cast<const void*>(api.nvrtcVersion)));
        if (!file) return;
        const nlohmann::json record{{"environment", environment()},
                                    {"file", *file},
                                    {"version_key", nvrtc_version_key()},
                                    {"archs", nvrtc_supported_archs()}};
        const std::string path = cache_dir + "/" + kRecordName;
        const std::string tmp = path + ".tmp." + std::to_string(::getpid());
        {
            std::ofstream out(tmp, std::ios::trunc);
            out << record.dump() << "\n";
            if (!out) return;
        }
        if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
    } catch (const std::exception&) {
        // only a shortcut: without it the next process loads NVRTC to learn its version
    }
}

}  // namespace kjit::jit
