// What kjit finds on this machine: driver, devices, NVRTC, cache folders. `kjit info` prints it.
#pragma once

#include "kjit/export.hpp"

#include <string>
#include <vector>

#include "kjit/device.hpp"

namespace kjit {

struct KJIT_API SystemInfo {
    std::string kjit_version;
    bool driver_loaded = false;
    int driver_version = 0;         // CUDA numbering, 13000 = 13.0; 0 without a driver
    std::string driver_problem;     // why there is no usable GPU; empty when there is one
    std::vector<DeviceProperties> devices;
    bool nvrtc_loaded = false;
    int nvrtc_major = 0;
    int nvrtc_minor = 0;
    std::string nvrtc_library;      // the path or soname that was loaded
    std::string nvrtc_problem;
    std::vector<int> nvrtc_archs;   // nvrtcGetSupportedArchs: 75, 80, 90...
    std::string cache_dir;          // the writable cache (KJIT_CACHE_DIR or the default)
    std::vector<std::string> cache_path;  // read-only layers from KJIT_CACHE_PATH
    bool cache_disabled = false;    // KJIT_CACHE_DISABLE=1
};

// Gathers SystemInfo; never throws for a missing driver, GPU or NVRTC (they are reported in it).
KJIT_API SystemInfo system_info();

// The writable cache folder: $KJIT_CACHE_DIR, else $XDG_CACHE_HOME/kjit, else ~/.cache/kjit;
// empty when none of them is set (no disk cache then: never a folder relative to the current one).
KJIT_API std::string default_cache_dir();
// The read-only cache folders in $KJIT_CACHE_PATH, in search order.
KJIT_API std::vector<std::string> cache_search_path();

}  // namespace kjit
