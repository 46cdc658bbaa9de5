#include "kjit/info.hpp"

#include <cstdlib>

#include "kjit/version.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"

namespace kjit {

std::string default_cache_dir() {
    if (const char* dir = std::getenv("KJIT_CACHE_DIR"); dir && *dir) return dir;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/kjit";
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/kjit";
    // No home at all (a bare container). Not a folder relative to the current directory: in
    // /tmp, another user could have made it first, full of planted kernels. Memory only.
    return {};
}

std::vector<std::string> cache_search_path() {
    std::vector<std::string> dirs;
    const char* path = std::getenv("KJIT_CACHE_PATH");
    if (path == nullptr) return dirs;
    std::string item;
    for (const char* p = path;; ++p) {
        if (*p == ':' || *p == '\0') {
            if (!item.empty()) dirs.push_back(item);
            item.clear();
            if (*p == '\0') break;
        } else {
            item.push_back(*p);
        }
    }
    return dirs;
}

SystemInfo system_info() {
    SystemInfo info;
    info.kjit_version = version();
    if (detail::Driver* d = detail::try_driver(&info.driver_problem)) {
        info.driver_loaded = true;
        info.driver_version = d->version();
        for (int i = 0; i < d->device_count(); ++i) {
            try {
                info.devices.push_back(Device::cuda(i).properties());
            } catch (const std::exception& e) {
                info.driver_problem += (info.driver_problem.empty() ? "" : "; ") + std::string("device ") +
                                       std::to_string(i) + ": " + e.what();
            }
        }
    } else {
        // The library may have loaded even though no GPU is usable: report its version then.
        const detail::DriverApi api = detail::real_driver_api();
        if (api.cuDriverGetVersion != nullptr) {
            info.driver_loaded = true;
            api.cuDriverGetVersion(&info.driver_version);
        }
    }
    if (const detail::NvrtcApi* nv = detail::try_nvrtc(&info.nvrtc_problem)) {
        info.nvrtc_loaded = true;
        info.nvrtc_library = nv->library_path;
        nv->nvrtcVersion(&info.nvrtc_major, &info.nvrtc_minor);
        int n = 0;
        if (nv->nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
            info.nvrtc_archs.resize(n);
            nv->nvrtcGetSupportedArchs(info.nvrtc_archs.data());
        }
    }
    info.cache_dir = default_cache_dir();
    info.cache_path = cache_search_path();
    const char* disable = std::getenv("KJIT_CACHE_DISABLE");
    info.cache_disabled = disable != nullptr && std::string(disable) == "1";
    return info;
}

}  // namespace kjit
