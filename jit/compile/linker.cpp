#include "jit/compile/linker.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "jit/compile/loaded_library.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/nvjitlink.hpp"

namespace kjit::jit::compile {
namespace {

// Owns one nvJitLinkHandle: destroyed on every path out of link_cubin, errors included.
struct LinkHandle {
    const kjit::detail::NvJitLinkApi& api;
    nvJitLinkHandle handle = nullptr;
    ~LinkHandle() {
        if (handle != nullptr) api.nvJitLinkDestroy(&handle);  // nothing useful to do if this fails
    }
};

nvJitLinkInputType input_type(LinkKind kind) {
    switch (kind) {
        case LinkKind::cubin: return NVJITLINK_INPUT_CUBIN;
        case LinkKind::ptx: return NVJITLINK_INPUT_PTX;
        case LinkKind::ltoir: return NVJITLINK_INPUT_LTOIR;
        case LinkKind::fatbin: return NVJITLINK_INPUT_FATBIN;
        case LinkKind::library: return NVJITLINK_INPUT_LIBRARY;
    }
    return NVJITLINK_INPUT_ANY;
}

// One of nvJitLink's logs (error or info), without trailing NULs and newlines; empty when it
// cannot say.
std::string log_of(const kjit::detail::NvJitLinkApi& api, nvJitLinkHandle h, bool errors) {
    std::size_t size = 0;
    if ((errors ? api.nvJitLinkGetErrorLogSize(h, &size) : api.nvJitLinkGetInfoLogSize(h, &size)) != NVJITLINK_SUCCESS)
        return {};
    std::string log(size, '\0');
    if (size > 0 && (errors ? api.nvJitLinkGetErrorLog(h, log.data()) : api.nvJitLinkGetInfoLog(h, log.data())) != NVJITLINK_SUCCESS)
        return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    return log;
}

std::string input_list(const std::vector<LinkData>& inputs) {
    std::string s;
    for (const LinkData& d : inputs) s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", d.name, link_kind_name(d.kind));
    return s;
}

}  // namespace

const char* link_kind_name(LinkKind kind) noexcept {
    switch (kind) {
        case LinkKind::cubin: return "cubin";
        case LinkKind::ptx: return "PTX";
        case LinkKind::ltoir: return "LTO-IR";
        case LinkKind::fatbin: return "fatbin";
        case LinkKind::library: return "library";
    }
    return "input";
}

std::vector<std::string> link_options(const std::vector<LinkData>& inputs, const std::string& arch) {
    std::vector<std::string> o = {"-arch=" + arch};
    for (const LinkData& d : inputs)
        if (d.kind == LinkKind::ltoir) {
            o.emplace_back("-lto");
            break;
        }
    return o;
}

LinkResult link_cubin(const std::vector<LinkData>& inputs, const std::string& arch, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    const kjit::detail::NvJitLinkApi& api = kjit::detail::nvjitlink();
    if (!arch.starts_with("sm_"))
        throw Error(fmt::format("cannot link {} for {}: nvJitLink links cubins for a real architecture (sm_XX)", what, arch));
    const std::vector<std::string> options = link_options(inputs, arch);
    std::vector<const char*> argv;
    for (const std::string& o : options) argv.push_back(o.c_str());

    LinkHandle link{api};
    const auto fail = [&](const std::string& step, nvJitLinkResult status) {
        std::string opts;
        for (const std::string& o : options) opts += (opts.empty() ? "" : " ") + o;
        throw LinkError(fmt::format("cannot link {} for {}: {} failed ({}); options {}; inputs: {}", what, arch, step,
                                    kjit::detail::nvjitlink_status_name(status), opts, input_list(inputs)),
                        link.handle != nullptr ? log_of(api, link.handle, true) : std::string());
    };
    if (const nvJitLinkResult st = api.nvJitLinkCreate(&link.handle, static_cast<std::uint32_t>(argv.size()), argv.data());
        st != NVJITLINK_SUCCESS)
        fail("nvJitLinkCreate", st);
    for (const LinkData& d : inputs) {
        const nvJitLinkResult st =
            d.bytes.empty() && !d.path.empty()
                ? api.nvJitLinkAddFile(link.handle, input_type(d.kind), d.path.c_str())
                : api.nvJitLinkAddData(link.handle, input_type(d.kind), d.bytes.data(), d.bytes.size(), d.name.c_str());
        if (st != NVJITLINK_SUCCESS) fail(fmt::format("adding {} ({})", d.name, link_kind_name(d.kind)), st);
    }
    if (const nvJitLinkResult st = api.nvJitLinkComplete(link.handle); st != NVJITLINK_SUCCESS) fail("the link", st);
    LinkResult result;
    std::size_t size = 0;
    if (const nvJitLinkResult st = api.nvJitLinkGetLinkedCubinSize(link.handle, &size); st != NVJITLINK_SUCCESS)
        fail("nvJitLinkGetLinkedCubinSize", st);
    result.cubin.resize(size);
    if (size > 0)
        if (const nvJitLinkResult st = api.nvJitLinkGetLinkedCubin(link.handle, result.cubin.data()); st != NVJITLINK_SUCCESS)
            fail("nvJitLinkGetLinkedCubin", st);
    result.log = log_of(api, link.handle, false);
    result.link_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return result;
}

LinkKind link_kind_of(const std::vector<unsigned char>& bytes, const std::string& name) {
    std::uint32_t magic = 0;
    if (bytes.size() >= 4) std::memcpy(&magic, bytes.data(), 4);
    if (bytes.size() >= 4 && std::memcmp(bytes.data(), "\x7f" "ELF", 4) == 0) return LinkKind::cubin;
    if (magic == kFatbinMagic) return LinkKind::fatbin;
    if (magic == kLtoirMagic) return LinkKind::ltoir;
    if (bytes.size() >= 8 && std::memcmp(bytes.data(), "!<arch>\n", 8) == 0) return LinkKind::library;
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (text.find(".target") != std::string_view::npos && text.find('\0') == std::string_view::npos) return LinkKind::ptx;
    throw Error(name + " is neither a cubin (ELF), a fatbin, LTO-IR, a library (.a) nor PTX text: nvJitLink cannot link it");
}

LinkData read_link_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IoError("cannot open the link input " + path + ": " + std::strerror(errno));
    LinkData d;
    d.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw IoError("cannot read the link input " + path + ": " + std::strerror(errno));
    if (d.bytes.empty()) throw IoError("the link input " + path + " is empty");
    d.name = std::filesystem::path(path).filename().string();
    d.kind = link_kind_of(d.bytes, "the link input " + path);
    return d;
}

std::string nvjitlink_version_key() {
    const kjit::detail::NvJitLinkApi& api = kjit::detail::nvjitlink();
    unsigned major = 0, minor = 0;
    if (const nvJitLinkResult st = api.nvJitLinkVersion(&major, &minor); st != NVJITLINK_SUCCESS)
        throw LinkError(fmt::format("nvJitLinkVersion failed ({})", kjit::detail::nvjitlink_status_name(st)), {});
    // The build as for NVRTC (jit/compile/nvrtc_version.cpp): the GNU build ID, else a file hash.
    static std::mutex mutex;
    static std::map<std::string, std::string> build_by_file;
    const void* symbol = reinterpret_cast<const void*>(api.nvJitLinkVersion);
    const std::string file = loaded_file(symbol);
    const std::lock_guard lock(mutex);
    auto it = build_by_file.find(file);
    if (it == build_by_file.end()) {
        std::string build;
        if (std::string id = elf_build_id(symbol); !id.empty()) build = "bid:" + id;
        else if (const auto hash = file_xxh3(file)) build = fmt::format("xxh3:{:016x}", *hash);
        else throw Error(fmt::format("cannot identify the nvJitLink build: '{}' has no build ID and cannot be read", file));
        it = build_by_file.emplace(file, build).first;
    }
    return fmt::format("nvjitlink-{}.{}+{}", major, minor, it->second);
}

}  // namespace kjit::jit::compile
