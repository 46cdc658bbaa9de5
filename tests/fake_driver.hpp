// A pretend CUDA driver for CPU tests: a DriverApi whose entries succeed with fake handles, and
// whose allocation, synchronisation and failure behaviour a test can steer. Installed through
// kjit::detail::ScopedDriverOverride, it lets error paths run without a GPU.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/detail/driver.hpp"

namespace kjit::test {

struct FakeDriverState {
    std::size_t free_bytes = std::size_t{1} << 30;  // what allocations may take in total
    std::size_t total_bytes = std::size_t{2} << 30;
    std::size_t cached_bytes = 0;  // held by the pool after frees until a trim
    int alloc_calls = 0;
    int free_calls = 0;
    int trim_calls = 0;
    int synchronize_calls = 0;
    int streams_created = 0;
    int streams_destroyed = 0;
    int modules_loaded = 0;    // cuModuleLoadData calls of make_fake_sm90_driver()
    int launches = 0;  // cuLaunchKernel calls of make_fake_launching_driver()
    unsigned last_grid_x = 0;  // and the grid's x of the last one
    unsigned last_block_x = 0;  // and its block's x
    int function_max_threads = 256;  // what its cuFuncGetAttribute says of MAX_THREADS_PER_BLOCK
    int device_max_threads = 1024;  // what the sm_90 fake says of the device's MAX_THREADS_PER_BLOCK
    CUresult stream_synchronize_result = CUDA_SUCCESS;  // what cuStreamSynchronize returns
    // What the sm_90 fake says of its device and of a kernel's occupancy, for launch attributes.
    int cc_major = 9, cc_minor = 0;  // the compute capability (set before the first device query)
    std::map<int, std::pair<int, int>> device_cc;  // per device ordinal, where not cc_major.cc_minor
    int cooperative_launch = 1;      // CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
    int max_active_clusters = 4;     // what cuOccupancyMaxActiveClusters says ...
    CUresult max_active_clusters_result = CUDA_SUCCESS;  // ... and returns
    int max_blocks_per_sm = 2;       // what cuOccupancyMaxActiveBlocksPerMultiprocessor says
    int occupancy_queries = 0;       // calls of either
    // cuLaunchKernelEx calls: their count, what the last one asked for (its attributes copied),
    // and what it returns.
    int ex_launches = 0;
    CUlaunchConfig last_ex{};
    std::vector<CUlaunchAttribute> last_ex_attributes;
    CUresult ex_result = CUDA_SUCCESS;
    // Several devices: whether cuDeviceCanAccessPeer says yes (for every pair), what
    // cuMemPoolSetAccess opened (pool, device), and the stream work of copies between devices in
    // order: "record e<n> on <stream>", "wait <stream> for e<n>", "peer <bytes> to cuda:<d> on
    // <stream> in cuda:<current>", "dtoh <bytes> on <stream>", "htod <bytes> on <stream>",
    // "sync <stream>" (streams as "s" and their handle in hex; 0 is a legacy default stream),
    // kept while record_stream_work is on.
    int can_access_peer = 1;
    // A device gone (fallen off the bus): its allocations, copies, launches, loads and
    // synchronisations return CUDA_ERROR_DEVICE_UNAVAILABLE; -1: none.
    int lost_device = -1;
    bool record_stream_work = false;
    std::vector<std::pair<CUmemoryPool, int>> pool_access;
    std::vector<std::string> stream_work;
    int events_created = 0;
    // What cuModuleGetGlobal finds, by symbol (anything else: CUDA_ERROR_NOT_FOUND).
    std::map<std::string, std::pair<CUdeviceptr, std::size_t>> globals;
    // The last cuMemcpyHtoDAsync: its destination and size.
    CUdeviceptr last_copy_to = 0;
    std::size_t last_copy_bytes = 0;
    std::map<CUdeviceptr, std::size_t> live;
    CUdeviceptr next_address = 0x10000000;
    // Stream capture: the stream being captured (null: none) and this thread's capture mode. What
    // a real driver refuses under a global or thread-local capture (a module load outside relaxed
    // mode, a synchronisation) invalidates the capture and is counted; cuStreamEndCapture then
    // fails. Launches and allocations on the capturing stream are counted as its nodes.
    CUstream capturing = nullptr;
    CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    bool capture_invalidated = false;
    int unsafe_calls_under_capture = 0;
    int captured_nodes = 0;
    int graph_launches = 0;
    int graphs_destroyed = 0;
    // cuGraphExecUpdate's answer: CUDA_GRAPH_EXEC_UPDATE_SUCCESS, or the reason it fails.
    CUgraphExecUpdateResult exec_update_result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    int exec_updates = 0;
};

// The state the fake entries read and change (one fake at a time).
FakeDriverState& fake_state();

// A table whose every entry is a fake; fresh state each call.
detail::DriverApi make_fake_driver();

// The same, describing one sm_90 GPU ("Fake GPU", 132 SMs, 1 GiB, 1024 threads and 227 KiB of
// shared memory per block) whose every module loads (as 0x6000, counted) and unloads; getting a
// function by name is the caller's. Its compute capability, cooperative launch support,
// occupancy answers and globals are FakeDriverState's; cuLaunchKernelEx and host-to-device copies
// are recorded there and do nothing else.
detail::DriverApi make_fake_sm90_driver();

// The sm_90 fake with one function (0x6000) for every name, whose launches do nothing but count
// (FakeDriverState::launches): for measuring and checking a call's host side.
detail::DriverApi make_fake_launching_driver();

}  // namespace kjit::test
