// Loading compiled kernels onto a device: the cubin when it was built for the device's
// architecture, otherwise the PTX, compiled for the device by the driver's JIT (cuLink), which
// also hands back the cubin it made so that the caller can cache it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

namespace kjit::detail {

// A module loaded on one device, unloaded (in its context) when the last owner lets go.
class LoadedModule {
public:
    LoadedModule(CUmodule handle, int device) : handle_(handle), device_(device) {}
    ~LoadedModule();
    LoadedModule(const LoadedModule&) = delete;
    LoadedModule& operator=(const LoadedModule&) = delete;
    CUmodule handle() const noexcept { return handle_; }
    int device() const noexcept { return device_; }
    // Throws CudaError naming the function when the module has no such entry point.
    CUfunction function(const std::string& name) const;

private:
    CUmodule handle_;
    int device_;
};

// Whether a cubin built for `arch` ("sm_80") runs on a GPU of compute capability `device_cc`
// (86 for 8.6): same major version, and a minor version no newer than the device's.
bool cubin_runs_on(const std::string& arch, int device_cc);

struct ModuleImage {
    std::string arch;                 // what `cubin` was built for ("sm_90"), or "compute_90" with PTX only
    std::vector<unsigned char> cubin;
    std::string ptx;
};

// Loads `image` on `device` (its primary context made current). When the cubin does not run on
// the device, the driver compiles the PTX for it and *jitted receives that cubin (for the device's
// "sm_XY"); otherwise *jitted is left empty.
std::shared_ptr<LoadedModule> load_module(const ModuleImage& image, int device, std::vector<unsigned char>* jitted);

}  // namespace kjit::detail
