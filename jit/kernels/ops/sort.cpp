// kjit::argsort: keys turned into 64-bit "ordered bits" (unsigned order = the keys' order), then a
// stable least-significant-digit radix sort of those bits with their indices, 8 bits a pass, over
// only the bits that differ between the keys. Each pass is three launches: per-tile counts of each
// digit, an exclusive cumsum of the counts laid out digit-major (a ScanKernel: every digit's
// tiles in order, then the next digit's), and a stable scatter. Host keys sort the same bits with
// std::stable_sort, so both back ends give the same order.
#include "jit/kernels/ops/sort.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "kjit/error.hpp"
#include "kjit/scan_kernel.hpp"
#include "kjit/sort.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::int64_t kItems = 16;  // the module's ITEMS: a tile is 4096 keys
constexpr std::int64_t kTile = kThreads * kItems;

const char* const kOrderedBits = R"(
typedef unsigned long long u64;

// Ordered bits: as unsigned 64-bit numbers they compare as the keys do. Floats: -0.0 is 0.0 (one
// key, so that a stable sort keeps their order), every NaN the largest value (last, in order).
__device__ __forceinline__ u64 ordered(unsigned char v) { return v; }
__device__ __forceinline__ u64 ordered(unsigned short v) { return v; }
__device__ __forceinline__ u64 ordered(unsigned int v) { return v; }
__device__ __forceinline__ u64 ordered(u64 v) { return v; }
__device__ __forceinline__ u64 ordered(signed char v) { return (u64)(long long)v ^ 0x8000000000000000ull; }
__device__ __forceinline__ u64 ordered(short v) { return (u64)(long long)v ^ 0x8000000000000000ull; }
__device__ __forceinline__ u64 ordered(int v) { return (u64)(long long)v ^ 0x8000000000000000ull; }
__device__ __forceinline__ u64 ordered(long long v) { return (u64)v ^ 0x8000000000000000ull; }
__device__ __forceinline__ u64 ordered(float v) {
    if (v != v) return ~0ull;
    const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
    return (u & 0x80000000u) ? (u64)(~u) : (u64)(u | 0x80000000u);
}
__device__ __forceinline__ u64 ordered(double v) {
    if (v != v) return ~0ull;
    const u64 u = v == 0.0 ? 0ull : (u64)__double_as_longlong(v);
    return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
}
)";

const char* const kSource = R"(
enum { THREADS = 256, ITEMS = 16, TILE = THREADS * ITEMS };

// k[i] = ordered(x[i * stride]); *varying |= the bits in which any key differs from the first.
template <class T>
__device__ __forceinline__ void bits(const T* x, long long stride, long long n, u64* k, u64* varying) {
    __shared__ u64 block_or;
    if (threadIdx.x == 0) block_or = 0;
    __syncthreads();
    const u64 first = ordered(x[0]);
    u64 acc = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        const u64 v = ordered(x[i * stride]);
        k[i] = v;
        acc |= v ^ first;
    }
    for (int d = 16; d > 0; d >>= 1) acc |= __shfl_xor_sync(0xffffffffu, acc, d);
    if ((threadIdx.x & 31) == 0 && acc != 0) atomicOr(&block_or, acc);
    __syncthreads();
    if (threadIdx.x == 0 && block_or != 0) atomicOr(varying, block_or);
}
#define KJIT_SORT_BITS(name, T) \
    extern "C" __global__ void kjit_sort_bits_##name(const T* x, long long s, long long n, u64* k, u64* v) { bits(x, s, n, k, v); }
KJIT_SORT_BITS(bool, unsigned char)
KJIT_SORT_BITS(int8, signed char)
KJIT_SORT_BITS(uint8, unsigned char)
KJIT_SORT_BITS(int16, short)
KJIT_SORT_BITS(uint16, unsigned short)
KJIT_SORT_BITS(int32, int)
KJIT_SORT_BITS(uint32, unsigned int)
KJIT_SORT_BITS(int64, long long)
KJIT_SORT_BITS(uint64, u64)
KJIT_SORT_BITS(float32, float)
KJIT_SORT_BITS(float64, double)

// counts[d * tiles + tile] = how many keys of tile `tile` have digit d (bits shift .. shift + 7).
extern "C" __global__ void __launch_bounds__(THREADS) kjit_sort_count(const u64* k, long long n, int shift, unsigned* counts, long long tiles) {
    __shared__ unsigned local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    const long long base = (long long)blockIdx.x * TILE;
    for (int r = 0; r < ITEMS; ++r) {
        const long long e = base + r * THREADS + threadIdx.x;
        if (e < n) atomicAdd(&local[(unsigned)(k[e] >> shift) & 255u], 1u);
    }
    __syncthreads();
    counts[(long long)threadIdx.x * tiles + blockIdx.x] = local[threadIdx.x];
}

// Moves each key of the tile (and its index: e itself on the first pass) to offsets[d * tiles +
// tile] (the exclusive cumsum of counts) plus its rank among the tile's keys of digit d, in index
// order: a round of 256 keys at a time, ranked within the warp by __match_any_sync and across the
// warps by their counts in shared memory.
extern "C" __global__ void __launch_bounds__(THREADS) kjit_sort_scatter(const u64* kin, const long long* iin, u64* kout, long long* iout,
                                                                  long long n, int shift, const u64* offsets, long long tiles,
                                                                  int first) {
    __shared__ u64 base[256];
    __shared__ unsigned running[256];
    __shared__ unsigned counts[THREADS / 32][256];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    base[t] = offsets[(long long)t * tiles + blockIdx.x];
    running[t] = 0;
    const long long tile0 = (long long)blockIdx.x * TILE;
    for (int r = 0; r < ITEMS; ++r) {
        const long long e = tile0 + r * THREADS + t;
        const bool valid = e < n;
        const u64 key = valid ? kin[e] : 0ull;
        const long long index = valid ? (first ? e : iin[e]) : 0;
        const unsigned digit = valid ? ((unsigned)(key >> shift) & 255u) : 256u;
        const unsigned peers = __match_any_sync(0xffffffffu, digit);
#pragma unroll
        for (int q = 0; q < THREADS / 32; ++q) counts[q][t] = 0;
        __syncthreads();
        if (valid && lane == __ffs(peers) - 1) counts[w][digit] = __popc(peers);
        __syncthreads();
        unsigned p = running[t];  // thread t: digit t's rank before each warp of this round
#pragma unroll
        for (int q = 0; q < THREADS / 32; ++q) {
            const unsigned c = counts[q][t];
            counts[q][t] = p;
            p += c;
        }
        running[t] = p;
        __syncthreads();
        if (valid) {
            const u64 at = base[digit] + counts[w][digit] + __popc(peers & ((1u << lane) - 1u));
            kout[at] = key;
            iout[at] = index;
        }
        __syncthreads();
    }
}
)";

// The same ordered bits on the host.
std::uint64_t flip(std::int64_t v) { return static_cast<std::uint64_t>(v) ^ 0x8000000000000000ull; }
std::uint64_t ordered_bits(const unsigned char* p, DType t) {
    const auto get = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t.id()) {
        case DType::bool_:
        case DType::uint8: return get(std::uint8_t{});
        case DType::uint16: return get(std::uint16_t{});
        case DType::uint32: return get(std::uint32_t{});
        case DType::uint64: return get(std::uint64_t{});
        case DType::int8: return flip(get(std::int8_t{}));
        case DType::int16: return flip(get(std::int16_t{}));
        case DType::int32: return flip(get(std::int32_t{}));
        case DType::int64: return flip(get(std::int64_t{}));
        case DType::float32: {
            const float v = get(float{});
            if (v != v) return ~0ull;
            const std::uint32_t u = v == 0.0f ? 0u : std::bit_cast<std::uint32_t>(v);
            return (u & 0x80000000u) ? static_cast<std::uint64_t>(~u) : static_cast<std::uint64_t>(u | 0x80000000u);
        }
        case DType::float64: {
            const double v = get(double{});
            if (v != v) return ~0ull;
            const std::uint64_t u = v == 0.0 ? 0ull : std::bit_cast<std::uint64_t>(v);
            return (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
        }
        default: break;
    }
    throw TypeError("kjit::argsort: no keys of dtype " + std::string(t.name()));
}

void check_keys(const Array& keys) {
    if (!keys.valid()) throw Error("kjit::argsort: keys is an Array with no buffer (default-constructed)");
    if (keys.ndim() != 1)
        throw ShapeError("kjit::argsort: keys must be 1-D, but has shape " + shape_to_string(keys.shape()) +
                         "; reshape({-1}) a contiguous array, or pick a column");
    const DType t = keys.dtype();
    if (!(t.is_bool() || t.is_integer() || t == DType::float32 || t == DType::float64))
        throw TypeError("kjit::argsort: keys of dtype " + std::string(t.name()) +
                        " are not supported: keys are bool, int8..int64, uint8..uint64, float32 or float64");
}

Array argsort_on_host(const Array& keys) {
    const std::int64_t n = keys.size();
    const DType t = keys.dtype();
    std::vector<std::uint64_t> bits(static_cast<std::size_t>(n));
    const auto* p = static_cast<const unsigned char*>(keys.data());
    const std::int64_t step = keys.strides()[0] * static_cast<std::int64_t>(t.itemsize());
    for (std::int64_t i = 0; i < n; ++i) bits[static_cast<std::size_t>(i)] = ordered_bits(p + i * step, t);
    Array order = Array::empty({n}, DType::int64, Device::cpu());
    auto* o = order.data_as<std::int64_t>();
    std::iota(o, o + n, std::int64_t{0});
    std::stable_sort(o, o + n, [&](std::int64_t a, std::int64_t b) { return bits[static_cast<std::size_t>(a)] < bits[static_cast<std::size_t>(b)]; });
    return order;
}

struct SortKernels {
    RawKernel count, scatter;
    std::vector<std::pair<int, RawKernel>> bits;  // by dtype id
    const RawKernel& bits_for(DType t) const {
        for (const auto& [id, k] : bits)
            if (id == t.id()) return k;
        throw TypeError("kjit::argsort: no keys of dtype " + std::string(t.name()));
    }
};

const SortKernels& sort_kernels() {
    static const SortKernels kernels = [] {
        const RawModule& m = jit::kernels::sort_module();
        SortKernels k{m.get_function("kjit_sort_count"), m.get_function("kjit_sort_scatter"), {}};
        const std::pair<DType, const char*> names[] = {
            {DType::bool_, "bool"},   {DType::int8, "int8"},     {DType::uint8, "uint8"},   {DType::int16, "int16"},
            {DType::uint16, "uint16"}, {DType::int32, "int32"},   {DType::uint32, "uint32"}, {DType::int64, "int64"},
            {DType::uint64, "uint64"}, {DType::float32, "float32"}, {DType::float64, "float64"}};
        for (const auto& [t, name] : names) k.bits.emplace_back(t.id(), m.get_function(std::string("kjit_sort_bits_") + name));
        return k;
    }();
    return kernels;
}

}  // namespace

const char* jit::kernels::ordered_bits_cuda() { return kOrderedBits; }

const RawModule& jit::kernels::sort_module() {
    static const RawModule module(std::string(kOrderedBits) + kSource, RawModuleOptions{.nvrtc_options = {"-minimal"}, .name = "kjit_sort"});
    return module;
}

Array argsort(const Array& keys, std::optional<Stream> stream) {
    check_keys(keys);
    if (keys.is_host()) return argsort_on_host(keys);
    const Device device = keys.device();
    const Stream s = (stream ? *stream : Stream::current()).for_device(device);
    const std::int64_t n = keys.size();
    if (n == 0) return Array::empty({0}, DType::int64, device, s);
    const SortKernels& k = sort_kernels();
    LaunchConfig config;
    config.stream = s;
    Array ka = Array::empty({n}, DType::uint64, device, s), kb = Array::empty({n}, DType::uint64, device, s);
    Array ia = Array::empty({n}, DType::int64, device, s), ib = Array::empty({n}, DType::int64, device, s);
    Array varying = Array::empty({1}, DType::uint64, device, s);
    detail::Driver& d = detail::driver_on(device.ordinal());
    KJIT_CU_CHECK(d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(varying.data()), 0, 8, s.handle()));
    const std::int64_t sms = detail::device_attributes(device.ordinal()).sm_count;
    const std::int64_t grid = std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, sms * 8);
    k.bits_for(keys.dtype())(static_cast<unsigned>(grid), kThreads, {keys, keys.strides()[0], n, ka, varying}, config);
    detail::refuse_under_capture(d, s.handle(), "kjit::argsort: learning which key bits differ",
                                 "sort before the capture: argsort waits for the GPU once");
    std::uint64_t differ = 0;
    varying.copy_to_host(&differ, s);  // the one synchronisation
    const int lo = differ == 0 ? 0 : std::countr_zero(differ), hi = differ == 0 ? 0 : 63 - std::countl_zero(differ);
    const std::int64_t tiles = (n + kTile - 1) / kTile;
    if (tiles > INT_MAX) throw Error("kjit::argsort: " + std::to_string(n) + " keys need more blocks than a grid has");
    Array counts = Array::empty({256 * tiles}, DType::uint32, device, s);
    // At least one pass, even when every key is equal: its scatter writes the indices 0 .. n-1.
    for (int shift = lo, first = 1; first != 0 || shift <= hi; shift += 8, first = 0) {
        k.count(static_cast<unsigned>(tiles), kThreads, {ka, n, shift, counts, tiles}, config);
        ScanOptions exclusive;
        exclusive.stream = s;
        exclusive.exclusive = true;
        const Array offsets = cumsum(counts, exclusive);
        k.scatter(static_cast<unsigned>(tiles), kThreads, {ka, ia, kb, ib, n, shift, offsets, tiles, first}, config);
        std::swap(ka, kb);
        std::swap(ia, ib);
    }
    return ia;
}

}  // namespace kjit
