// A pretend CUDA driver for CPU tests: a DriverApi whose entries succeed with fake handles, and
// whose allocation, synchronisation and failure behaviour a test can steer. Installed through
// kjit::detail::ScopedDriverOverride, it lets error paths run without a GPU.
#pragma once

#include <cstddef>
#include <map>

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
    std::map<CUdeviceptr, std::size_t> live;
    CUdeviceptr next_address = 0x10000000;
};

// The state the fake entries read and change (one fake at a time).
FakeDriverState& fake_state();

// A table whose every entry is a fake; fresh state each call.
detail::DriverApi make_fake_driver();

// The same, describing one sm_90 GPU ("Fake GPU", 132 SMs, 1 GiB, 1024 threads and 227 KiB of
// shared memory per block) whose every module loads (as 0x6000, counted) and unloads; getting a
// function by name is the caller's.
detail::DriverApi make_fake_sm90_driver();

// The sm_90 fake with one function (0x6000) for every name, whose launches do nothing but count
// (FakeDriverState::launches): for measuring and checking a call's host side.
detail::DriverApi make_fake_launching_driver();

}  // namespace kjit::test
