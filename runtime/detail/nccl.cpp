#include "runtime/detail/nccl.hpp"

#include <atomic>
#include <memory>
#include <mutex>

#include "kjit/error.hpp"
#include "kjit/nccl.hpp"
#include "runtime/detail/dynamic_library.hpp"
#include "runtime/detail/toolkit_library.hpp"

namespace kjit::detail {
namespace {

// The real NCCL, once loaded: kept for the process's life (as the library itself is).
std::mutex g_load_mutex;
std::atomic<const NcclApi*> g_loaded{nullptr};

// A test's override: when g_override_set, g_override (null: "missing", for g_override_why) wins.
std::atomic<const NcclApi*> g_override{nullptr};
std::atomic<bool> g_override_set{false};
std::string g_override_why;

}  // namespace

std::vector<std::string> nccl_candidates() {
    return toolkit_library_candidates("KJIT_NCCL_LIBRARY", {"libnccl.so.2", "libnccl.so"}, "libnccl.so.2",
                                      {"lib64", "lib"});
}

NcclLoad load_nccl(const std::vector<std::string>& candidates) {
    NcclLoad out;
    const DynamicLibrary lib = open_first(candidates);
    if (lib.handle == nullptr) {
        std::string tried;
        for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
        out.error = "NCCL not found (tried " + tried + "): kjit does not ship NCCL; install it (the libnccl2 "
                    "package, NVIDIA's nvidia-nccl-cu* wheel, or PyTorch's copy) and set KJIT_NCCL_LIBRARY to "
                    "libnccl.so.2's path unless the loader finds it; only kjit::nccl needs it";
        if (!lib.error.empty()) out.error += " [dlopen: " + lib.error + "]";
        return out;
    }
    std::string missing;
#define KJIT_LOAD_ENTRY(name, ret, params)                                                         \
    if (void* fn = lib.symbol(#name))                                                              \
        out.api.name = reinterpret_cast<decltype(out.api.name)>(fn);                               \
    else                                                                                           \
        missing += " " #name;
    KJIT_NCCL_FUNCTIONS(KJIT_LOAD_ENTRY)
#undef KJIT_LOAD_ENTRY
#define KJIT_LOAD_OPTIONAL(name, ret, params)                                                      \
    out.api.name = reinterpret_cast<decltype(out.api.name)>(lib.symbol(#name));
    KJIT_NCCL_OPTIONAL_FUNCTIONS(KJIT_LOAD_OPTIONAL)
#undef KJIT_LOAD_OPTIONAL
    if (!missing.empty()) {
        out.error = "NCCL at " + lib.path + " lacks entry points kjit needs:" + missing +
                    " (not NCCL 2, or older than 2.4?); set KJIT_NCCL_LIBRARY to another libnccl.so.2";
        return out;
    }
    int version = 0;
    if (out.api.ncclGetVersion(&version) != kNcclSuccess || version < 20000 || version >= 30000) {
        out.error = "NCCL at " + lib.path + " reports version " + std::to_string(version) +
                    ", not NCCL 2 (whose ABI kjit was written for); set KJIT_NCCL_LIBRARY to a libnccl.so.2";
        return out;
    }
    out.api.version = version;
    out.api.library_path = lib.path;
    out.ok = true;
    return out;
}

const NcclApi* try_nccl(std::string* why) noexcept {
    if (g_override_set.load(std::memory_order_acquire)) {
        const NcclApi* api = g_override.load(std::memory_order_acquire);
        if (api == nullptr && why != nullptr) *why = g_override_why;
        return api;
    }
    if (const NcclApi* api = g_loaded.load(std::memory_order_acquire)) return api;
    try {
        std::lock_guard lock(g_load_mutex);
        if (const NcclApi* api = g_loaded.load(std::memory_order_acquire)) return api;
        NcclLoad load = load_nccl(nccl_candidates());
        if (!load.ok) {
            if (why != nullptr) *why = load.error;
            return nullptr;
        }
        // Kept for the process's life, like the library: tables handed out earlier stay valid.
        const NcclApi* api = new NcclApi(std::move(load.api));
        g_loaded.store(api, std::memory_order_release);
        return api;
    } catch (const std::exception& e) {
        if (why != nullptr) *why = std::string("loading NCCL failed: ") + e.what();
        return nullptr;
    }
}

const NcclApi& nccl() {
    std::string why;
    if (const NcclApi* api = try_nccl(&why)) return *api;
    throw NoDeviceError(why);
}

ScopedNcclOverride::ScopedNcclOverride(const NcclApi* api, std::string why_absent)
    : previous_(g_override.load()), previous_set_(g_override_set.load()), previous_why_(g_override_why) {
    g_override_why = std::move(why_absent);
    g_override.store(api, std::memory_order_release);
    g_override_set.store(true, std::memory_order_release);
}

ScopedNcclOverride::~ScopedNcclOverride() {
    g_override.store(previous_, std::memory_order_release);
    g_override_why = previous_why_;
    g_override_set.store(previous_set_, std::memory_order_release);
}

std::string nccl_status_name(NcclResult status) {
    static constexpr const char* kNames[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                             "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                             "ncclRemoteError",   "ncclInProgress"};
    if (status >= 0 && status < static_cast<int>(sizeof kNames / sizeof kNames[0])) return kNames[status];
    return "ncclResult " + std::to_string(status);
}

std::string nccl_version_string(int code) {
    // NCCL_VERSION(X, Y, Z): X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
    const int major = code >= 10000 ? code / 10000 : code / 1000;
    const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

void throw_nccl_error(const NcclApi& api, NcclResult status, const char* call, const std::string& where,
                      NcclComm comm) {
    std::string what = std::string(call) + " failed in " + where + ": " + nccl_status_name(status);
    if (api.ncclGetErrorString != nullptr) {
        if (const char* text = api.ncclGetErrorString(status); text != nullptr && *text != '\0')
            what += " (" + std::string(text) + ")";
    }
    // NCCL keeps its last message per process (the comm argument is not used by NCCL 2.28).
    if (api.ncclGetLastError != nullptr) {
        if (const char* last = api.ncclGetLastError(comm); last != nullptr && *last != '\0')
            what += "; NCCL says: " + std::string(last);
    }
    throw nccl::NcclError(status, call, what);
}

}  // namespace kjit::detail
