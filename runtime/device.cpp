#include "kjit/device.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {
namespace {

// Each thread's current device, as CUDA's runtime keeps one; device 0 until set.
thread_local int t_current_device = 0;

int require_cuda(const Device& d, const char* what) {
    if (!d.is_cuda()) throw Error(std::string(what) + " needs a CUDA device, not " + d.to_string());
    return d.ordinal();
}

int attribute(detail::Driver& drv, CUdevice_attribute attr, CUdevice dev) {
    int value = 0;
    KJIT_CU_CHECK(drv.cuDeviceGetAttribute(&value, attr, dev));
    return value;
}

}  // namespace

std::string DeviceProperties::arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }

int Device::ordinal() const { return is_cpu() ? 0 : (ordinal_ >= 0 ? ordinal_ : t_current_device); }

std::string Device::to_string() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(ordinal()); }

int Device::count() {
    detail::Driver* d = detail::try_driver();
    return d != nullptr ? d->device_count() : 0;
}

Device Device::current() { return Device::cuda(t_current_device); }

void Device::set_current(int ordinal) {
    detail::driver().make_current(ordinal);  // validates the ordinal before anything changes
    t_current_device = ordinal;
}

namespace {
// What runtime/detail/device_attributes.hpp reports, asked of the driver once per device.
detail::DeviceAttributes query_attributes(detail::Driver& drv, int ord) {
    CUdevice dev{};
    KJIT_CU_CHECK(drv.cuDeviceGet(&dev, ord));
    detail::DeviceAttributes a;
    a.cc_major = attribute(drv, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    a.cc_minor = attribute(drv, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    a.sm_count = attribute(drv, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    a.max_threads_per_block = attribute(drv, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev);
    a.shared_memory_per_block = static_cast<std::size_t>(attribute(drv, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
    a.l2_cache_bytes = static_cast<std::size_t>(attribute(drv, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    return a;
}

// What Device::properties() reports, asked of the driver once per device (Driver::properties).
DeviceProperties query_properties(detail::Driver& drv, int ord) {
    const detail::DeviceAttributes& a = drv.attributes(ord, &query_attributes);
    CUdevice dev{};
    KJIT_CU_CHECK(drv.cuDeviceGet(&dev, ord));
    DeviceProperties p;
    p.ordinal = ord;
    char name[256] = {};
    KJIT_CU_CHECK(drv.cuDeviceGetName(name, sizeof name - 1, dev));
    p.name = name;
    p.cc_major = a.cc_major;
    p.cc_minor = a.cc_minor;
    p.sm_count = a.sm_count;
    p.max_threads_per_block = a.max_threads_per_block;
    p.shared_memory_per_block = a.shared_memory_per_block;
    p.l2_cache_bytes = a.l2_cache_bytes;
    std::size_t total = 0;
    KJIT_CU_CHECK(drv.cuDeviceTotalMem(&total, dev));
    p.total_memory = total;
    char bus[64] = {};
    KJIT_CU_CHECK(drv.cuDeviceGetPCIBusId(bus, sizeof bus - 1, dev));
    p.pci_bus_id = bus;
    return p;
}
}  // namespace

DeviceProperties Device::properties() const {
    const int ord = require_cuda(*this, "Device::properties()");
    return detail::driver().properties(ord, &query_properties);
}

const detail::DeviceAttributes& detail::device_attributes(int ordinal) {
    return detail::driver().attributes(ordinal, &query_attributes);
}

std::pair<std::size_t, std::size_t> Device::memory_info() const {
    detail::Driver& drv = detail::driver_on(require_cuda(*this, "Device::memory_info()"));
    std::size_t free_bytes = 0, total_bytes = 0;
    KJIT_CU_CHECK(drv.cuMemGetInfo(&free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
}

void Device::synchronize() const {
    detail::Driver& drv = detail::driver_on(require_cuda(*this, "Device::synchronize()"));
    KJIT_CU_CHECK(drv.cuCtxSynchronize());
}

std::string no_device_reason() {
    std::string why;
    return detail::try_driver(&why) != nullptr ? std::string() : why;
}

int driver_version() { return detail::driver().version(); }

}  // namespace kjit
