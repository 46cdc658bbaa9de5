// kjit::group_keys for integer keys in a small range (jit/kernels/ops/dense_groups.hpp): the keys'
// range (one pass), a count of each value in the range (one pass, in shared memory when the table
// fits), one block numbering the values that occur (group g is the g-th smallest) with their
// offsets, then each element's group read from that table (one pass). Keys go through the ordered
// bits of kjit::argsort (jit/kernels/ops/sort.hpp), so every integer dtype shares one scheme;
// bool keys are their truth (any non-zero byte is true), as group_sorted_keys compares them.
#include "jit/kernels/ops/dense_groups.hpp"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "jit/kernels/ops/sort.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/device_attributes.hpp"
#include "runtime/detail/driver.hpp"

namespace kjit::jit::kernels {

namespace {

constexpr unsigned kThreads = 256;
constexpr unsigned kNumberThreads = 1024;  // kjit_dense_number's one block
constexpr std::int64_t kSharedCounts = 8192;  // values whose counts a block keeps in shared memory (32 KB)

const char* const kSource = R"(
// lohi[0] = the smallest, lohi[1] = the largest bits of any key (they start at ~0 and 0).
#define KJIT_DENSE_RANGE(name, T, BITS) \
extern "C" __global__ void kjit_dense_range_##name(const T* x, long long s, long long n, u64* lohi) { \
    u64 lo = ~0ull, hi = 0; \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) { \
        const T v = x[i * s]; \
        const u64 b = BITS; \
        lo = b < lo ? b : lo; \
        hi = b > hi ? b : hi; \
    } \
    for (int d = 16; d > 0; d >>= 1) { \
        const u64 l = __shfl_xor_sync(0xffffffffu, lo, d), h = __shfl_xor_sync(0xffffffffu, hi, d); \
        lo = l < lo ? l : lo; \
        hi = h > hi ? h : hi; \
    } \
    if ((threadIdx.x & 31) == 0) { atomicMin(&lohi[0], lo); atomicMax(&lohi[1], hi); } \
}

// counts[v] = how many keys have bits lo + v (v < range); in shared memory first when `local`
// (launched with range * 4 bytes of it).
#define KJIT_DENSE_COUNT(name, T, BITS) \
extern "C" __global__ void kjit_dense_count_##name(const T* x, long long s, long long n, u64 lo, unsigned range, unsigned* counts, int local) { \
    extern __shared__ unsigned shared_counts[]; \
    if (local) { \
        for (unsigned v = threadIdx.x; v < range; v += blockDim.x) shared_counts[v] = 0; \
        __syncthreads(); \
    } \
    unsigned* to = local ? shared_counts : counts; \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) { \
        const T v = x[i * s]; \
        atomicAdd(&to[(unsigned)((BITS) - lo)], 1u); \
    } \
    if (local) { \
        __syncthreads(); \
        for (unsigned v = threadIdx.x; v < range; v += blockDim.x) \
            if (shared_counts[v] != 0) atomicAdd(&counts[v], shared_counts[v]); \
    } \
}

// group_of[i] = the group of key i (group_of_slot[bits - lo]).
#define KJIT_DENSE_LABEL(name, T, BITS) \
extern "C" __global__ void kjit_dense_label_##name(const T* x, long long s, long long n, u64 lo, const int* group_of_slot, int* group_of) { \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) { \
        const T v = x[i * s]; \
        group_of[i] = group_of_slot[(unsigned)((BITS) - lo)]; \
    } \
}

// keys[g] = the key whose bits are lo + slot_of_group[g].
#define KJIT_DENSE_KEYS(name, T, FROM) \
extern "C" __global__ void kjit_dense_keys_##name(const int* slot_of_group, long long count, u64 lo, T* keys) { \
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
    if (g < count) { const u64 b = lo + (u64)slot_of_group[g]; keys[g] = FROM; } \
}

#define KJIT_DENSE(name, T, BITS, FROM) KJIT_DENSE_RANGE(name, T, BITS) KJIT_DENSE_COUNT(name, T, BITS) KJIT_DENSE_LABEL(name, T, BITS) KJIT_DENSE_KEYS(name, T, FROM)
#define KJIT_SIGNED(b) (u64)(b ^ 0x8000000000000000ull)
KJIT_DENSE(bool, unsigned char, (u64)(v != 0), (unsigned char)b)
KJIT_DENSE(int8, signed char, ordered(v), (signed char)(long long)KJIT_SIGNED(b))
KJIT_DENSE(uint8, unsigned char, ordered(v), (unsigned char)b)
KJIT_DENSE(int16, short, ordered(v), (short)(long long)KJIT_SIGNED(b))
KJIT_DENSE(uint16, unsigned short, ordered(v), (unsigned short)b)
KJIT_DENSE(int32, int, ordered(v), (int)(long long)KJIT_SIGNED(b))
KJIT_DENSE(uint32, unsigned int, ordered(v), (unsigned int)b)
KJIT_DENSE(int64, long long, ordered(v), (long long)KJIT_SIGNED(b))
KJIT_DENSE(uint64, u64, ordered(v), b)

// One block: the values that occur, numbered in order (group_of_slot[v], -1 for a value that does
// not; slot_of_group[g]), each group's first place in key order (offsets[g]; offsets[groups] = n)
// and the number of groups (*count). Thread t takes a run of the range; two scans over the block
// give each run's first group and first place.
extern "C" __global__ void __launch_bounds__(1024) kjit_dense_number(const unsigned* counts, unsigned range, int* group_of_slot,
                                                                    int* slot_of_group, long long* offsets, long long* count) {
    __shared__ u64 places[1024];
    __shared__ unsigned groups[1024];
    const unsigned t = threadIdx.x, per = (range + 1023u) / 1024u;
    const unsigned begin = t * per < range ? t * per : range, end = begin + per < range ? begin + per : range;
    u64 place = 0;
    unsigned group = 0;
    for (unsigned v = begin; v < end; ++v) {
        const unsigned c = counts[v];
        place += c;
        group += c != 0;
    }
    places[t] = place;
    groups[t] = group;
    __syncthreads();
    for (unsigned d = 1; d < 1024u; d <<= 1) {  // inclusive scans
        const u64 p = t >= d ? places[t - d] : 0;
        const unsigned g = t >= d ? groups[t - d] : 0;
        __syncthreads();
        places[t] += p;
        groups[t] += g;
        __syncthreads();
    }
    u64 at = places[t] - place;
    unsigned g = groups[t] - group;
    for (unsigned v = begin; v < end; ++v) {
        const unsigned c = counts[v];
        if (c == 0) {
            group_of_slot[v] = -1;
            continue;
        }
        group_of_slot[v] = (int)g;
        slot_of_group[g] = (int)v;
        offsets[g] = (long long)at;
        ++g;
        at += c;
    }
    if (t == 1023u) {
        offsets[groups[t]] = (long long)places[t];
        *count = groups[t];
    }
}
)";

}  // namespace

const RawModule& dense_groups_module() {
    static const RawModule module(std::string(ordered_bits_cuda()) + kSource,
                                  RawModuleOptions{.nvrtc_options = {"-minimal"}, .name = "kjit_dense_groups"});
    return module;
}

std::optional<KeyGroups> dense_key_groups(const Array& keys, const Stream& s) {
    const DType t = keys.dtype();
    const std::int64_t n = keys.size();
    if (keys.is_host() || keys.ndim() != 1 || !(t.is_bool() || t.is_integer()) || n == 0 || n >= INT_MAX) return std::nullopt;
    const Device device = keys.device();
    const RawModule& m = dense_groups_module();
    const std::string name(t.name());  // the kernels' suffixes are the dtypes' names
    detail::Driver& d = detail::driver_on(device.ordinal());
    LaunchConfig config;
    config.stream = s;
    const std::int64_t sms = detail::device_attributes(device.ordinal()).sm_count;
    const unsigned grid = static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, sms * 8));
    const std::int64_t stride = keys.strides()[0];

    Array lohi = Array::empty({2}, DType::uint64, device, s);
    const auto at = reinterpret_cast<CUdeviceptr>(lohi.data());
    KJIT_CU_CHECK(d.cuMemsetD8Async(at, 0xff, 8, s.handle()));
    KJIT_CU_CHECK(d.cuMemsetD8Async(at + 8, 0, 8, s.handle()));
    m.get_function("kjit_dense_range_" + name)(grid, kThreads, {keys, stride, n, lohi}, config);
    detail::refuse_under_capture(d, s.handle(), "kjit::group_keys: learning the keys' range", "group the keys before the capture");
    std::uint64_t range_bits[2] = {0, 0};
    lohi.copy_to_host(range_bits, s);
    const std::uint64_t lo = range_bits[0];
    if (range_bits[1] - lo >= static_cast<std::uint64_t>(kDenseKeyRange)) return std::nullopt;
    const auto range = static_cast<unsigned>(range_bits[1] - lo + 1);

    Array counts = Array::empty({range}, DType::uint32, device, s);
    KJIT_CU_CHECK(d.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(counts.data()), 0, std::size_t{range} * 4, s.handle()));
    const int local = range <= kSharedCounts ? 1 : 0;
    LaunchConfig count_config = config;
    count_config.shared_mem_bytes = local ? std::size_t{range} * 4 : 0;
    m.get_function("kjit_dense_count_" + name)(grid, kThreads, {keys, stride, n, lo, range, counts, local}, count_config);
    Array group_of_slot = Array::empty({range}, DType::int32, device, s), slot_of_group = Array::empty({range}, DType::int32, device, s);
    Array offsets = Array::empty({range + 1}, DType::int64, device, s), count = Array::empty({1}, DType::int64, device, s);
    m.get_function("kjit_dense_number")(1, kNumberThreads, {counts, range, group_of_slot, slot_of_group, offsets, count}, config);
    std::int64_t groups = 0;
    count.copy_to_host(&groups, s);

    KeyGroups g;
    g.count = groups;
    g.keys = Array::empty({groups}, t, device, s);
    m.get_function("kjit_dense_keys_" + name)(static_cast<unsigned>((groups + kThreads - 1) / kThreads), kThreads,
                                              {slot_of_group, groups, lo, g.keys}, config);
    g.group_of = Array::empty({n}, DType::int32, device, s);
    m.get_function("kjit_dense_label_" + name)(grid, kThreads, {keys, stride, n, lo, group_of_slot, g.group_of}, config);
    g.offsets = offsets.slice(0, Slice{0, groups + 1, 1});
    return g;
}

}  // namespace kjit::jit::kernels
