#include "runtime/detail/nvrtc.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/dynamic_library.hpp"
#include "runtime/detail/toolkit_library.hpp"

namespace kjit::detail {
namespace {

std::once_flag g_load_once;
std::atomic<bool> g_load_attempted{false};
NvrtcApi g_real;
bool g_real_ok = false;
std::string g_real_error;

// A test's override: when g_override_set, g_override (possibly null = "missing") wins.
std::atomic<const NvrtcApi*> g_override{nullptr};
std::atomic<bool> g_override_set{false};

void load_real_nvrtc() {
    const std::vector<std::string> candidates = nvrtc_candidates();
    const DynamicLibrary lib = open_first(candidates);
    if (lib.handle == nullptr) {
        std::string tried;
        for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
        g_real_error = "NVRTC not found (tried " + tried + "): install the CUDA toolkit's NVRTC, set "
                       "KJIT_NVRTC_LIBRARY to its path, or use kernels from a precompiled cache";
        return;
    }
    std::string missing;
#define KJIT_LOAD_ENTRY(name)                                                           \
    if (void* fn = lib.symbol(#name))                                                   \
        g_real.name = reinterpret_cast<decltype(g_real.name)>(fn);                      \
    else                                                                                \
        missing += " " #name;
    KJIT_NVRTC_FUNCTIONS(KJIT_LOAD_ENTRY)
#undef KJIT_LOAD_ENTRY
    if (!missing.empty()) {
        g_real_error = lib.path + " lacks entry points kjit needs:" + missing + " (NVRTC older than 12.0?)";
        return;
    }
    g_real.library_path = lib.path;
    g_real_ok = true;
}

}  // namespace

std::vector<std::string> nvrtc_candidates() {
    return toolkit_library_candidates("KJIT_NVRTC_LIBRARY", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "libnvrtc.so");
}

const NvrtcApi* try_nvrtc(std::string* why) noexcept {
    if (g_override_set.load(std::memory_order_acquire)) {
        const NvrtcApi* api = g_override.load(std::memory_order_acquire);
        if (api == nullptr && why != nullptr) *why = "NVRTC not available (disabled by a test override)";
        return api;
    }
    std::call_once(g_load_once, [] {
        load_real_nvrtc();
        g_load_attempted.store(true, std::memory_order_release);
    });
    if (!g_real_ok) {
        if (why != nullptr) *why = g_real_error;
        return nullptr;
    }
    return &g_real;
}

bool nvrtc_loaded() noexcept {
    if (g_override_set.load(std::memory_order_acquire)) return g_override.load(std::memory_order_acquire) != nullptr;
    return g_load_attempted.load(std::memory_order_acquire) && g_real_ok;
}

const NvrtcApi& nvrtc() {
    std::string why;
    if (const NvrtcApi* api = try_nvrtc(&why)) return *api;
    throw NoDeviceError(why);
}

ScopedNvrtcOverride::ScopedNvrtcOverride(const NvrtcApi* api)
    : previous_(g_override.load()), previous_set_(g_override_set.load()) {
    g_override.store(api);
    g_override_set.store(true);
}

ScopedNvrtcOverride::~ScopedNvrtcOverride() {
    g_override.store(previous_);
    g_override_set.store(previous_set_);
}

void throw_nvrtc_error(int status, const char* call, const char* file, int line) {
    std::string text = "unknown NVRTC status";
    if (const NvrtcApi* api = try_nvrtc(); api != nullptr && api->nvrtcGetErrorString != nullptr)
        text = api->nvrtcGetErrorString(static_cast<nvrtcResult>(status));
    throw NvrtcError(status, call, file, line, text);
}

}  // namespace kjit::detail
