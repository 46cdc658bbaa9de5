// The CUDA driver API, loaded at run time from libcuda.so.1 through one function table.
//
// kjit never links libcuda: the library loads on machines without a driver, and tests can swap
// the whole table for one whose entries fail on purpose (ScopedDriverOverride).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>

#include "kjit/device.hpp"
#include "runtime/detail/device_attributes.hpp"

namespace kjit::detail {

// Every driver entry point kjit calls, with the CUDA version whose ABI the header's declaration
// has. cuGetProcAddress is asked for exactly that version: asking for the toolkit's version
// instead returns the newest ABI of each entry (CUDA 13's cuCtxSynchronize takes a context),
// which would not match the signature we call. driver.cpp checks each pair against the
// PFN_<name>_v<version> typedefs of cudaTypedefs.h at compile time.
#define KJIT_DRIVER_FUNCTIONS(X)                                                                   \
    X(cuInit, 2000) X(cuDriverGetVersion, 2020) X(cuGetErrorName, 6000) X(cuGetErrorString, 6000)  \
    X(cuDeviceGet, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGetName, 2000)                        \
    X(cuDeviceGetAttribute, 2000) X(cuDeviceTotalMem, 3020) X(cuDeviceGetPCIBusId, 4010)           \
    X(cuDevicePrimaryCtxRetain, 7000) X(cuDevicePrimaryCtxRelease, 11000)                          \
    X(cuCtxGetCurrent, 4000) X(cuCtxSetCurrent, 4000) X(cuCtxSynchronize, 2000)                    \
    X(cuCtxGetDevice, 2000) X(cuDeviceCanAccessPeer, 4000) X(cuMemPoolSetAccess, 11020)            \
    X(cuMemcpyPeerAsync, 4000)                                                                     \
    X(cuStreamCreateWithPriority, 5050) X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000)      \
    X(cuStreamQuery, 2000) X(cuStreamWaitEvent, 3020)                                              \
    X(cuEventCreate, 2000) X(cuEventDestroy, 4000) X(cuEventRecord, 2000)                          \
    X(cuEventSynchronize, 2000) X(cuEventQuery, 2000) X(cuEventElapsedTime, 12080)                 \
    X(cuMemPoolCreate, 11020) X(cuMemPoolSetAttribute, 11020) X(cuMemPoolTrimTo, 11020)            \
    X(cuMemAllocFromPoolAsync, 11020) X(cuMemFreeAsync, 11020) X(cuMemGetInfo, 3020)               \
    X(cuMemHostAlloc, 2020) X(cuMemFreeHost, 2000)                                                 \
    X(cuMemcpyHtoDAsync, 3020) X(cuMemcpyDtoHAsync, 3020) X(cuMemcpyDtoDAsync, 3020)               \
    X(cuMemsetD8Async, 3020) X(cuPointerGetAttribute, 4000)                                        \
    X(cuModuleLoadData, 2000) X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000)                 \
    X(cuModuleGetGlobal, 3020)                                                                     \
    X(cuLaunchKernel, 4000) X(cuFuncGetAttribute, 2020) X(cuFuncSetAttribute, 9000)                \
    X(cuFuncGetParamInfo, 12040) X(cuLaunchKernelEx, 11060)                                        \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) X(cuOccupancyMaxActiveClusters, 11070)   \
    X(cuLinkCreate, 6050) X(cuLinkAddData, 6050) X(cuLinkComplete, 5050) X(cuLinkDestroy, 5050)    \
    X(cuStreamIsCapturing, 10000) X(cuThreadExchangeStreamCaptureMode, 10010)                      \
    X(cuStreamBeginCapture, 10010) X(cuStreamEndCapture, 10000) X(cuGraphDestroy, 10000)           \
    X(cuGraphInstantiateWithFlags, 11040) X(cuGraphLaunch, 10000) X(cuGraphExecDestroy, 10000)     \
    X(cuGraphGetNodes, 10000) X(cuGraphDebugDotPrint, 11030) X(cuGraphNodeGetType, 10000)            \
    X(cuGraphKernelNodeGetParams, 12000) X(cuGraphMemcpyNodeGetParams, 10000)                      \
    X(cuGraphMemsetNodeGetParams, 10000) X(cuGraphExecKernelNodeSetParams, 12000)                  \
    X(cuGraphExecUpdate, 12000) X(cuKernelGetFunction, 12000)                                      \
    X(cuGraphCreate, 10000) X(cuGraphGetEdges, 12030) X(cuGraphAddKernelNode, 12000)               \
    X(cuGraphAddMemsetNode, 10000) X(cuGraphAddMemcpyNode, 10000) X(cuGraphAddEmptyNode, 10000)    \
    X(cuGraphAddMemAllocNode, 11040) X(cuGraphAddMemFreeNode, 11040)                               \
    X(cuGraphMemAllocNodeGetParams, 11040) X(cuGraphMemFreeNodeGetParams, 11040)                   \
    X(cuGraphKernelNodeGetAttribute, 11000)

struct DriverApi {
#define KJIT_DECLARE_ENTRY(name, version) decltype(&::name) name = nullptr;
    KJIT_DRIVER_FUNCTIONS(KJIT_DECLARE_ENTRY)
#undef KJIT_DECLARE_ENTRY
};

// The loaded driver: its table plus what kjit keeps per device (primary context, memory pool).
class Driver : public DriverApi {
public:
    static constexpr int kMaxDevices = 64;

    Driver(const DriverApi& api, int device_count, int version);
    Driver(const Driver&) = delete;
    Driver& operator=(const Driver&) = delete;

    int device_count() const noexcept { return device_count_; }
    int version() const noexcept { return version_; }

    // The device's primary context, retained on first use and kept for the process's life.
    CUcontext primary_context(int ordinal);
    // Makes the device's primary context current on this thread unless it already is.
    void make_current(int ordinal);
    // kjit's stream-ordered memory pool for the device (created on first use).
    CUmemoryPool memory_pool(int ordinal);
    // Whether devices a and b copy to each other directly: asked of the driver once per pair
    // (both directions must be possible), and then each pool opened to the other device, since
    // pool memory does not follow cuCtxEnablePeerAccess. False: copies are staged through the host.
    bool peer_access(int a, int b);
    // The device's properties, asked of `query` the first time and kept: they do not change while
    // a process runs, and asking again (a name, a bus id, six attributes) cost a fresh process's
    // first call about 20 us on the H200 host each time a plan or a load wanted one number.
    using PropertiesQuery = DeviceProperties (*)(Driver&, int ordinal);
    const DeviceProperties& properties(int ordinal, PropertiesQuery query);
    // The same for the device's attributes (runtime/detail/device_attributes.hpp).
    using AttributesQuery = DeviceAttributes (*)(Driver&, int ordinal);
    const DeviceAttributes& attributes(int ordinal, AttributesQuery query);

private:
    void check_ordinal(int ordinal) const;
    // What slots[ordinal] points at, made by query(*this, ordinal) and kept the first time.
    template <class T, class Query>
    const T& kept(std::array<std::atomic<const T*>, kMaxDevices>& slots, std::vector<std::unique_ptr<const T>>& kept_values,
                  int ordinal, Query query);

    int device_count_;
    int version_;
    std::mutex mutex_;  // only for first uses; warm lookups read the atomics
    std::array<std::atomic<CUcontext>, kMaxDevices> contexts_{};
    std::array<std::atomic<CUmemoryPool>, kMaxDevices> pools_{};
    std::mutex peer_mutex_;  // first peer_access() of a pair (which takes mutex_ for the pools)
    std::array<std::atomic<std::int8_t>, kMaxDevices * kMaxDevices> peers_{};  // 0 unknown, 1 peer, 2 staged
    std::array<std::atomic<const DeviceProperties*>, kMaxDevices> properties_{};
    std::vector<std::unique_ptr<const DeviceProperties>> kept_properties_;  // what properties_ points at
    std::array<std::atomic<const DeviceAttributes*>, kMaxDevices> attributes_{};
    std::vector<std::unique_ptr<const DeviceAttributes>> kept_attributes_;
};

// The process's driver, loaded and initialised on first use. Throws NoDeviceError saying what is
// missing (library, a symbol, or any GPU).
Driver& driver();
// As driver(), but returns null instead of throwing and puts the reason in `why`.
Driver* try_driver(std::string* why = nullptr) noexcept;

// Installs a driver made from `api` (a test's fake, or the real table with some entries
// replaced) for the scope's lifetime. Only for tests: not safe while other threads use kjit.
class ScopedDriverOverride {
public:
    ScopedDriverOverride(const DriverApi& api, int device_count, int version = CUDA_VERSION);
    ~ScopedDriverOverride();
    ScopedDriverOverride(const ScopedDriverOverride&) = delete;
    ScopedDriverOverride& operator=(const ScopedDriverOverride&) = delete;
    Driver& driver() { return *installed_; }

private:
    std::unique_ptr<Driver> installed_;
    Driver* previous_;
    std::string previous_error_;
};

// The real table as loaded from libcuda.so.1 (empty entries if it could not be loaded), for
// tests that replace one entry and keep the rest.
DriverApi real_driver_api();

// "CUDA_ERROR_OUT_OF_MEMORY" and "out of memory" for a status, through the active table when
// there is one.
std::string cu_status_name(CUresult status);
std::string cu_status_text(CUresult status);

}  // namespace kjit::detail

namespace kjit::detail {
// The driver, with device `ordinal`'s primary context current on this thread: what every call
// that queues work or allocates on a device starts with.
inline Driver& driver_on(int ordinal) {
    Driver& d = driver();
    d.make_current(ordinal);
    return d;
}
}  // namespace kjit::detail
