// What a RawKernel launch does besides cuLaunchKernel: thread-block clusters and cooperative
// launches (through cuLaunchKernelEx, checked against the device first), the preferred
// shared-memory carveout, and the per-function settings they need. Internal to
// jit/kernels/raw/launch.cpp.
#pragma once

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>

#include <cuda.h>

#include "kjit/raw_kernel.hpp"

namespace kjit::jit::kernels {

struct RawFunction;

// What one kernel object remembers of its attribute launches (a part of RawFunction), so that a
// warm launch of a shape already checked asks the driver nothing but the launch.
struct LaunchAttributeMemory {
    // Up to four launch shapes (block, cluster, dynamic shared memory, cooperative) that passed
    // the device's checks: a fingerprint in the high 40 bits, the most blocks a cooperative grid of
    // that shape may have in the low 24 (the device checks cost a few microseconds; a launch, 2).
    static constexpr std::uint64_t kLimitBits = 0xffffff;
    std::array<std::atomic<std::uint64_t>, 4> checked{};
    std::atomic<unsigned> next_slot{0};
    // The carveout this object set last; INT_MIN: none.
    std::atomic<int> carveout{INT_MIN};
    // Whether this object allowed the kernel clusters above 8 blocks.
    std::atomic<bool> non_portable_clusters{false};
};

// The lock under which kjit changes a CUfunction's attributes: equal modules share a CUfunction
// (the module registry loads a cache key once per device), so two kernel objects must not race.
std::mutex& function_attribute_mutex();

// Whether a launch needs cuLaunchKernelEx: it asks for a cluster or a cooperative grid.
inline bool needs_launch_ex(const LaunchConfig& c) noexcept {
    return c.cooperative || c.cluster.x != 1 || c.cluster.y != 1 || c.cluster.z != 1;
}

// Refuses what the device cannot run, as an Error naming `kernel`, the shape and the device's limit:
// a cluster that does not divide the grid, a cluster below compute capability 9.0 or of a size no
// cluster of this kernel can have (cuOccupancyMaxActiveClusters is 0), a cooperative launch on a
// device without them or a grid larger than can be resident at once. The grid is checked each
// time, the device's limits once per shape.
void check_launch_ex(const RawFunction& f, Dim3 grid, Dim3 block, const LaunchConfig& config,
                     const std::string& kernel);

// Queues the launch with its cluster and cooperative attributes (cuLaunchKernelEx).
CUresult launch_ex(const RawFunction& f, Dim3 grid, Dim3 block, const LaunchConfig& config, void** params);

// Sets the kernel's preferred carveout (percent, or kCarveoutDefault) when it differs from what
// this object set last. An Error naming `kernel` for a value outside -1..100.
void apply_carveout(const RawFunction& f, int percent, const std::string& kernel);

// "(2, 1, 1)".
std::string dims_text(Dim3 d);

}  // namespace kjit::jit::kernels
