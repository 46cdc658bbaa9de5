#include "runtime/detail/driver.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include <cudaTypedefs.h>

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/dynamic_library.hpp"
#include "runtime/detail/log.hpp"

namespace kjit::detail {
namespace {

// The ABI version named for each entry must be the one the header declares (see driver.hpp).
#define KJIT_CHECK_ENTRY_VERSION(name, version)                                          \
    static_assert(std::is_same_v<decltype(&::name), PFN_##name##_v##version>,             \
                  #name ": the version in KJIT_DRIVER_FUNCTIONS does not match cuda.h");
KJIT_DRIVER_FUNCTIONS(KJIT_CHECK_ENTRY_VERSION)
#undef KJIT_CHECK_ENTRY_VERSION

constexpr const char* kDriverLibrary = "libcuda.so.1";

// State of the real driver, set once by load_real_driver().
std::once_flag g_load_once;
DriverApi g_real_api;                 // entries stay null when the library did not load
std::unique_ptr<Driver> g_real;       // null when no usable GPU
std::string g_unavailable_reason;     // why g_real is null

// The driver in use: the real one, or a test's override.
std::atomic<Driver*> g_active{nullptr};
std::string g_active_error;  // reason reported while g_active is null

std::string status_name_with(const DriverApi& api, CUresult status) {
    const char* s = nullptr;
    if (api.cuGetErrorName != nullptr && api.cuGetErrorName(status, &s) == CUDA_SUCCESS && s != nullptr) return s;
    return "CUresult " + std::to_string(static_cast<int>(status));
}

std::string status_text_with(const DriverApi& api, CUresult status) {
    const char* s = nullptr;
    if (api.cuGetErrorString != nullptr && api.cuGetErrorString(status, &s) == CUDA_SUCCESS && s != nullptr) return s;
    return "unknown error";
}

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

void load_real_driver() {
    const DynamicLibrary lib = open_first({kDriverLibrary});
    if (lib.handle == nullptr) {
        g_unavailable_reason = std::string("CUDA driver not found: cannot load ") + kDriverLibrary + " (" + lib.error +
                               "); install the NVIDIA driver, or run on a machine with a GPU";
        return;
    }
    using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    const auto get_proc = reinterpret_cast<GetProcAddress>(lib.symbol("cuGetProcAddress_v2"));
    if (get_proc == nullptr) {
        g_unavailable_reason = std::string(kDriverLibrary) +
                               " has no cuGetProcAddress_v2: the NVIDIA driver is older than CUDA 12; update it";
        return;
    }
    DriverApi api;
    std::string missing;
#define KJIT_LOAD_ENTRY(name, version)                                                               \
    {                                                                                                \
        void* fn = nullptr;                                                                          \
        CUdriverProcAddressQueryResult found{};                                                      \
        if (get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS &&    \
            fn != nullptr)                                                                           \
            api.name = reinterpret_cast<decltype(api.name)>(fn);                                     \
        else                                                                                         \
            missing += " " #name;                                                                    \
    }
    KJIT_DRIVER_FUNCTIONS(KJIT_LOAD_ENTRY)
#undef KJIT_LOAD_ENTRY
    g_real_api = api;

    int version = 0;
    if (api.cuDriverGetVersion != nullptr) api.cuDriverGetVersion(&version);
    if (!missing.empty()) {
        g_unavailable_reason = std::string(kDriverLibrary) + " (driver for CUDA " + version_string(version) +
                               ") lacks entry points kjit needs:" + missing + "; kjit was built for CUDA " +
                               version_string(CUDA_VERSION) + ", update the NVIDIA driver";
        return;
    }
    if (const CUresult st = api.cuInit(0); st != CUDA_SUCCESS) {
        g_unavailable_reason = "no usable GPU: " + std::string(kDriverLibrary) + " (driver for CUDA " +
                               version_string(version) + ") loaded, but cuInit(0) failed with " +
                               status_name_with(api, st) + " (" + status_text_with(api, st) + ")";
        return;
    }
    int count = 0;
    if (const CUresult st = api.cuDeviceGetCount(&count); st != CUDA_SUCCESS || count == 0) {
        g_unavailable_reason = "no GPU: the CUDA driver (" + version_string(version) + ") reports no CUDA device";
        return;
    }
    g_real = std::make_unique<Driver>(api, count, version);
}

Driver* active_driver(std::string* why) {
    if (Driver* d = g_active.load(std::memory_order_acquire)) return d;
    std::call_once(g_load_once, [] {
        load_real_driver();
        if (g_active.load() == nullptr && g_active_error.empty()) {
            g_active_error = g_unavailable_reason;
            g_active.store(g_real.get(), std::memory_order_release);
        }
    });
    Driver* d = g_active.load(std::memory_order_acquire);
    if (d == nullptr && why != nullptr) *why = g_active_error;
    return d;
}

}  // namespace

Driver::Driver(const DriverApi& api, int device_count, int version)
    : DriverApi(api), device_count_(device_count < kMaxDevices ? device_count : kMaxDevices), version_(version) {}

void Driver::check_ordinal(int ordinal) const {
    if (ordinal < 0 || ordinal >= device_count_)
        throw NoDeviceError("no CUDA device " + std::to_string(ordinal) + ": there are " +
                            std::to_string(device_count_) + " (valid ordinals 0.." + std::to_string(device_count_ - 1) +
                            ")");
}

CUcontext Driver::primary_context(int ordinal) {
    check_ordinal(ordinal);
    if (CUcontext ctx = contexts_[ordinal].load(std::memory_order_acquire)) return ctx;
    std::lock_guard lock(mutex_);
    if (CUcontext ctx = contexts_[ordinal].load(std::memory_order_relaxed)) return ctx;
    CUdevice dev{};
    KJIT_CU_CHECK(cuDeviceGet(&dev, ordinal));
    CUcontext ctx = nullptr;
    KJIT_CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    contexts_[ordinal].store(ctx, std::memory_order_release);
    return ctx;
}

void Driver::make_current(int ordinal) {
    CUcontext wanted = primary_context(ordinal);
    CUcontext current = nullptr;
    if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == wanted) return;
    KJIT_CU_CHECK(cuCtxSetCurrent(wanted));
}

CUmemoryPool Driver::memory_pool(int ordinal) {
    check_ordinal(ordinal);
    if (CUmemoryPool pool = pools_[ordinal].load(std::memory_order_acquire)) return pool;
    std::lock_guard lock(mutex_);
    if (CUmemoryPool pool = pools_[ordinal].load(std::memory_order_relaxed)) return pool;
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ordinal;
    CUmemoryPool pool = nullptr;
    KJIT_CU_CHECK(cuMemPoolCreate(&pool, &props));
    // Keep freed blocks for reuse instead of returning them to the driver at every
    // synchronisation: that is what makes pool allocation cheap. Out of memory trims the pool.
    cuuint64_t keep_all = ~cuuint64_t{0};
    KJIT_CU_CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
    pools_[ordinal].store(pool, std::memory_order_release);
    return pool;
}

bool Driver::peer_access(int a, int b) {
    check_ordinal(a);
    check_ordinal(b);
    if (a == b) return true;
    std::atomic<std::int8_t>& slot = peers_[static_cast<std::size_t>(std::min(a, b) * kMaxDevices + std::max(a, b))];
    if (const std::int8_t known = slot.load(std::memory_order_acquire)) return known == 1;
    const CUmemoryPool pool_a = memory_pool(a), pool_b = memory_pool(b);
    std::lock_guard lock(peer_mutex_);
    if (const std::int8_t known = slot.load(std::memory_order_relaxed)) return known == 1;
    CUdevice dev_a{}, dev_b{};
    KJIT_CU_CHECK(cuDeviceGet(&dev_a, a));
    KJIT_CU_CHECK(cuDeviceGet(&dev_b, b));
    int ab = 0, ba = 0;
    KJIT_CU_CHECK(cuDeviceCanAccessPeer(&ab, dev_a, dev_b));
    KJIT_CU_CHECK(cuDeviceCanAccessPeer(&ba, dev_b, dev_a));
    bool peer = ab != 0 && ba != 0;
    if (peer) {
        // Each pool readable and writable by the other device: a copy engine of either may then
        // move the bytes, and a copy between pool allocations goes over NVLink or PCIe directly.
        CUmemAccessDesc to_a{}, to_b{};
        to_a.location = {CU_MEM_LOCATION_TYPE_DEVICE, a};
        to_b.location = {CU_MEM_LOCATION_TYPE_DEVICE, b};
        to_a.flags = to_b.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        const CUresult opened_b = cuMemPoolSetAccess(pool_b, &to_a, 1);
        const CUresult opened_a = opened_b == CUDA_SUCCESS ? cuMemPoolSetAccess(pool_a, &to_b, 1) : opened_b;
        if (opened_a != CUDA_SUCCESS) {
            log(LogLevel::warn, "cuda:" + std::to_string(a) + " and cuda:" + std::to_string(b) +
                                    " can access each other, but opening their memory pools failed (" + cu_status_name(opened_a) +
                                    "): copies between them are staged through the host");
            peer = false;
        }
    }
    slot.store(peer ? 1 : 2, std::memory_order_release);
    return peer;
}

template <class T, class Query>
const T& Driver::kept(std::array<std::atomic<const T*>, kMaxDevices>& slots, std::vector<std::unique_ptr<const T>>& kept_values,
                      int ordinal, Query query) {
    check_ordinal(ordinal);
    if (const T* p = slots[ordinal].load(std::memory_order_acquire)) return *p;
    auto fresh = std::make_unique<const T>(query(*this, ordinal));  // may throw: nothing kept then
    std::lock_guard lock(mutex_);
    if (const T* p = slots[ordinal].load(std::memory_order_relaxed)) return *p;
    const T* p = fresh.get();
    kept_values.push_back(std::move(fresh));
    slots[ordinal].store(p, std::memory_order_release);
    return *p;
}

const DeviceProperties& Driver::properties(int ordinal, PropertiesQuery query) {
    return kept(properties_, kept_properties_, ordinal, query);
}

const DeviceAttributes& Driver::attributes(int ordinal, AttributesQuery query) {
    return kept(attributes_, kept_attributes_, ordinal, query);
}

Driver& driver() {
    std::string why;
    if (Driver* d = active_driver(&why)) return *d;
    throw NoDeviceError(why);
}

Driver* try_driver(std::string* why) noexcept {
    try {
        return active_driver(why);
    } catch (...) {
        return nullptr;
    }
}

DriverApi real_driver_api() {
    active_driver(nullptr);
    return g_real_api;
}

ScopedDriverOverride::ScopedDriverOverride(const DriverApi& api, int device_count, int version)
    : installed_(std::make_unique<Driver>(api, device_count, version)) {
    active_driver(nullptr);  // settle the real driver's loading first
    previous_ = g_active.load();
    previous_error_ = g_active_error;
    g_active.store(installed_.get());
}

ScopedDriverOverride::~ScopedDriverOverride() {
    g_active.store(previous_);
    g_active_error = previous_error_;
}

std::string cu_status_name(CUresult status) {
    Driver* d = g_active.load();
    return status_name_with(d != nullptr ? static_cast<const DriverApi&>(*d) : g_real_api, status);
}

std::string cu_status_text(CUresult status) {
    Driver* d = g_active.load();
    return status_text_with(d != nullptr ? static_cast<const DriverApi&>(*d) : g_real_api, status);
}

}  // namespace kjit::detail
