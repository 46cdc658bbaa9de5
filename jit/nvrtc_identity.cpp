#include "jit/nvrtc_identity.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jit/nvrtc_compiler.hpp"
#include "jit/nvrtc_version.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit {
namespace {

// One `name=value` line per field, in this order, after a first line naming the format. Plain
// lines rather than JSON: a fresh process reads this file before its first cached call, and
// parsing it is part of what that call costs.
constexpr const char* kRecordName = "nvrtc-identity";
constexpr const char* kFormat = "kjit-nvrtc-identity 1";

// What decides which libnvrtc the loader opens (runtime/detail/nvrtc.cpp).
constexpr const char* kEnvironment[] = {"KJIT_NVRTC_LIBRARY", "LD_LIBRARY_PATH", "CUDA_PATH", "CUDA_HOME"};

// The fields that must match now for the record to hold: the environment, then the library
// file's identity (a replaced or rebuilt library changes at least one of size, mtime, inode).
// Empty when the file cannot be seen or a value could not be written on one line.
std::string identity_lines(const std::string& library) {
    std::string out;
    for (const char* var : kEnvironment) {
        const char* v = std::getenv(var);
        out += std::string(var) + "=" + (v != nullptr ? v : "") + "\n";
    }
    struct stat st {};
    if (library.empty() || ::stat(library.c_str(), &st) != 0) return {};
    out += "path=" + library + "\n";
    out += "size=" + std::to_string(static_cast<std::uint64_t>(st.st_size)) + "\n";
    out += "mtime_ns=" + std::to_string(static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) + "\n";
    out += "inode=" + std::to_string(static_cast<std::uint64_t>(st.st_ino)) + "\n";
    // A value holding a line break would be read back as two lines: no record then.
    std::size_t lines = 0;
    for (char c : out) lines += c == '\n';
    return lines == std::size(kEnvironment) + 4 ? out : std::string();
}

// The value of line `name=` starting at `pos`, and `pos` moved past it; nothing if the line is
// not that field.
std::optional<std::string> field(const std::string& text, std::size_t& pos, const std::string& name) {
    if (text.compare(pos, name.size() + 1, name + "=") != 0) return std::nullopt;
    const std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) return std::nullopt;
    std::string value = text.substr(pos + name.size() + 1, end - pos - name.size() - 1);
    pos = end + 1;
    return value;
}

}  // namespace

std::optional<NvrtcIdentity> remembered_nvrtc(const std::string& cache_dir) {
    if (cache_dir.empty()) return std::nullopt;
    std::string text;
    {
        // open/read rather than stdio: read before a fresh process's first cached call.
        const int fd = ::open((cache_dir + "/" + kRecordName).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return std::nullopt;
        char buf[4096];
        ssize_t got;
        while ((got = ::read(fd, buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR))
            if (got > 0) text.append(buf, static_cast<std::size_t>(got));
        ::close(fd);
        if (got < 0) return std::nullopt;
    }
    // Format line, environment and file lines (compared with what they are now), version, archs.
    const std::string head = std::string(kFormat) + "\n";
    if (text.compare(0, head.size(), head) != 0) return std::nullopt;
    std::size_t pos = head.size();
    for (const char* var : kEnvironment)
        if (!field(text, pos, var)) return std::nullopt;
    const std::optional<std::string> path = field(text, pos, "path");
    if (!path) return std::nullopt;
    const std::string now = identity_lines(*path);
    if (now.empty() || text.compare(head.size(), now.size(), now) != 0) return std::nullopt;
    pos = head.size() + now.size();
    const std::optional<std::string> version = field(text, pos, "version_key");
    const std::optional<std::string> archs = field(text, pos, "archs");
    if (!version || !archs || version->empty() || pos != text.size()) return std::nullopt;
    NvrtcIdentity id{*version, {}};
    for (std::size_t at = 0; at < archs->size();) {
        char* end = nullptr;
        const long v = std::strtol(archs->c_str() + at, &end, 10);
        if (end == archs->c_str() + at || v <= 0) return std::nullopt;  // a damaged record is no record
        id.supported_archs.push_back(static_cast<int>(v));
        at = static_cast<std::size_t>(end - archs->c_str());
        if (at < archs->size() && (*archs)[at++] != ',') return std::nullopt;
    }
    if (id.supported_archs.empty()) return std::nullopt;
    return id;
}

void remember_nvrtc(const std::string& cache_dir) {
    if (cache_dir.empty() || !kjit::detail::nvrtc_loaded()) return;
    try {
        const kjit::detail::NvrtcApi& api = kjit::detail::nvrtc();
        const std::string identity = identity_lines(detail::loaded_file(reinterpret_cast<const void*>(api.nvrtcVersion)));
        const std::string version = nvrtc_version_key();
        if (identity.empty() || version.find('\n') != std::string::npos) return;
        std::string archs;
        for (const int a : nvrtc_supported_archs()) archs += (archs.empty() ? "" : ",") + std::to_string(a);
        const std::string record = std::string(kFormat) + "\n" + identity + "version_key=" + version + "\narchs=" + archs + "\n";
        const std::string path = cache_dir + "/" + kRecordName;
        const std::string tmp = path + ".tmp." + std::to_string(::getpid());
        FILE* f = std::fopen(tmp.c_str(), "wb");
        if (f == nullptr) return;
        const bool written = std::fwrite(record.data(), 1, record.size(), f) == record.size();
        if (std::fclose(f) != 0 || !written || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
        std::remove((cache_dir + "/nvrtc-identity.json").c_str());  // the JSON record of kjit before 2026-12-01
    } catch (const std::exception&) {
        // only a shortcut: without it the next process loads NVRTC to learn its version
    }
}

}  // namespace kjit::jit
