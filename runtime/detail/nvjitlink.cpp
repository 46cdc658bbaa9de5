#include "runtime/detail/nvjitlink.hpp"

#include <atomic>
#include <mutex>

#include "kjit/error.hpp"
#include "runtime/detail/dynamic_library.hpp"
#include "runtime/detail/toolkit_library.hpp"

namespace kjit::detail {
namespace {

std::once_flag g_load_once;
NvJitLinkApi g_real;
bool g_real_ok = false;
std::string g_real_error;

// A test's override: when g_override_set, g_override (possibly null = "missing") wins.
std::atomic<const NvJitLinkApi*> g_override{nullptr};
std::atomic<bool> g_override_set{false};

template <class Fn>
void load_entry(const DynamicLibrary& lib, const char* name, Fn& slot, std::string& missing) {
    if (void* fn = lib.symbol(name)) slot = reinterpret_cast<Fn>(fn);
    else missing += std::string(" ") + name;
}

void load_real_nvjitlink() {
    const std::vector<std::string> candidates = nvjitlink_candidates();
    const DynamicLibrary lib = open_first(candidates);
    if (lib.handle == nullptr) {
        std::string tried;
        for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
        g_real_error = "nvJitLink not found (tried " + tried + "): linking relocatable device code (-rdc, -dc) "
                       "and LTO-IR needs it; install the CUDA toolkit's nvJitLink or set KJIT_NVJITLINK_LIBRARY "
                       "to its path";
        return;
    }
    std::string missing;
    load_entry(lib, "nvJitLinkCreate", g_real.nvJitLinkCreate, missing);
    load_entry(lib, "nvJitLinkDestroy", g_real.nvJitLinkDestroy, missing);
    load_entry(lib, "nvJitLinkAddData", g_real.nvJitLinkAddData, missing);
    load_entry(lib, "nvJitLinkAddFile", g_real.nvJitLinkAddFile, missing);
    load_entry(lib, "nvJitLinkComplete", g_real.nvJitLinkComplete, missing);
    load_entry(lib, "nvJitLinkGetLinkedCubinSize", g_real.nvJitLinkGetLinkedCubinSize, missing);
    load_entry(lib, "nvJitLinkGetLinkedCubin", g_real.nvJitLinkGetLinkedCubin, missing);
    load_entry(lib, "nvJitLinkGetErrorLogSize", g_real.nvJitLinkGetErrorLogSize, missing);
    load_entry(lib, "nvJitLinkGetErrorLog", g_real.nvJitLinkGetErrorLog, missing);
    load_entry(lib, "nvJitLinkGetInfoLogSize", g_real.nvJitLinkGetInfoLogSize, missing);
    load_entry(lib, "nvJitLinkGetInfoLog", g_real.nvJitLinkGetInfoLog, missing);
    load_entry(lib, "nvJitLinkVersion", g_real.nvJitLinkVersion, missing);
    if (!missing.empty()) {
        g_real_error = lib.path + " lacks entry points kjit needs:" + missing + " (nvJitLink older than 12.3?)";
        return;
    }
    g_real.library_path = lib.path;
    g_real_ok = true;
}

}  // namespace

std::vector<std::string> nvjitlink_candidates() {
    return toolkit_library_candidates("KJIT_NVJITLINK_LIBRARY",
                                      {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"}, "libnvJitLink.so");
}

const NvJitLinkApi* try_nvjitlink(std::string* why) noexcept {
    if (g_override_set.load(std::memory_order_acquire)) {
        const NvJitLinkApi* api = g_override.load(std::memory_order_acquire);
        if (api == nullptr && why != nullptr) *why = "nvJitLink not available (disabled by a test override): linking "
                                                     "relocatable device code (-rdc, -dc) and LTO-IR needs it";
        return api;
    }
    std::call_once(g_load_once, load_real_nvjitlink);
    if (!g_real_ok) {
        if (why != nullptr) *why = g_real_error;
        return nullptr;
    }
    return &g_real;
}

const NvJitLinkApi& nvjitlink() {
    std::string why;
    if (const NvJitLinkApi* api = try_nvjitlink(&why)) return *api;
    throw NoDeviceError(why);
}

const char* nvjitlink_status_name(int status) noexcept {
    static constexpr const char* kNames[] = {
        "NVJITLINK_SUCCESS", "NVJITLINK_ERROR_UNRECOGNIZED_OPTION", "NVJITLINK_ERROR_MISSING_ARCH",
        "NVJITLINK_ERROR_INVALID_INPUT", "NVJITLINK_ERROR_PTX_COMPILE", "NVJITLINK_ERROR_NVVM_COMPILE",
        "NVJITLINK_ERROR_INTERNAL", "NVJITLINK_ERROR_THREADPOOL", "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        "NVJITLINK_ERROR_FINALIZE", "NVJITLINK_ERROR_NULL_INPUT", "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE", "NVJITLINK_ERROR_ARCH_MISMATCH", "NVJITLINK_ERROR_OUTDATED_LIBRARY",
        "NVJITLINK_ERROR_MISSING_FATBIN", "NVJITLINK_ERROR_UNRECOGNIZED_ARCH", "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        "NVJITLINK_ERROR_LTO_NOT_ENABLED"};
    if (status < 0 || static_cast<std::size_t>(status) >= std::size(kNames)) return "an unknown nvJitLink status";
    return kNames[status];
}

ScopedNvJitLinkOverride::ScopedNvJitLinkOverride(const NvJitLinkApi* api)
    : previous_(g_override.load()), previous_set_(g_override_set.load()) {
    g_override.store(api);
    g_override_set.store(true);
}

ScopedNvJitLinkOverride::~ScopedNvJitLinkOverride() {
    g_override.store(previous_);
    g_override_set.store(previous_set_);
}

}  // namespace kjit::detail
