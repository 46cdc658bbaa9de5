// kjit::bincount: counts of small non-negative integers. On the GPU each block counts into bins
// of its own in shared memory and adds them to the output once: a histogram through global atomics
// serialises on its few addresses (19 GB/s for 256 bins on an H100, docs/perf-log.md), while a
// block's shared-memory atomics are spread over its own copy.
#include <algorithm>
#include <string>

#include "jit/kernels/ops/bincount.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/reductions.hpp"
#include "jit/kernels/elementwise/copy.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {

namespace {

// Bins a block keeps in shared memory (4 bytes each, 48 KB); more go straight to the output.
constexpr std::int64_t kSharedBins = 12 * 1024;
constexpr unsigned kThreads = 512;

const char* const kSource = R"(
template <class T>
__device__ __forceinline__ void add(T value, unsigned long long* bins, long long nbins, int shared, unsigned int* local) {
    const long long v = (long long)value;
    if (v < 0 || v >= nbins) return;
    if (shared) atomicAdd(&local[v], 1u);
    else atomicAdd(&bins[v], 1ull);
}

// The elements are read 16 bytes at a time, four such loads in flight per thread before their
// atomics (one element per load left the loads waiting on the atomics: 74% of copy on an H100);
// the elements before the first 16-byte boundary and after the last whole vector one at a time.
template <class T>
__device__ __forceinline__ void count(const T* x, long long n, unsigned long long* bins, long long nbins, int shared) {
    extern __shared__ unsigned int local[];  // nbins of them when `shared`
    if (shared)
        for (long long b = threadIdx.x; b < nbins; b += blockDim.x) local[b] = 0;
    __syncthreads();
    constexpr int V = 16 / sizeof(T), U = 4;
    union Vector { uint4 raw; T e[V]; };
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x, stride = (long long)gridDim.x * blockDim.x;
    const long long head = min(n, (long long)(((16 - ((unsigned long long)x & 15)) & 15) / sizeof(T)));
    const long long vectors = (n - head) / V;
    const uint4* vx = reinterpret_cast<const uint4*>(x + head);
    for (long long i = t; i < head; i += stride) add(x[i], bins, nbins, shared, local);
    long long q = t;
    for (; q + (U - 1) * stride < vectors; q += U * stride) {
        Vector w[U];
#pragma unroll
        for (int u = 0; u < U; ++u) w[u].raw = __ldcs(vx + q + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int e = 0; e < V; ++e) add(w[u].e[e], bins, nbins, shared, local);
    }
    for (; q < vectors; q += stride) {
        Vector w;
        w.raw = __ldcs(vx + q);
#pragma unroll
        for (int e = 0; e < V; ++e) add(w.e[e], bins, nbins, shared, local);
    }
    for (long long i = head + vectors * V + t; i < n; i += stride) add(x[i], bins, nbins, shared, local);
    if (!shared) return;
    __syncthreads();
    for (long long b = threadIdx.x; b < nbins; b += blockDim.x)
        if (local[b] != 0) atomicAdd(&bins[b], (unsigned long long)local[b]);
}
extern "C" __global__ void kjit_bincount_int8(const signed char* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_uint8(const unsigned char* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_int16(const short* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_uint16(const unsigned short* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_int32(const int* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_uint32(const unsigned int* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_int64(const long long* x, long long n, unsigned long long* b, long long m, int s) { count(x, n, b, m, s); }
extern "C" __global__ void kjit_bincount_uint64(const unsigned long long* x, long long n, unsigned long long* b, long long m, int s) {
    // Values past 2^63 are out of range anyway: read them as such rather than as negative.
    count(reinterpret_cast<const long long*>(x), n, b, m, s);
}
)";

// uint64 values past 2^63 read as negative in the kernel (reinterpret_cast) and are skipped, as
// they are past any bin count.
const RawKernel& kernel_for(DType t) {
    const RawModule& module = jit::kernels::bincount_module();
    static const RawKernel kernels[] = {
        module.get_function("kjit_bincount_int8"),  module.get_function("kjit_bincount_uint8"),  module.get_function("kjit_bincount_int16"),
        module.get_function("kjit_bincount_uint16"), module.get_function("kjit_bincount_int32"), module.get_function("kjit_bincount_uint32"),
        module.get_function("kjit_bincount_int64"),  module.get_function("kjit_bincount_uint64")};
    switch (t.id()) {
        case DType::int8: return kernels[0];
        case DType::uint8: case DType::bool_: return kernels[1];
        case DType::int16: return kernels[2];
        case DType::uint16: return kernels[3];
        case DType::int32: return kernels[4];
        case DType::uint32: return kernels[5];
        case DType::int64: return kernels[6];
        case DType::uint64: return kernels[7];
        default: break;
    }
    throw TypeError("kjit::bincount counts integers and bools, not " + std::string(t.name()));
}

template <class T>
void count_on_host(const Array& x, std::int64_t* bins, std::int64_t nbins) {
    const T* v = x.data_as<T>();
    for (std::int64_t i = 0; i < x.size(); ++i) {
        const T e = v[i];
        if constexpr (std::is_signed_v<T>)
            if (e < 0) continue;
        if (static_cast<std::uint64_t>(e) < static_cast<std::uint64_t>(nbins)) ++bins[static_cast<std::int64_t>(e)];
    }
}

void host_bincount(const Array& x, const Array& out, std::int64_t nbins) {
    auto* bins = out.data_as<std::int64_t>();
    std::fill(bins, bins + nbins, 0);
    switch (x.dtype().id()) {
        case DType::int8: return count_on_host<std::int8_t>(x, bins, nbins);
        case DType::uint8: case DType::bool_: return count_on_host<std::uint8_t>(x, bins, nbins);
        case DType::int16: return count_on_host<std::int16_t>(x, bins, nbins);
        case DType::uint16: return count_on_host<std::uint16_t>(x, bins, nbins);
        case DType::int32: return count_on_host<std::int32_t>(x, bins, nbins);
        case DType::uint32: return count_on_host<std::uint32_t>(x, bins, nbins);
        case DType::int64: return count_on_host<std::int64_t>(x, bins, nbins);
        case DType::uint64: return count_on_host<std::uint64_t>(x, bins, nbins);
        default: break;
    }
    throw TypeError("kjit::bincount counts integers and bools, not " + std::string(x.dtype().name()));
}

}  // namespace

const RawModule& jit::kernels::bincount_module() {
    static const RawModule module(kSource, RawModuleOptions{.name = "kjit_bincount"});
    return module;
}

Array bincount(const Array& x, std::int64_t bins, const CallOptions& options, const Array& out) {
    if (!x.valid()) throw Error("kjit::bincount: the input is invalid (default-constructed)");
    if (!x.dtype().is_integer() && !x.dtype().is_bool())
        throw TypeError("kjit::bincount counts integers and bools, not " + std::string(x.dtype().name()));
    if (bins < 1) throw Error("kjit::bincount: bins must be at least 1, not " + std::to_string(bins));
    const Device device = x.device();
    const Stream given = options.stream ? *options.stream : Stream::current();
    const Stream stream = device.is_cpu() ? given : given.for_device(device);
    Array result = out;
    if (result.valid()) {
        if (!(result.dtype() == DType::int64) || result.shape() != Shape{bins} || !result.is_c_contiguous() || !(result.device() == device))
            throw Error("kjit::bincount: out must be a contiguous int64 array of shape (" + std::to_string(bins) + ",) on " +
                        device.to_string() + ", not " + result.to_string());
    } else {
        result = Array::empty({bins}, DType::int64, device, stream);
    }
    // The kernel and the host loop read elements in order: other layouts are packed first.
    const Array flat = x.is_c_contiguous() ? x : jit::kernels::elementwise::pack(x, x.dtype(), stream);
    if (device.is_cpu()) {
        host_bincount(flat, result, bins);
        return result;
    }
    const RawKernel& k = kernel_for(x.dtype());
    KJIT_CU_CHECK(detail::driver_on(device.ordinal()).cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(result.data()), 0,
                                                                      static_cast<std::size_t>(bins) * 8, stream.handle()));
    const std::int64_t n = flat.size();
    if (n == 0) return result;
    // Enough blocks to fill the GPU, each with many elements (its bins are cleared and flushed once).
    const std::int64_t sms = detail::device_attributes(device.ordinal()).sm_count;
    const std::int64_t blocks = std::clamp<std::int64_t>((n + kThreads * 16 - 1) / (kThreads * 16), 1, std::max<std::int64_t>(1, sms * 4));
    LaunchConfig config;
    config.stream = stream;
    const int shared = bins <= kSharedBins ? 1 : 0;
    config.shared_mem_bytes = shared ? static_cast<std::size_t>(bins) * 4 : 0;
    k(Dim3{static_cast<unsigned>(blocks), 1, 1}, Dim3{kThreads, 1, 1}, {flat, n, result, bins, shared}, config);
    return result;
}

}  // namespace kjit
