#include "fake_driver.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace kjit::test {
namespace {

FakeDriverState g_state;
thread_local CUcontext t_current_context = nullptr;

std::string stream_name(CUstream s) {
    char text[32];
    std::snprintf(text, sizeof text, "s%llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(s)));
    return text;
}
int device_of_context(CUcontext c) { return static_cast<int>(reinterpret_cast<std::uintptr_t>(c) - 0x1000); }
// True when the current context's device is the lost one.
bool on_lost_device() { return t_current_context != nullptr && device_of_context(t_current_context) == g_state.lost_device; }

const char* fake_name(CUresult r) {
    switch (r) {
        case CUDA_SUCCESS: return "CUDA_SUCCESS";
        case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
        case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
        case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
        case CUDA_ERROR_INVALID_CLUSTER_SIZE: return "CUDA_ERROR_INVALID_CLUSTER_SIZE";
        case CUDA_ERROR_DEVICE_UNAVAILABLE: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
        default: return nullptr;
    }
}

}  // namespace

FakeDriverState& fake_state() { return g_state; }

detail::DriverApi make_fake_driver() {
    g_state = FakeDriverState{};
    detail::DriverApi api;
    api.cuGetErrorName = [](CUresult r, const char** s) {
        *s = fake_name(r);
        return *s != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    };
    api.cuGetErrorString = [](CUresult r, const char** s) {
        *s = r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory"
             : r == CUDA_ERROR_LAUNCH_FAILED ? "unspecified launch failure"
                                               : "fake error";
        return CUDA_SUCCESS;
    };
    api.cuDeviceGet = [](CUdevice* d, int ordinal) {
        *d = ordinal;
        return CUDA_SUCCESS;
    };
    api.cuDevicePrimaryCtxRetain = [](CUcontext* c, CUdevice d) {
        *c = reinterpret_cast<CUcontext>(static_cast<std::uintptr_t>(0x1000 + d));
        return CUDA_SUCCESS;
    };
    api.cuCtxGetCurrent = [](CUcontext* c) {
        *c = t_current_context;
        return CUDA_SUCCESS;
    };
    api.cuCtxSetCurrent = [](CUcontext c) {
        t_current_context = c;
        return CUDA_SUCCESS;
    };
    api.cuCtxGetDevice = [](CUdevice* d) {
        if (t_current_context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
        *d = device_of_context(t_current_context);
        return CUDA_SUCCESS;
    };
    api.cuDeviceCanAccessPeer = [](int* can, CUdevice, CUdevice) {
        *can = g_state.can_access_peer;
        return CUDA_SUCCESS;
    };
    api.cuMemPoolSetAccess = [](CUmemoryPool pool, const CUmemAccessDesc* map, std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) g_state.pool_access.emplace_back(pool, map[i].location.id);
        return CUDA_SUCCESS;
    };
    api.cuEventCreate = [](CUevent* e, unsigned int) {
        *e = reinterpret_cast<CUevent>(static_cast<std::uintptr_t>(++g_state.events_created));
        return CUDA_SUCCESS;
    };
    api.cuEventDestroy = [](CUevent) { return CUDA_SUCCESS; };
    api.cuEventRecord = [](CUevent e, CUstream s) {
        if (g_state.record_stream_work) g_state.stream_work.push_back("record e" + std::to_string(reinterpret_cast<std::uintptr_t>(e)) + " on " + stream_name(s));
        return CUDA_SUCCESS;
    };
    api.cuStreamWaitEvent = [](CUstream s, CUevent e, unsigned int) {
        if (g_state.record_stream_work) g_state.stream_work.push_back("wait " + stream_name(s) + " for e" + std::to_string(reinterpret_cast<std::uintptr_t>(e)));
        return CUDA_SUCCESS;
    };
    api.cuMemcpyPeerAsync = [](CUdeviceptr, CUcontext to, CUdeviceptr, CUcontext, std::size_t bytes, CUstream s) {
        if (on_lost_device() || device_of_context(to) == g_state.lost_device) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        if (g_state.record_stream_work) g_state.stream_work.push_back("peer " + std::to_string(bytes) + " to cuda:" + std::to_string(device_of_context(to)) + " on " +
                                      stream_name(s) + " in cuda:" + std::to_string(device_of_context(t_current_context)));
        return CUDA_SUCCESS;
    };
    api.cuMemcpyDtoHAsync = [](void*, CUdeviceptr, std::size_t bytes, CUstream s) {
        if (g_state.record_stream_work) g_state.stream_work.push_back("dtoh " + std::to_string(bytes) + " on " + stream_name(s));
        return CUDA_SUCCESS;
    };
    api.cuMemcpyHtoDAsync = [](CUdeviceptr to, const void*, std::size_t bytes, CUstream s) {
        g_state.last_copy_to = to;
        g_state.last_copy_bytes = bytes;
        if (g_state.record_stream_work) g_state.stream_work.push_back("htod " + std::to_string(bytes) + " on " + stream_name(s));
        return CUDA_SUCCESS;
    };
    api.cuMemHostAlloc = [](void** p, std::size_t bytes, unsigned int) {
        *p = std::malloc(bytes);
        return *p != nullptr ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    };
    api.cuMemFreeHost = [](void* p) {
        std::free(p);
        return CUDA_SUCCESS;
    };
    api.cuCtxSynchronize = [] {
        if (on_lost_device()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        ++g_state.synchronize_calls;
        if (g_state.capturing != nullptr) {
            ++g_state.unsafe_calls_under_capture;
            g_state.capture_invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        return CUDA_SUCCESS;
    };
    api.cuStreamCreateWithPriority = [](CUstream* s, unsigned int, int) {
        *s = reinterpret_cast<CUstream>(static_cast<std::uintptr_t>(0x3000 + ++g_state.streams_created));
        return CUDA_SUCCESS;
    };
    api.cuStreamDestroy = [](CUstream) {
        ++g_state.streams_destroyed;
        return CUDA_SUCCESS;
    };
    api.cuStreamSynchronize = [](CUstream s) {
        if (on_lost_device()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        if (g_state.record_stream_work) g_state.stream_work.push_back("sync " + stream_name(s));
        if (g_state.capturing != nullptr) {
            ++g_state.unsafe_calls_under_capture;
            g_state.capture_invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        return g_state.stream_synchronize_result;
    };
    api.cuStreamIsCapturing = [](CUstream s, CUstreamCaptureStatus* status) {
        *status = g_state.capturing != nullptr && s == g_state.capturing
                      ? (g_state.capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE)
                      : CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    };
    api.cuThreadExchangeStreamCaptureMode = [](CUstreamCaptureMode* mode) {
        std::swap(*mode, g_state.thread_mode);
        return CUDA_SUCCESS;
    };
    api.cuStreamBeginCapture = [](CUstream s, CUstreamCaptureMode mode) {
        if (s == nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        g_state.capturing = s;
        g_state.thread_mode = mode;
        g_state.capture_invalidated = false;
        g_state.captured_nodes = 0;
        return CUDA_SUCCESS;
    };
    api.cuStreamEndCapture = [](CUstream, CUgraph* g) {
        g_state.capturing = nullptr;
        g_state.thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (g_state.capture_invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        *g = reinterpret_cast<CUgraph>(std::uintptr_t{0x9000});
        return CUDA_SUCCESS;
    };
    api.cuGraphInstantiateWithFlags = [](CUgraphExec* e, CUgraph, unsigned long long) {
        *e = reinterpret_cast<CUgraphExec>(std::uintptr_t{0xA000});
        return CUDA_SUCCESS;
    };
    api.cuGraphLaunch = [](CUgraphExec, CUstream) {
        ++g_state.graph_launches;
        return CUDA_SUCCESS;
    };
    api.cuGraphGetNodes = [](CUgraph, CUgraphNode*, std::size_t* count) {
        *count = static_cast<std::size_t>(g_state.captured_nodes);
        return CUDA_SUCCESS;
    };
    api.cuGraphDestroy = [](CUgraph) {
        ++g_state.graphs_destroyed;
        return CUDA_SUCCESS;
    };
    api.cuGraphExecDestroy = [](CUgraphExec) { return CUDA_SUCCESS; };
    api.cuGraphExecUpdate = [](CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo* info) {
        ++g_state.exec_updates;
        info->result = g_state.exec_update_result;
        return g_state.exec_update_result == CU_GRAPH_EXEC_UPDATE_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    };
    api.cuMemPoolCreate = [](CUmemoryPool* p, const CUmemPoolProps* props) {
        *p = reinterpret_cast<CUmemoryPool>(static_cast<std::uintptr_t>(0x2000 + props->location.id));
        return CUDA_SUCCESS;
    };
    api.cuMemPoolSetAttribute = [](CUmemoryPool, CUmemPool_attribute, void*) { return CUDA_SUCCESS; };
    api.cuMemPoolTrimTo = [](CUmemoryPool, std::size_t) {
        ++g_state.trim_calls;
        g_state.free_bytes += g_state.cached_bytes;
        g_state.cached_bytes = 0;
        return CUDA_SUCCESS;
    };
    api.cuMemAllocFromPoolAsync = [](CUdeviceptr* p, std::size_t bytes, CUmemoryPool, CUstream s) {
        if (on_lost_device()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        ++g_state.alloc_calls;
        if (g_state.capturing != nullptr && s == g_state.capturing) ++g_state.captured_nodes;
        if (bytes > g_state.free_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
        g_state.free_bytes -= bytes;
        *p = g_state.next_address;
        g_state.next_address += (bytes + 0xfff) & ~std::size_t{0xfff};
        g_state.live[*p] = bytes;
        return CUDA_SUCCESS;
    };
    api.cuMemFreeAsync = [](CUdeviceptr p, CUstream) {
        ++g_state.free_calls;
        auto it = g_state.live.find(p);
        if (it == g_state.live.end()) return CUDA_ERROR_INVALID_VALUE;
        g_state.cached_bytes += it->second;  // a pool keeps what is freed until trimmed
        g_state.live.erase(it);
        return CUDA_SUCCESS;
    };
    api.cuMemGetInfo = [](std::size_t* free_bytes, std::size_t* total) {
        *free_bytes = g_state.free_bytes;
        *total = g_state.total_bytes;
        return CUDA_SUCCESS;
    };
    return api;
}

detail::DriverApi make_fake_sm90_driver() {
    detail::DriverApi api = make_fake_driver();
    api.cuDeviceGetName = [](char* name, int len, CUdevice) {
        std::strncpy(name, "Fake GPU", static_cast<std::size_t>(len));
        return CUDA_SUCCESS;
    };
    api.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice d) {
        const auto cc = g_state.device_cc.find(d);
        switch (a) {
            case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = cc != g_state.device_cc.end() ? cc->second.first : g_state.cc_major; break;
            case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = cc != g_state.device_cc.end() ? cc->second.second : g_state.cc_minor; break;
            case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = g_state.cooperative_launch; break;
            case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = g_state.device_max_threads; break;
            case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
            case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
            default: *v = 1;
        }
        return CUDA_SUCCESS;
    };
    api.cuDeviceTotalMem = [](std::size_t* bytes, CUdevice) {
        *bytes = std::size_t{1} << 30;
        return CUDA_SUCCESS;
    };
    api.cuDeviceGetPCIBusId = [](char* id, int len, CUdevice d) {
        const std::string bus = "0000:0" + std::to_string(d % 10) + ":00.0";  // one per device
        std::strncpy(id, bus.c_str(), static_cast<std::size_t>(len));
        return CUDA_SUCCESS;
    };
    api.cuModuleLoadData = [](CUmodule* m, const void*) {
        if (on_lost_device()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        if (g_state.capturing != nullptr && g_state.thread_mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
            ++g_state.unsafe_calls_under_capture;
            g_state.capture_invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        {
            static std::mutex loads;  // kjit::warm loads on several threads
            const std::lock_guard lock(loads);
            ++g_state.modules_loaded;
        }
        *m = reinterpret_cast<CUmodule>(std::uintptr_t{0x6000});
        return CUDA_SUCCESS;
    };
    api.cuModuleUnload = [](CUmodule) { return CUDA_SUCCESS; };
    api.cuModuleGetGlobal = [](CUdeviceptr* p, std::size_t* bytes, CUmodule, const char* name) {
        const auto it = g_state.globals.find(name);
        if (it == g_state.globals.end()) return CUDA_ERROR_NOT_FOUND;
        *p = it->second.first;
        *bytes = it->second.second;
        return CUDA_SUCCESS;
    };
    api.cuOccupancyMaxActiveClusters = [](int* clusters, CUfunction, const CUlaunchConfig*) {
        ++g_state.occupancy_queries;
        *clusters = g_state.max_active_clusters;
        return g_state.max_active_clusters_result;
    };
    api.cuOccupancyMaxActiveBlocksPerMultiprocessor = [](int* blocks, CUfunction, int, std::size_t) {
        ++g_state.occupancy_queries;
        *blocks = g_state.max_blocks_per_sm;
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernelEx = [](const CUlaunchConfig* config, CUfunction, void**, void**) {
        ++g_state.ex_launches;
        g_state.last_ex = *config;
        g_state.last_ex_attributes.assign(config->attrs, config->attrs + config->numAttrs);
        g_state.last_ex.attrs = nullptr;  // the caller's, gone after the call
        return g_state.ex_result;
    };
    return api;
}

detail::DriverApi make_fake_launching_driver() {
    detail::DriverApi api = make_fake_sm90_driver();
    api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char*) {
        *f = reinterpret_cast<CUfunction>(std::uintptr_t{0x6000});
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned, CUstream, void**,
                            void**) {
        if (on_lost_device()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
        ++g_state.launches;
        if (g_state.capturing != nullptr) ++g_state.captured_nodes;
        g_state.last_grid_x = gx;
        g_state.last_block_x = bx;
        return CUDA_SUCCESS;
    };
    api.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) {
        *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? g_state.function_max_threads : 0;
        return CUDA_SUCCESS;
    };
    return api;
}

}  // namespace kjit::test
