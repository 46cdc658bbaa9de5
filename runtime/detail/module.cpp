#include "runtime/detail/module.hpp"

#include <cstdlib>
#include <mutex>
#include <unordered_map>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/log.hpp"
#include "runtime/detail/once_value.hpp"

namespace kjit::detail {
namespace {

// The compute capability in "sm_90" / "compute_90" (90), or 0.
int arch_number(const std::string& arch) {
    const std::size_t underscore = arch.find('_');
    if (underscore == std::string::npos) return 0;
    return std::atoi(arch.c_str() + underscore + 1);
}

// The 'a' of "sm_90a", the 'f' of "sm_100f"; 0 for "sm_90".
char arch_suffix(const std::string& arch) {
    return !arch.empty() && (arch.back() == 'a' || arch.back() == 'f') ? arch.back() : 0;
}

std::string cc_text(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

// Owns a cuLink state; the cubin it completes lives until the state is destroyed.
struct LinkState {
    CUlinkState handle = nullptr;
    ~LinkState() {
        if (handle != nullptr) driver().cuLinkDestroy(handle);
    }
};

// The driver's JIT: PTX in, cubin for the current context's device out. The error log goes into
// the exception, since a PTX the driver rejects is a kjit bug worth reading about.
std::vector<unsigned char> jit_ptx(Driver& d, const std::string& ptx) {
    char error_log[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {error_log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof error_log - 1))};
    LinkState link;
    KJIT_CU_CHECK(d.cuLinkCreate(2, options, values, &link.handle));
    const CUresult added = d.cuLinkAddData(link.handle, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size() + 1,
                                           "kernel.ptx", 0, nullptr, nullptr);
    if (added != CUDA_SUCCESS)
        throw CudaError(added, "cuLinkAddData(PTX)", __FILE__, __LINE__, std::string("driver JIT log: ") + error_log);
    void* cubin = nullptr;
    std::size_t size = 0;
    const CUresult done = d.cuLinkComplete(link.handle, &cubin, &size);
    if (done != CUDA_SUCCESS)
        throw CudaError(done, "cuLinkComplete", __FILE__, __LINE__, std::string("driver JIT log: ") + error_log);
    const auto* bytes = static_cast<const unsigned char*>(cubin);
    return std::vector<unsigned char>(bytes, bytes + size);
}

}  // namespace

LoadedModule::~LoadedModule() {
    Driver* d = try_driver();
    if (d == nullptr || handle_ == nullptr) return;
    try {
        d->make_current(device_);
        const CUresult st = d->cuModuleUnload(handle_);
        if (st != CUDA_SUCCESS && st != CUDA_ERROR_DEINITIALIZED)
            log(LogLevel::warn, "cuModuleUnload failed: " + cu_status_name(st));
    } catch (const std::exception& e) {
        log(LogLevel::warn, std::string("unloading a module failed: ") + e.what());
    }
}

namespace {

// Every handle LoadedModule::function gave out from a keyed module. Entries are few (a kernel's
// first use adds its entry points) and stay: a handle the driver reuses after its module was
// unloaded is looked up through function() again, which records its new origin.
struct FunctionOrigins {
    std::mutex mutex;
    std::unordered_map<CUfunction, FunctionOrigin> by_function;
};
FunctionOrigins& function_origins() {
    static FunctionOrigins* origins = new FunctionOrigins();  // never destroyed: used until exit
    return *origins;
}

}  // namespace

CUfunction LoadedModule::function(const char* name) const {
    Driver& d = driver();
    CUfunction f = nullptr;
    const CUresult st = d.cuModuleGetFunction(&f, handle_, name);
    if (st != CUDA_SUCCESS) throw CudaError(st, "cuModuleGetFunction(\"" + std::string(name) + "\")", __FILE__, __LINE__);
    FunctionOrigins& o = function_origins();
    const std::lock_guard lock(o.mutex);
    if (key_.empty())
        o.by_function.erase(f);  // a reused handle's old origin no longer holds
    else
        o.by_function[f] = FunctionOrigin{key_, name};
    return f;
}

bool function_origin(CUfunction f, FunctionOrigin& out) {
    FunctionOrigins& o = function_origins();
    const std::lock_guard lock(o.mutex);
    const auto it = o.by_function.find(f);
    if (it == o.by_function.end()) return false;
    out = it->second;
    return true;
}

bool cubin_runs_on(const std::string& arch, int device_cc) {
    if (arch.rfind("sm_", 0) != 0) return false;
    const int built = arch_number(arch);
    if (arch_suffix(arch) == 'a') return built == device_cc;
    return built > 0 && built / 10 == device_cc / 10 && built % 10 <= device_cc % 10;
}

std::string where_arch_runs(const std::string& arch) {
    const int built = arch_number(arch);
    if (arch_suffix(arch) == 'a') return "GPUs of compute capability " + cc_text(built) + " only";
    if (arch.rfind("compute_", 0) == 0 && arch_suffix(arch) == 0)
        return "GPUs of compute capability " + cc_text(built) + " and newer (compiled from PTX)";
    return "GPUs of compute capability " + std::to_string(built / 10) + ".x from " + cc_text(built) + " on";
}

std::shared_ptr<LoadedModule> load_module(const ModuleImage& image, int device, std::vector<unsigned char>* jitted) {
    Driver& d = driver_on(device);
    // A kernel's first use may come while its stream is captured into a graph: loading is then
    // made in relaxed mode, where the driver allows it without invalidating the capture.
    const RelaxedCaptureMode relaxed;
    // Kept per device and process: a first call loads a module, and asks the driver nothing more.
    const DeviceAttributes& attributes = device_attributes(device);
    const int major = attributes.cc_major, minor = attributes.cc_minor;
    CUmodule module = nullptr;
    if (!image.cubin.empty() && cubin_runs_on(image.arch, major * 10 + minor)) {
        KJIT_CU_CHECK(d.cuModuleLoadData(&module, image.cubin.data()));
        return std::make_shared<LoadedModule>(module, device);
    }
    if (image.ptx.empty())
        throw Error("a kernel built for " + image.arch + " cannot run on device " + std::to_string(device) + " (sm_" +
                    std::to_string(major * 10 + minor) + ") and has no PTX to compile for it");
    const int ptx_arch = arch_number(image.arch), cc = major * 10 + minor;
    if (ptx_arch > cc)
        throw Error("a kernel built for " + image.arch + " cannot run on device " + std::to_string(device) + " (sm_" +
                    std::to_string(cc) + "): its PTX needs a newer GPU");
    // Architecture- and family-specific PTX compiles only for its own architecture or family.
    const char suffix = arch_suffix(image.arch);
    if ((suffix == 'a' && ptx_arch != cc) || (suffix == 'f' && ptx_arch / 10 != cc / 10))
        throw Error("a kernel built for " + image.arch + " cannot run on device " + std::to_string(device) + " (sm_" +
                    std::to_string(cc) + "): " + image.arch + " code runs on " + where_arch_runs(image.arch));
    std::vector<unsigned char> cubin = jit_ptx(d, image.ptx);
    KJIT_CU_CHECK(d.cuModuleLoadData(&module, cubin.data()));
    if (jitted != nullptr) *jitted = std::move(cubin);
    return std::make_shared<LoadedModule>(module, device);
}

}  // namespace kjit::detail

namespace kjit::detail {

struct ModuleRegistry::Shard {
    mutable std::mutex mutex;
    std::unordered_map<std::string, std::shared_ptr<OnceValue<std::shared_ptr<LoadedModule>>>> modules;
};

ModuleRegistry::ModuleRegistry() : shards_(std::make_unique<Shard[]>(kShards)) {}
ModuleRegistry::~ModuleRegistry() = default;

ModuleRegistry& ModuleRegistry::process() {
    // Never destroyed: modules outliving the driver's shutdown at exit would unload too late.
    static ModuleRegistry* registry = new ModuleRegistry();
    return *registry;
}

ModuleRegistry::Shard& ModuleRegistry::shard_of(const std::string& name) const {
    return shards_[XXH3_64bits(name.data(), name.size()) % kShards];
}

std::shared_ptr<LoadedModule> ModuleRegistry::get(const std::string& key, int device,
                                                  const std::function<std::shared_ptr<LoadedModule>()>& load) {
    const std::string name = key + "@" + std::to_string(device);
    const auto keyed = [&] {
        std::shared_ptr<LoadedModule> m = load();
        if (m && m->key_.empty()) m->key_ = key;
        return m;
    };
    Shard& shard = shard_of(name);
    // Waits while another thread loads it. A wait that ends in that thread's failure sends this
    // caller round again, until it finds the module or runs its own load: a failure is not
    // remembered (it may have come from conditions of that caller's, such as its context). Each round follows another caller's failed load of its
    // own, so the rounds end.
    for (;;) {
        std::unique_lock lock(shard.mutex);
        const auto it = shard.modules.find(name);
        if (it == shard.modules.end()) {
            auto slot = std::make_shared<OnceValue<std::shared_ptr<LoadedModule>>>();
            shard.modules.emplace(name, slot);
            lock.unlock();
            return run_load(shard, name, *slot, keyed);
        }
        const auto found = it->second;
        lock.unlock();
        try {
            return found->get();
        } catch (...) {
            // another caller's load failed: round again
        }
    }
}

std::shared_ptr<LoadedModule> ModuleRegistry::run_load(Shard& shard, const std::string& name,
                                                       OnceValue<std::shared_ptr<LoadedModule>>& slot,
                                                       const std::function<std::shared_ptr<LoadedModule>()>& load) {
    try {
        std::shared_ptr<LoadedModule> module = load();
        slot.set(module);
        return module;
    } catch (...) {
        {
            // Gone from the map before the waiters wake: one that goes round again makes a new
            // slot instead of finding this failed one.
            std::lock_guard lock(shard.mutex);
            shard.modules.erase(name);
        }
        slot.fail(std::current_exception());
        throw;
    }
}

}  // namespace kjit::detail
