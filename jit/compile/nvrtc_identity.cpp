#include "jit/compile/nvrtc_identity.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string_view>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/file_io.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit::jit::compile {
namespace {

// One `name=value` line per field, in this order, after a first line naming the format. Plain
// lines rather than JSON: a fresh process reads this file before its first cached call, and
// parsing it is part of what that call costs.
constexpr const char* kRecordName = "nvrtc-identity";
constexpr std::string_view kFormatLine = "kjit-nvrtc-identity 1\n";

// What decides which libnvrtc the loader opens (runtime/detail/nvrtc.cpp).
constexpr const char* kEnvironment[] = {"KJIT_NVRTC_LIBRARY", "LD_LIBRARY_PATH", "CUDA_PATH", "CUDA_HOME"};

// One `name=value` line, appended in place (no temporaries: this runs on a fresh process's first
// cached call, where each distinct piece of code touched costs cache misses).
void add_line(std::string& out, std::string_view name, std::string_view value) {
    out.append(name);
    out.push_back('=');
    out.append(value);
    out.push_back('\n');
}
template <class Int>
void add_number(std::string& out, std::string_view name, Int value) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, value);
    add_line(out, name, std::string_view(digits, static_cast<std::size_t>(r.ptr - digits)));
}

// The value of line `name=` starting at `pos`, and `pos` moved past it; nothing if the line is
// not that field.
std::optional<std::string_view> field(std::string_view text, std::size_t& pos, std::string_view name) {
    if (text.substr(pos, name.size()) != name || text.substr(pos + name.size(), 1) != "=") return std::nullopt;
    const std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view value = text.substr(pos + name.size() + 1, end - pos - name.size() - 1);
    pos = end + 1;
    return value;
}

}  // namespace

std::string nvrtc_identity_lines(std::string_view library) {
    std::string out;
    out.reserve(512);
    for (const char* var : kEnvironment) {
        const char* v = std::getenv(var);
        add_line(out, var, v != nullptr ? v : "");
    }
    struct stat st {};
    if (library.empty() || ::stat(std::string(library).c_str(), &st) != 0) return {};
    add_line(out, "path", library);
    add_number(out, "size", static_cast<std::uint64_t>(st.st_size));
    add_number(out, "mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec);
    add_number(out, "inode", static_cast<std::uint64_t>(st.st_ino));
    // A value holding a line break would be read back as two lines: no identity then.
    if (static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')) != std::size(kEnvironment) + 4) return {};
    return out;
}

// Compared line by line in place, as nvrtc_identity_lines() would write them now: this is the
// check a fresh process's first cached call makes, where building those lines to compare them
// was most of its cost.
std::size_t held_identity_lines(std::string_view text) {
    std::size_t pos = 0;
    for (const char* var : kEnvironment) {
        const std::optional<std::string_view> held = field(text, pos, var);
        const char* now = std::getenv(var);
        if (!held || *held != std::string_view(now != nullptr ? now : "")) return 0;
    }
    const std::optional<std::string_view> path = field(text, pos, "path");
    char file[4096];
    if (!path || path->empty() || path->size() >= sizeof file) return 0;
    path->copy(file, path->size());
    file[path->size()] = '\0';
    struct stat st {};
    if (::stat(file, &st) != 0) return 0;
    auto same_number = [&](std::string_view name, auto value) {
        const std::optional<std::string_view> held = field(text, pos, name);
        char digits[24];
        const auto r = std::to_chars(digits, digits + sizeof digits, value);
        return held && *held == std::string_view(digits, static_cast<std::size_t>(r.ptr - digits));
    };
    if (!same_number("size", static_cast<std::uint64_t>(st.st_size)) ||
        !same_number("mtime_ns", static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) ||
        !same_number("inode", static_cast<std::uint64_t>(st.st_ino)))
        return 0;
    return pos;
}

std::optional<NvrtcIdentity> loaded_nvrtc_identity() {
    if (!kjit::detail::nvrtc_loaded()) return std::nullopt;
    try {
        const kjit::detail::NvrtcApi& api = kjit::detail::nvrtc();
        NvrtcIdentity id{nvrtc_version_key(), nvrtc_supported_archs(),
                         nvrtc_identity_lines(loaded_file(reinterpret_cast<const void*>(api.nvrtcVersion)))};
        if (id.lines.empty() || id.version_key.find('\n') != std::string::npos) return std::nullopt;
        return id;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

namespace {
// The record file in `cache_dir`, whole; nothing when it cannot be read.
std::optional<std::string> read_record(const std::string& cache_dir) {
    if (cache_dir.empty()) return std::nullopt;
    std::string text;
    // open/read rather than stdio: read before a fresh process's first cached call.
    // Not through a symlink (to /dev/zero, say), a FIFO does not block the open, and only a
    // regular file of a record's size is read.
    const int fd = ::open((cache_dir + "/" + kRecordName).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    constexpr off_t kMaxRecordBytes = 64 * 1024;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxRecordBytes) {
        ::close(fd);
        return std::nullopt;
    }
    char buf[4096];
    ssize_t got;
    // Bounded by the size limit too, not only by fstat's size: a file that grows while it is read
    // is no record either.
    while ((got = ::read(fd, buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)) {
        if (got > 0) text.append(buf, static_cast<std::size_t>(got));
        if (text.size() > static_cast<std::size_t>(kMaxRecordBytes)) {
            ::close(fd);
            return std::nullopt;
        }
    }
    ::close(fd);
    if (got < 0) return std::nullopt;
    return text;
}
}  // namespace

std::optional<NvrtcIdentity> remembered_nvrtc(const std::string& cache_dir) {
    const std::optional<std::string> record = read_record(cache_dir);
    if (!record) return std::nullopt;
    const std::string& text = *record;
    // Format line, environment and file lines (compared with what they are now), version, archs.
    const std::string_view head = kFormatLine;
    if (std::string_view(text).substr(0, head.size()) != head) return std::nullopt;
    const std::size_t lines = held_identity_lines(std::string_view(text).substr(head.size()));
    if (lines == 0) return std::nullopt;
    std::size_t pos = head.size() + lines;
    const std::optional<std::string_view> version = field(text, pos, "version_key");
    const std::optional<std::string_view> archs = field(text, pos, "archs");
    // A damaged record is no record: an empty list, or one ending in a comma, among the rest.
    if (!version || !archs || version->empty() || archs->empty() || archs->back() == ',' || pos != text.size())
        return std::nullopt;
    NvrtcIdentity id{std::string(*version), {}, text.substr(head.size(), lines)};
    id.supported_archs.reserve(static_cast<std::size_t>(std::count(archs->begin(), archs->end(), ',')) + 1);
    for (const char *at = archs->data(), *end = at + archs->size(); at != end;) {
        int v = 0;
        const auto r = std::from_chars(at, end, v);
        if (r.ec != std::errc() || v <= 0) return std::nullopt;
        id.supported_archs.push_back(v);
        at = r.ptr;
        if (at != end && *at++ != ',') return std::nullopt;
    }
    return id;
}

void remember_nvrtc(const std::string& cache_dir) {
    if (cache_dir.empty() || !kjit::detail::nvrtc_loaded()) return;
    try {
        const std::optional<NvrtcIdentity> id = loaded_nvrtc_identity();
        if (!id) return;
        std::string archs;
        for (const int a : id->supported_archs) archs += (archs.empty() ? "" : ",") + std::to_string(a);
        const std::string record = std::string(kFormatLine) + id->lines + "version_key=" + id->version_key + "\narchs=" + archs + "\n";
        // A temporary of a random name (never one a symlink could be planted at ahead), with the
        // mode of the cache's other files (readable by others only if the folder is); not
        // fsynced: a record lost in a crash is a miss.
        const std::string error = cache::replace_file(cache_dir + "/" + kRecordName, record, cache::file_mode_in(cache_dir),
                                                      cache::ModeIs::exact, /*durable=*/false);
        if (!error.empty()) kjit::detail::log(kjit::detail::LogLevel::debug, "cannot remember the NVRTC loaded: " + error);
        std::remove((cache_dir + "/nvrtc-identity.json").c_str());  // the JSON record of kjit before 2026-12-01
    } catch (const std::exception&) {
        // only a shortcut: without it the next process loads NVRTC to learn its version
    }
}

}  // namespace kjit::jit::compile
