// The numbers kernels are planned and loaded with, per device: the part of DeviceProperties that
// launches need (compute capability, SMs, block limits, L2), asked of the driver once per device
// and process. Without the name, total memory and bus id that Device::properties() also asks
// for: cuDeviceGetName alone took about 10 us on the H200 host, and the call path asked for it
// inside a fresh process's first kernel call only to read the compute capability.
#pragma once

#include <cstddef>

namespace kjit::detail {

struct DeviceAttributes {
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    int max_threads_per_block = 0;
    std::size_t shared_memory_per_block = 0;  // bytes, the opt-in maximum
    std::size_t l2_cache_bytes = 0;
    int compute_capability() const noexcept { return cc_major * 10 + cc_minor; }  // 90 for 9.0
};

// Device `ordinal`'s attributes (CUDA devices only); throws as the driver's calls do.
const DeviceAttributes& device_attributes(int ordinal);

}  // namespace kjit::detail
