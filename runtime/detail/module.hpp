// Loading compiled kernels onto a device: the cubin when it was built for the device's
// architecture, otherwise the PTX, compiled for the device by the driver's JIT (cuLink), which
// also hands back the cubin it made so that the caller can cache it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "kjit/module.hpp"
#include "runtime/detail/once_value.hpp"

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
    CUfunction function(const char* name) const;
    CUfunction function(const std::string& name) const { return function(name.c_str()); }
    // The kernel cache key the module was loaded by (ModuleRegistry), empty for one loaded
    // otherwise; set once, before the module is shared.
    const std::string& key() const noexcept { return key_; }

private:
    friend class ModuleRegistry;
    CUmodule handle_;
    int device_;
    std::string key_;
};

// Where a kernel handle came from: the cache key of its module and its entry point's name, for a
// function that LoadedModule::function handed out from a module loaded by key (a saved graph names
// its kernels so). Nothing for other handles (cuBLAS's kernels, a module loaded without a key).
struct FunctionOrigin {
    std::string key;
    std::string entry;
};
bool function_origin(CUfunction f, FunctionOrigin& out);

// Whether a cubin built for `arch` ("sm_80") runs on a GPU of compute capability `device_cc`
// (86 for 8.6): same major version, and a minor version no newer than the device's. An
// architecture-specific cubin ("sm_90a") runs on its own compute capability only; a family one
// ("sm_100f") as a plain one does.
bool cubin_runs_on(const std::string& arch, int device_cc);
// Where code built for `arch` runs, for errors: "GPUs of compute capability 9.0 only".
std::string where_arch_runs(const std::string& arch);

struct ModuleImage {
    std::string arch;                 // what `cubin` was built for ("sm_90"), or "compute_90" with PTX only
    std::vector<unsigned char> cubin;
    std::string ptx;
};

// Loads `image` on `device` (its primary context made current). When the cubin does not run on
// the device, the driver compiles the PTX for it and *jitted receives that cubin (for the device's
// "sm_XY"); otherwise *jitted is left empty.
std::shared_ptr<LoadedModule> load_module(const ModuleImage& image, int device, std::vector<unsigned char>* jitted);

// Makes the public kjit::Module of a loaded module.
struct ModuleAccess {
    static Module make(std::shared_ptr<LoadedModule> module, std::map<std::string, std::string> entry_points, std::string arch,
                       bool compiled_from_ptx);
};

}  // namespace kjit::detail

namespace kjit::detail {

// Modules loaded in this process, by cache key and device: a kernel is loaded once per device,
// concurrent first loads of one key wait for the one that loads it, different keys load in
// parallel, and a lookup locks one of many shards, never the whole map.
class ModuleRegistry {
public:
    ModuleRegistry();
    ~ModuleRegistry();
    static ModuleRegistry& process();
    // The module for (key, device), calling `load` (once) when there is none yet. A failed load
    // is not remembered: a caller whose wait for another thread's load ended in its failure
    // tries again, and fails only by its own load.
    std::shared_ptr<LoadedModule> get(const std::string& key, int device,
                                      const std::function<std::shared_ptr<LoadedModule>()>& load);

private:
    struct Shard;
    Shard& shard_of(const std::string& name) const;
    // Runs `load` into `slot`, the slot of `name` just added; a failure leaves the map first.
    std::shared_ptr<LoadedModule> run_load(Shard& shard, const std::string& name,
                                           OnceValue<std::shared_ptr<LoadedModule>>& slot,
                                           const std::function<std::shared_ptr<LoadedModule>()>& load);
    static constexpr std::size_t kShards = 32;
    std::unique_ptr<Shard[]> shards_;
};

}  // namespace kjit::detail
