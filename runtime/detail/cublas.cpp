#include "runtime/detail/cublas.hpp"

#include <mutex>

#include "kjit/error.hpp"
#include "runtime/detail/dynamic_library.hpp"
#include "runtime/detail/toolkit_library.hpp"

namespace kjit::detail {
namespace {

std::once_flag g_load_once;
CublasApi g_api;
bool g_ok = false;
std::string g_error;

void load() {
    const std::vector<std::string> candidates = cublas_candidates();
    const DynamicLibrary lib = open_first(candidates);
    if (lib.handle == nullptr) {
        std::string tried;
        for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
        g_error = "cuBLAS not found (tried " + tried + "): install the CUDA toolkit's cuBLAS or set KJIT_CUBLAS_LIBRARY "
                  "to its path; only matmul needs it";
        return;
    }
    std::string missing;
#define KJIT_LOAD_ENTRY(name)                                                           \
    if (void* fn = lib.symbol(#name))                                                   \
        g_api.name = reinterpret_cast<decltype(g_api.name)>(fn);                        \
    else                                                                                \
        missing += " " #name;
    KJIT_CUBLAS_FUNCTIONS(KJIT_LOAD_ENTRY)
#undef KJIT_LOAD_ENTRY
    if (!missing.empty()) {
        g_error = lib.path + " lacks entry points kjit needs:" + missing + " (cuBLAS older than 12.0?)";
        return;
    }
    g_api.library_path = lib.path;
    g_ok = true;
}

}  // namespace

std::vector<std::string> cublas_candidates() {
    return toolkit_library_candidates("KJIT_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                                      "libcublas.so");
}

const CublasApi* try_cublas(std::string* why) noexcept {
    std::call_once(g_load_once, load);
    if (!g_ok) {
        if (why != nullptr) *why = g_error;
        return nullptr;
    }
    return &g_api;
}

const CublasApi& cublas() {
    std::string why;
    if (const CublasApi* api = try_cublas(&why)) return *api;
    throw NoDeviceError(why);
}

void throw_cublas_error(int status, const char* call, const char* file, int line) {
    std::string name = "CUBLAS_STATUS_" + std::to_string(status), text;
    if (const CublasApi* api = try_cublas()) {
        name = api->cublasGetStatusName(static_cast<cublasStatus_t>(status));
        text = api->cublasGetStatusString(static_cast<cublasStatus_t>(status));
    }
    throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + name +
                (text.empty() ? "" : " (" + text + ")"));
}

}  // namespace kjit::detail
