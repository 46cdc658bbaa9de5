// Clusters, cooperative launches and the shared-memory carveout of a RawKernel launch. The checks
// run before anything is queued, so that what the device cannot run is an Error giving its
// limit rather than a CUDA_ERROR_INVALID_CLUSTER_SIZE (or a grid sync that never returns).
#include "jit/kernels/raw/launch_attributes.hpp"

#include <algorithm>

#include "jit/kernels/raw/module.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {
namespace {

// The most blocks a cluster may have without the kernel allowing non-portable sizes (CUDA's
// portable cluster size, the same from sm_90 to sm_120).
constexpr unsigned kPortableClusterBlocks = 8;

unsigned long long blocks(Dim3 d) { return 1ull * d.x * d.y * d.z; }

// "NVIDIA H200 (cuda:0)"; with `cc`, "NVIDIA H200 (cuda:0, compute capability 9.0)".
std::string device_text(int ordinal, bool cc = true) {
    const DeviceProperties p = Device::cuda(ordinal).properties();
    if (!cc) return p.name + " (cuda:" + std::to_string(ordinal) + ")";
    return p.name + " (cuda:" + std::to_string(ordinal) + ", compute capability " + std::to_string(p.cc_major) + "." +
           std::to_string(p.cc_minor) + ")";
}

std::string shape_text(Dim3 block, std::size_t shared) {
    return std::to_string(blocks(block)) + " threads " + dims_text(block) + " and " + std::to_string(shared) +
           " bytes of dynamic shared memory";
}

// What identifies a launch shape for the device's checks (not the grid: a cluster kernel's grid
// usually follows n). Never 0, the value of an empty slot.
std::uint64_t fingerprint(Dim3 block, const LaunchConfig& c) {
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (const std::uint64_t v : {std::uint64_t{block.x}, std::uint64_t{block.y}, std::uint64_t{block.z},
                                  std::uint64_t{c.cluster.x}, std::uint64_t{c.cluster.y}, std::uint64_t{c.cluster.z},
                                  std::uint64_t{c.shared_mem_bytes}, std::uint64_t{c.cooperative},
                                  // the carveout changes how many blocks an SM holds
                                  std::uint64_t(std::int64_t{c.shared_carveout.value_or(INT_MIN)})}) {
        h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return (h | (std::uint64_t{1} << 63)) & ~LaunchAttributeMemory::kLimitBits;
}

// Lets the kernel run clusters above the portable size (its CU_FUNC_ATTRIBUTE_NON_PORTABLE_
// CLUSTER_SIZE_ALLOWED), once per kernel object.
void allow_non_portable_clusters(const RawFunction& f, detail::Driver& d, Dim3 cluster, const std::string& kernel) {
    if (f.attribute_launches.non_portable_clusters.load(std::memory_order_acquire)) return;
    std::lock_guard lock(function_attribute_mutex());
    const CUresult st = d.cuFuncSetAttribute(f.function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (st != CUDA_SUCCESS)
        throw CudaError(st,
                        "cuFuncSetAttribute(" + kernel + ", CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)",
                        __FILE__, __LINE__,
                        "a cluster of " + std::to_string(blocks(cluster)) + " blocks " + dims_text(cluster) +
                            " is above the portable " + std::to_string(kPortableClusterBlocks) + " on " +
                            device_text(f.ordinal));
    f.attribute_launches.non_portable_clusters.store(true, std::memory_order_release);
}

void check_cluster_on_device(const RawFunction& f, detail::Driver& d, Dim3 block, const LaunchConfig& c,
                             const std::string& kernel) {
    const detail::DeviceAttributes& device = detail::device_attributes(f.ordinal);
    if (device.compute_capability() < 90)
        throw Error("raw kernel '" + kernel + "': a cluster " + dims_text(c.cluster) +
                    " needs compute capability 9.0 or newer (thread-block clusters came with Hopper), but " +
                    device_text(f.ordinal, false) + " has compute capability " + std::to_string(device.cc_major) +
                    "." + std::to_string(device.cc_minor) + "; launch without a cluster there");
    if (blocks(c.cluster) > kPortableClusterBlocks) allow_non_portable_clusters(f, d, c.cluster, kernel);
    // One cluster as the grid: how many fit at once does not depend on the grid.
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = c.cluster.x;
    attribute.value.clusterDim.y = c.cluster.y;
    attribute.value.clusterDim.z = c.cluster.z;
    CUlaunchConfig one{c.cluster.x, c.cluster.y, c.cluster.z, block.x, block.y, block.z,
                       static_cast<unsigned>(c.shared_mem_bytes), c.stream.handle(), &attribute, 1};
    int fit = 0;
    const CUresult st = d.cuOccupancyMaxActiveClusters(&fit, f.function, &one);
    if (st == CUDA_SUCCESS && fit > 0) return;
    const std::string said = st == CUDA_SUCCESS ? "says 0 such clusters fit at once"
                                                : "fails with " + detail::cu_status_name(st) + " (" +
                                                      detail::cu_status_text(st) + ")";
    throw Error("raw kernel '" + kernel + "': a cluster of " + std::to_string(blocks(c.cluster)) + " blocks " +
                dims_text(c.cluster) + " of " + shape_text(block, c.shared_mem_bytes) + " cannot run on " +
                device_text(f.ordinal) + ": cuOccupancyMaxActiveClusters " + said + ". Clusters of up to " +
                std::to_string(kPortableClusterBlocks) +
                " blocks are portable, up to 16 where the GPU allows more (Hopper, Blackwell); a smaller cluster, "
                "block or shared memory may fit");
}

// The most blocks a cooperative grid of this shape may have: all resident at once.
std::uint64_t cooperative_limit(const RawFunction& f, detail::Driver& d, Dim3 block, const LaunchConfig& c,
                                const std::string& kernel) {
    CUdevice device{};
    KJIT_CU_CHECK(d.cuDeviceGet(&device, f.ordinal));
    int supported = 0;
    KJIT_CU_CHECK(d.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, device));
    if (supported == 0)
        throw Error("raw kernel '" + kernel + "': a cooperative launch, but " + device_text(f.ordinal) +
                    " does not support them (CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0)");
    int per_sm = 0;
    KJIT_CU_CHECK(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f.function, static_cast<int>(blocks(block)),
                                                                 c.shared_mem_bytes));
    const std::uint64_t limit = std::uint64_t(std::max(per_sm, 0)) * detail::device_attributes(f.ordinal).sm_count;
    return std::min(limit, LaunchAttributeMemory::kLimitBits);
}

[[noreturn]] void refuse_cooperative_grid(const RawFunction& f, detail::Driver& d, Dim3 grid, Dim3 block,
                                          const LaunchConfig& c, const std::string& kernel) {
    int per_sm = 0;
    KJIT_CU_CHECK(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f.function, static_cast<int>(blocks(block)),
                                                                 c.shared_mem_bytes));
    const int sms = detail::device_attributes(f.ordinal).sm_count;
    throw Error("raw kernel '" + kernel + "': a cooperative grid of " + std::to_string(blocks(grid)) + " blocks " +
                dims_text(grid) + " is more than " + device_text(f.ordinal) + " keeps resident at once: " +
                std::to_string(per_sm) + " blocks of " + shape_text(block, c.shared_mem_bytes) + " per SM x " +
                std::to_string(sms) + " SMs = " + std::to_string(1ull * std::max(per_sm, 0) * sms) +
                " blocks (cuOccupancyMaxActiveBlocksPerMultiprocessor); a grid sync needs every block resident");
}

}  // namespace

std::mutex& function_attribute_mutex() {
    static std::mutex mutex;
    return mutex;
}

std::string dims_text(Dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

void check_launch_ex(const RawFunction& f, Dim3 grid, Dim3 block, const LaunchConfig& c, const std::string& kernel) {
    const Dim3 cl = c.cluster;
    if (cl.x == 0 || cl.y == 0 || cl.z == 0)
        throw Error("raw kernel '" + kernel + "': cluster " + dims_text(cl) +
                    " has an extent 0; {1, 1, 1} launches without a cluster");
    if (grid.x % cl.x != 0 || grid.y % cl.y != 0 || grid.z % cl.z != 0)
        throw Error("raw kernel '" + kernel + "': grid " + dims_text(grid) + " is not a multiple of the cluster " +
                    dims_text(cl) + " in every dimension; round the grid up to whole clusters");

    LaunchAttributeMemory& memory = f.attribute_launches;
    const std::uint64_t key = fingerprint(block, c);
    std::uint64_t limit = LaunchAttributeMemory::kLimitBits;
    bool checked = false;
    for (const std::atomic<std::uint64_t>& slot : memory.checked) {
        const std::uint64_t v = slot.load(std::memory_order_acquire);
        if ((v & ~LaunchAttributeMemory::kLimitBits) != key) continue;
        limit = v & LaunchAttributeMemory::kLimitBits;
        checked = true;
        break;
    }
    detail::Driver& d = detail::driver_on(f.ordinal);
    if (!checked) {
        if (cl.x != 1 || cl.y != 1 || cl.z != 1) check_cluster_on_device(f, d, block, c, kernel);
        if (c.cooperative) limit = cooperative_limit(f, d, block, c, kernel);
        const unsigned slot = memory.next_slot.fetch_add(1, std::memory_order_relaxed) % memory.checked.size();
        memory.checked[slot].store(key | limit, std::memory_order_release);
    }
    if (c.cooperative && blocks(grid) > limit) refuse_cooperative_grid(f, d, grid, block, c, kernel);
}

CUresult launch_ex(const RawFunction& f, Dim3 grid, Dim3 block, const LaunchConfig& c, void** params) {
    CUlaunchAttribute attributes[2] = {};
    unsigned count = 0;
    if (c.cluster.x != 1 || c.cluster.y != 1 || c.cluster.z != 1) {
        attributes[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attributes[count].value.clusterDim.x = c.cluster.x;
        attributes[count].value.clusterDim.y = c.cluster.y;
        attributes[count].value.clusterDim.z = c.cluster.z;
        ++count;
    }
    if (c.cooperative) {
        attributes[count].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attributes[count].value.cooperative = 1;
        ++count;
    }
    const CUlaunchConfig config{grid.x,  grid.y,  grid.z,
                                block.x, block.y, block.z,
                                static_cast<unsigned>(c.shared_mem_bytes), c.stream.handle(), attributes, count};
    return detail::driver().cuLaunchKernelEx(&config, f.function, params, nullptr);
}

void apply_carveout(const RawFunction& f, int percent, const std::string& kernel) {
    std::atomic<int>& set = f.attribute_launches.carveout;
    if (set.load(std::memory_order_acquire) == percent) return;
    if (percent < kCarveoutDefault || percent > kCarveoutMaxShared)
        throw Error("raw kernel '" + kernel + "': shared_carveout " + std::to_string(percent) +
                    " is neither a percent (0-100) nor kCarveoutDefault (-1)");
    std::lock_guard lock(function_attribute_mutex());
    detail::Driver& d = detail::driver_on(f.ordinal);
    const CUresult st = d.cuFuncSetAttribute(f.function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent);
    if (st != CUDA_SUCCESS)
        throw CudaError(st, "cuFuncSetAttribute(" + kernel + ", CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, " +
                                std::to_string(percent) + ")",
                        __FILE__, __LINE__, "on " + device_text(f.ordinal));
    set.store(percent, std::memory_order_release);
}

}  // namespace kjit::jit::kernels
