// Segments of sorted keys (jit/kernels/ops/segments.hpp): the kernels compile with NVRTC; wrong arguments are
// refused before anything runs; on a pretend driver, the launches, their arguments and the one
// synchronisation; on the GPU, against a host reference on fresh random keys of every dtype and
// layout.
#include "test_support.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "jit/kernels/ops/segments.hpp"
#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/driver.hpp"

using kjit::test::ProcessCacheGuard;
using kjit::Array;
using kjit::DType;
using kjit::detail::Segments;
using kjit::detail::segments_of_sorted_keys;
using Catch::Matchers::Contains;

namespace {

void use_cache_in(const std::filesystem::path& dir) {
    kjit::CacheSettings s;
    s.dir = dir.string();
    kjit::configure_cache(s);
}

}  // namespace

TEST_CASE("the segments kernels compile for sm_90 and sm_80", "[segments][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    use_cache_in(dir.path());
    const kjit::Binary b = kjit::detail::segments_module().compile("sm_90");
    CHECK(b.arch == "sm_90");
    CHECK_FALSE(b.cubin.empty());
    for (const char* k : {"u8", "b8", "u16", "u32", "u64", "f32", "f64"}) {
        INFO(k);
        CHECK_THAT(b.ptx, Contains(std::string(".entry kjit_segments_count_") + k + "("));
        CHECK_THAT(b.ptx, Contains(std::string(".entry kjit_segments_write_") + k + "("));
    }
    CHECK_THAT(b.ptx, Contains(".entry kjit_segments_scan("));
    // Nothing in them needs more than the warp intrinsics every supported GPU has.
    CHECK_FALSE(kjit::detail::segments_module().compile("sm_80").cubin.empty());
    // The process's kernels name those entries (a missing one would fail only at its first launch).
    const kjit::detail::SegmentKernels& k = kjit::detail::segment_kernels();
    CHECK(k.scan().name() == "kjit_segments_scan");
    CHECK(k.count(DType::int32).name() == "kjit_segments_count_u32");
    CHECK(k.count(DType::uint32).name() == "kjit_segments_count_u32");
    CHECK(k.write(DType::bool_).name() == "kjit_segments_write_b8");
    CHECK(k.write(DType::float64).name() == "kjit_segments_write_f64");
    CHECK_THROWS_AS(k.count(DType::float16), kjit::TypeError);
}

TEST_CASE("segments_of_sorted_keys refuses wrong keys before launching, naming them", "[segments]") {
    const kjit::Stream s;
    CHECK_THROWS_AS(segments_of_sorted_keys(Array(), s), kjit::Error);
    CHECK_THROWS_WITH(segments_of_sorted_keys(Array(), s), Contains("keys is an Array with no buffer"));

    const Array matrix = Array::empty({2, 3}, DType::int32, kjit::Device::cpu());
    CHECK_THROWS_AS(segments_of_sorted_keys(matrix, s), kjit::ShapeError);
    CHECK_THROWS_WITH(segments_of_sorted_keys(matrix, s), Contains("keys must be 1-D") && Contains("(2, 3)"));
    const Array scalar = Array::empty({}, DType::int32, kjit::Device::cpu());
    CHECK_THROWS_AS(segments_of_sorted_keys(scalar, s), kjit::ShapeError);

    for (DType t : {DType::float16, DType::bfloat16, DType::complex64, DType::complex128}) {
        INFO(t.name());
        const Array a = Array::empty({4}, t, kjit::Device::cpu());
        CHECK_THROWS_AS(segments_of_sorted_keys(a, s), kjit::TypeError);
        CHECK_THROWS_WITH(segments_of_sorted_keys(a, s),
                          Contains("keys of dtype " + std::string(t.name()) + " are not supported"));
    }
    CHECK_THROWS_WITH(segments_of_sorted_keys(Array::empty({4}, DType::float16, kjit::Device::cpu()), s),
                      Contains("to float32 first"));

    for (DType t : kjit::test::all_dtypes()) {
        if (t.is_complex() || t == DType::float16 || t == DType::bfloat16) continue;
        INFO(t.name());
        // Host keys are grouped on the host: four equal keys are one run.
        const Array host = Array::empty({4}, t, kjit::Device::cpu());
        std::memset(host.data(), 0, 4 * t.itemsize());
        const kjit::detail::Segments runs = segments_of_sorted_keys(host, s);
        CHECK(runs.count == 1);
        CHECK(runs.offsets.is_host());
        CHECK(static_cast<const std::int64_t*>(runs.offsets.data())[1] == 4);
    }
}

// --- on a pretend driver: what is launched, with what, and how often the host waits ---

namespace {

struct FakeLaunch {
    std::string kernel;
    unsigned grid = 0, block = 0;
    CUstream stream = nullptr;
    std::vector<std::vector<unsigned char>> params;
};

struct FakeSegmentsDriver {
    std::vector<std::string> functions;  // a function's handle is 0x7000 + its index here
    std::vector<FakeLaunch> launches;
    std::int64_t count_to_report = 0;  // what the copy of the number of runs brings back
    int copies = 0;
    std::size_t copied_bytes = 0;
    CUdeviceptr copied_from = 0;
    int synchronizes = 0;
    int memsets = 0;
    CUdeviceptr memset_at = 0;
    std::size_t memset_bytes = 0;
};
FakeSegmentsDriver g_seg;

// The parameter sizes of the template's kernels (all 8 bytes: pointers and long longs).
std::size_t param_count(const std::string& kernel) {
    if (kernel == "kjit_segments_scan") return 2;
    if (kernel.rfind("kjit_segments_count_", 0) == 0) return 4;
    if (kernel.rfind("kjit_segments_write_", 0) == 0) return 7;
    if (kernel == "kjit_segments_pad") return 5;
    return 0;
}

const std::string& function_name(CUfunction f) {
    return g_seg.functions.at(reinterpret_cast<std::uintptr_t>(f) - 0x7000);
}

kjit::detail::DriverApi fake_segments_driver() {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    g_seg = FakeSegmentsDriver{};
    api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
        if (param_count(name) == 0) return CUDA_ERROR_NOT_FOUND;
        g_seg.functions.emplace_back(name);
        *f = reinterpret_cast<CUfunction>(0x7000 + g_seg.functions.size() - 1);
        return CUDA_SUCCESS;
    };
    api.cuFuncGetParamInfo = [](CUfunction f, std::size_t index, std::size_t* offset, std::size_t* size) {
        if (index >= param_count(function_name(f))) return CUDA_ERROR_INVALID_VALUE;
        *offset = 8 * index;
        *size = 8;
        return CUDA_SUCCESS;
    };
    api.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) {
        *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK                ? 1024
             : a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ? 48 * 1024
                                                                    : 0;
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned, CUstream stream, void** params, void**) {
        if (gy != 1 || gz != 1 || by != 1 || bz != 1) return CUDA_ERROR_INVALID_VALUE;
        FakeLaunch l{function_name(f), gx, bx, stream, {}};
        for (std::size_t k = 0; k < param_count(l.kernel); ++k) {
            const auto* p = static_cast<const unsigned char*>(params[k]);
            l.params.emplace_back(p, p + 8);
        }
        g_seg.launches.push_back(std::move(l));
        return CUDA_SUCCESS;
    };
    api.cuMemcpyDtoHAsync = [](void* dst, CUdeviceptr src, std::size_t bytes, CUstream) {
        ++g_seg.copies;
        g_seg.copied_from = src;
        g_seg.copied_bytes = bytes;
        if (bytes == sizeof g_seg.count_to_report) std::memcpy(dst, &g_seg.count_to_report, bytes);
        return CUDA_SUCCESS;
    };
    api.cuStreamSynchronize = [](CUstream) {
        ++g_seg.synchronizes;
        return CUDA_SUCCESS;
    };
    api.cuMemsetD8Async = [](CUdeviceptr p, unsigned char v, std::size_t bytes, CUstream) {
        ++g_seg.memsets;
        g_seg.memset_at = p;
        g_seg.memset_bytes = bytes;
        return v == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    };
    return api;
}

template <class T>
std::vector<unsigned char> bytes_of(T v) {
    std::vector<unsigned char> b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
}

std::vector<unsigned char> address_of(const Array& a) { return bytes_of(a.data()); }

}  // namespace

TEST_CASE("segments: three launches on the stream and one synchronisation", "[segments][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    use_cache_in(dir.path());
    const kjit::detail::ScopedDriverOverride fake(fake_segments_driver(), 1);
    // Kernels of their own module (another cache key), so that the pretend module the registry
    // keeps for the process is never what a GPU test in the same process gets.
    const kjit::detail::SegmentKernels kernels(kjit::detail::segments_module("\n// segments_test: pretend driver\n"));
    const kjit::Stream s = kjit::Stream::create();
    const auto tile = kjit::detail::kSegmentTile;

    SECTION("n keys: count, scan, write; offsets and keys sized by the count read back") {
        const std::int64_t n = 2 * tile + 5;  // three blocks, the last with 5 keys
        const Array keys = Array::empty({n}, DType::int32, kjit::Device::cuda(0), s);
        g_seg.count_to_report = 7;
        const Segments got = segments_of_sorted_keys(keys, s, kernels);

        CHECK(g_seg.synchronizes == 1);
        CHECK(g_seg.copies == 1);
        CHECK(g_seg.copied_bytes == 8);
        REQUIRE(g_seg.launches.size() == 3);
        const FakeLaunch& count = g_seg.launches[0];
        const FakeLaunch& scan = g_seg.launches[1];
        const FakeLaunch& write = g_seg.launches[2];
        CHECK(count.kernel == "kjit_segments_count_u32");
        CHECK(scan.kernel == "kjit_segments_scan");
        CHECK(write.kernel == "kjit_segments_write_u32");
        for (const FakeLaunch& l : g_seg.launches) CHECK(l.stream == s.handle());
        CHECK(count.grid == 3);
        CHECK(count.block == kjit::detail::kSegmentThreads);
        CHECK(scan.grid == 1);
        CHECK(scan.block == kjit::detail::kSegmentScanThreads);
        CHECK(write.grid == 3);
        CHECK(write.block == kjit::detail::kSegmentThreads);

        // count(keys, stride, n, block_offsets); scan(block_offsets, blocks);
        // write(keys, stride, n, block_offsets, count, offsets, run_keys).
        CHECK(count.params[0] == address_of(keys));
        CHECK(count.params[1] == bytes_of(std::int64_t{1}));
        CHECK(count.params[2] == bytes_of(n));
        const std::vector<unsigned char>& block_offsets = count.params[3];
        CHECK(scan.params[0] == block_offsets);
        CHECK(scan.params[1] == bytes_of(std::int64_t{3}));
        CHECK(write.params[0] == address_of(keys));
        CHECK(write.params[1] == bytes_of(std::int64_t{1}));
        CHECK(write.params[2] == bytes_of(n));
        CHECK(write.params[3] == block_offsets);
        CHECK(write.params[4] == bytes_of(std::int64_t{7}));
        CHECK(write.params[5] == address_of(got.offsets));
        CHECK(write.params[6] == address_of(got.keys));
        // The number read is the scan's total, after the 3 blocks' offsets.
        CUdeviceptr offsets_at = 0;
        std::memcpy(&offsets_at, block_offsets.data(), sizeof offsets_at);
        CHECK(g_seg.copied_from == offsets_at + 3 * 8);

        CHECK(got.count == 7);
        CHECK(got.offsets.dtype() == DType::int64);
        CHECK(got.offsets.shape() == kjit::Shape{8});
        CHECK(got.offsets.is_c_contiguous());
        CHECK(got.keys.dtype() == DType::int32);
        CHECK(got.keys.shape() == kjit::Shape{7});
        CHECK(got.keys.is_c_contiguous());
        CHECK(got.keys.device() == kjit::Device::cuda(0));
    }

    SECTION("a strided view passes its first element and its stride; signedness shares a kernel") {
        const Array base = Array::empty({100}, DType::uint64, kjit::Device::cuda(0), s);
        const Array reversed = base.slice(0, {std::nullopt, std::nullopt, -3});  // elements 99, 96, ..., 0
        g_seg.count_to_report = 34;
        const Segments got = segments_of_sorted_keys(reversed, s, kernels);
        REQUIRE(g_seg.launches.size() == 3);
        CHECK(g_seg.launches[0].kernel == "kjit_segments_count_u64");
        CHECK(g_seg.launches[0].grid == 1);
        CHECK(g_seg.launches[0].params[0] == bytes_of(static_cast<const char*>(base.data()) + 99 * 8));
        CHECK(g_seg.launches[0].params[1] == bytes_of(std::int64_t{-3}));
        CHECK(g_seg.launches[0].params[2] == bytes_of(std::int64_t{34}));
        CHECK(g_seg.launches[2].params[1] == bytes_of(std::int64_t{-3}));
        CHECK(got.keys.dtype() == DType::uint64);
        CHECK(got.keys.shape() == kjit::Shape{34});
        CHECK(g_seg.synchronizes == 1);
    }

    SECTION("each dtype's kernel") {
        const std::pair<DType, const char*> expected[] = {
            {DType::bool_, "b8"},    {DType::int8, "u8"},     {DType::uint8, "u8"},   {DType::int16, "u16"},
            {DType::uint16, "u16"},  {DType::int32, "u32"},   {DType::uint32, "u32"}, {DType::int64, "u64"},
            {DType::uint64, "u64"},  {DType::float32, "f32"}, {DType::float64, "f64"}};
        g_seg.count_to_report = 1;
        for (const auto& [t, suffix] : expected) {
            INFO(t.name());
            g_seg.launches.clear();
            segments_of_sorted_keys(Array::empty({10}, t, kjit::Device::cuda(0), s), s, kernels);
            REQUIRE(g_seg.launches.size() == 3);
            CHECK(g_seg.launches[0].kernel == std::string("kjit_segments_count_") + suffix);
            CHECK(g_seg.launches[2].kernel == std::string("kjit_segments_write_") + suffix);
        }
    }

    SECTION("outputs given at their largest: count, scan, write for n runs, pad; no waiting") {
        const std::int64_t n = tile + 5;
        const Array keys = Array::empty({n}, DType::float64, kjit::Device::cuda(0), s);
        const Array offsets = Array::empty({n + 1}, DType::int64, kjit::Device::cuda(0), s);
        const Array run_keys = Array::empty({n}, DType::float64, kjit::Device::cuda(0), s);
        const Array count = Array::empty({1}, DType::int64, kjit::Device::cuda(0), s);
        kjit::detail::segments_of_sorted_keys_into(keys, offsets, run_keys, count, s, kernels);
        CHECK(g_seg.synchronizes == 0);
        CHECK(g_seg.copies == 0);
        REQUIRE(g_seg.launches.size() == 4);
        const FakeLaunch& write = g_seg.launches[2];
        const FakeLaunch& pad = g_seg.launches[3];
        CHECK(write.kernel == "kjit_segments_write_f64");
        CHECK(write.params[4] == bytes_of(n));  // offsets[n] = n: the last offset of the largest size
        CHECK(write.params[5] == address_of(offsets));
        CHECK(write.params[6] == address_of(run_keys));
        // pad(block_offsets, blocks, n, offsets, count)
        CHECK(pad.kernel == "kjit_segments_pad");
        CHECK(pad.params[0] == g_seg.launches[0].params[3]);
        CHECK(pad.params[1] == bytes_of(std::int64_t{2}));
        CHECK(pad.params[2] == bytes_of(n));
        CHECK(pad.params[3] == address_of(offsets));
        CHECK(pad.params[4] == address_of(count));
        CHECK(pad.grid == (n + 1 + 255) / 256);

        // Outputs that do not fit are refused before anything runs, each by its name.
        g_seg.launches.clear();
        const Array short_offsets = Array::empty({n}, DType::int64, kjit::Device::cuda(0), s);
        CHECK_THROWS_WITH(kjit::detail::segments_of_sorted_keys_into(keys, short_offsets, run_keys, count, s, kernels),
                          Contains("offsets must be C-contiguous with " + std::to_string(n + 1) + " elements"));
        const Array int_keys = Array::empty({n}, DType::int32, kjit::Device::cuda(0), s);
        CHECK_THROWS_WITH(kjit::detail::segments_of_sorted_keys_into(keys, offsets, int_keys, count, s, kernels),
                          Contains("group_keys must be float64, not int32"));
        CHECK_THROWS_WITH(kjit::detail::segments_of_sorted_keys_into(keys, offsets, run_keys, Array(), s, kernels),
                          Contains("count is an Array with no buffer"));
        CHECK_THROWS_WITH(kjit::detail::segments_of_sorted_keys_into(keys, offsets, keys, count, s, kernels),
                          Contains("keys and group_keys overlap in memory"));
        CHECK_THROWS_WITH(kjit::detail::segments_of_sorted_keys_into(keys, offsets, run_keys, offsets.slice(0, {0, 1}), s, kernels),
                          Contains("offsets and count overlap in memory"));
        CHECK(g_seg.launches.empty());

        // No keys: offsets = [0] and count = 0 by memsets.
        const Array none = Array::empty({0}, DType::float64, kjit::Device::cuda(0), s);
        const Array one_offset = Array::empty({1}, DType::int64, kjit::Device::cuda(0), s);
        kjit::detail::segments_of_sorted_keys_into(none, one_offset, Array::empty({0}, DType::float64, kjit::Device::cuda(0), s),
                                                   count, s, kernels);
        CHECK(g_seg.launches.empty());
        CHECK(g_seg.memsets == 2);  // offsets, then count
        CHECK(g_seg.memset_at == reinterpret_cast<CUdeviceptr>(count.data()));
        CHECK(g_seg.memset_bytes == 8);
    }

    SECTION("no keys: offsets = [0] by a memset, nothing launched, no waiting") {
        const Array keys = Array::empty({0}, DType::int64, kjit::Device::cuda(0), s);
        const Segments got = segments_of_sorted_keys(keys, s, kernels);
        CHECK(got.count == 0);
        CHECK(got.offsets.shape() == kjit::Shape{1});
        CHECK(got.keys.shape() == kjit::Shape{0});
        CHECK(got.keys.dtype() == DType::int64);
        CHECK(g_seg.launches.empty());
        CHECK(g_seg.synchronizes == 0);
        CHECK(g_seg.memsets == 1);
        CHECK(g_seg.memset_at == reinterpret_cast<CUdeviceptr>(got.offsets.data()));
        CHECK(g_seg.memset_bytes == 8);
    }

    SECTION("a count that cannot be is an Error, not an allocation of garbage size") {
        const Array keys = Array::empty({10}, DType::int32, kjit::Device::cuda(0), s);
        g_seg.count_to_report = 11;
        CHECK_THROWS_WITH(segments_of_sorted_keys(keys, s, kernels), Contains("counted 11 runs in 10 keys"));
        g_seg.count_to_report = 0;
        CHECK_THROWS_AS(segments_of_sorted_keys(keys, s, kernels), kjit::Error);
    }
}

// --- on the GPU, against a host reference ---

namespace {

// Host type of each dtype's elements (bool as its byte, so that a non-canonical true can be made).
template <class T>
bool same_key(DType t, T a, T b) {
    if (t.is_bool()) return (a != 0) == (b != 0);
    return a == b;  // floats: -0.0 == 0.0, NaN != NaN, as the kernels compare
}

template <class T>
T key_from(DType t, std::uint64_t r) {
    if (t.is_bool()) return static_cast<T>(r & 1);
    if constexpr (std::is_floating_point_v<T>)
        return static_cast<T>(static_cast<std::int64_t>(r % 2000001) - 1000000) / T(8);
    else
        return static_cast<T>(r);  // every bit pattern of the width
}

// Keys whose runs have the given lengths: each run's key differs from the one before. The function
// under test only compares neighbours, so random run keys test it as well as sorted ones would.
template <class T>
std::vector<T> keys_with_runs(DType t, const std::vector<std::int64_t>& lengths) {
    std::int64_t n = 0;
    for (std::int64_t l : lengths) n += l;
    std::vector<T> keys;
    keys.reserve(static_cast<std::size_t>(n));
    std::optional<T> previous;
    for (std::int64_t l : lengths) {
        T k = key_from<T>(t, kjit::test::rng()());
        while (previous && same_key(t, k, *previous)) k = key_from<T>(t, kjit::test::rng()());
        keys.insert(keys.end(), static_cast<std::size_t>(l), k);
        previous = k;
    }
    return keys;
}

std::vector<std::int64_t> random_lengths(std::int64_t n, std::int64_t longest) {
    std::uniform_int_distribution<std::int64_t> length(1, longest);
    std::vector<std::int64_t> lengths;
    for (std::int64_t left = n; left > 0;) {
        const std::int64_t l = std::min(left, length(kjit::test::rng()));
        lengths.push_back(l);
        left -= l;
    }
    return lengths;
}

// The first index where two vectors differ (or the shorter length), -1 when equal; compared as
// bytes, so that float keys must keep their first element's bits.
template <class T>
std::int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
    const std::size_t common = std::min(a.size(), b.size());
    for (std::size_t k = 0; k < common; ++k)
        if (std::memcmp(&a[k], &b[k], sizeof(T)) != 0) return static_cast<std::int64_t>(k);
    return a.size() == b.size() ? -1 : static_cast<std::int64_t>(common);
}

// Checks segments_of_sorted_keys(device_keys) against the runs of `host_keys`, which are
// device_keys' elements in order.
template <class T>
void check_segments(DType t, const std::vector<T>& host_keys, const Array& device_keys, const kjit::Stream& s) {
    INFO("dtype " << t.name() << ", n = " << host_keys.size() << ", stride " << device_keys.strides().at(0)
                  << ", seed " << kjit::test::seed());
    std::vector<std::int64_t> want_offsets;
    std::vector<T> want_keys;
    for (std::size_t i = 0; i < host_keys.size(); ++i) {
        if (i == 0 || !same_key(t, host_keys[i], host_keys[i - 1])) {
            want_offsets.push_back(static_cast<std::int64_t>(i));
            want_keys.push_back(host_keys[i]);
        }
    }
    want_offsets.push_back(static_cast<std::int64_t>(host_keys.size()));

    const Segments got = segments_of_sorted_keys(device_keys, s);
    REQUIRE(got.count == static_cast<std::int64_t>(want_keys.size()));
    REQUIRE(got.offsets.dtype() == DType::int64);
    REQUIRE(got.offsets.shape() == kjit::Shape{got.count + 1});
    REQUIRE(got.offsets.is_c_contiguous());
    REQUIRE(got.keys.dtype() == t);
    REQUIRE(got.keys.shape() == kjit::Shape{got.count});
    REQUIRE(got.keys.is_c_contiguous());
    CHECK(got.offsets.device() == device_keys.device());
    CHECK(got.keys.device() == device_keys.device());

    std::vector<std::int64_t> offsets(want_offsets.size());
    got.offsets.copy_to_host(offsets.data(), s);
    std::vector<T> keys(want_keys.size());
    got.keys.copy_to_host(keys.data(), s);
    const std::int64_t bad_offset = first_difference(offsets, want_offsets);
    if (bad_offset >= 0)
        UNSCOPED_INFO("offsets[" << bad_offset << "] = " << offsets[bad_offset] << ", want "
                                 << want_offsets[bad_offset]);
    CHECK(bad_offset == -1);
    const std::int64_t bad_key = first_difference(keys, want_keys);
    if (bad_key >= 0)
        UNSCOPED_INFO("keys[" << bad_key << "] differs (run starting at " << want_offsets[bad_key] << ")");
    CHECK(bad_key == -1);

    // The form that does not wait, into outputs of the largest size, poisoned first: the same runs,
    // offsets past the last run equal to n, keys past the last run untouched. Not for billions of
    // keys: outputs of the largest size there are tens of GB, copied back (47 s on an H100).
    const auto n = static_cast<std::int64_t>(host_keys.size());
    if (n > (std::int64_t{1} << 26)) return;
    const Array offsets_into = kjit::test::poisoned(DType::int64, {n + 1}, s);
    const Array keys_into = kjit::test::poisoned(t, {n}, s);
    const Array count_into = kjit::test::poisoned(DType::int64, kjit::Shape{}, s);
    const std::vector<unsigned char> keys_poison = kjit::test::to_host(keys_into);
    kjit::detail::segments_of_sorted_keys_into(device_keys, offsets_into, keys_into, count_into, s);
    std::int64_t count = -1;
    count_into.copy_to_host(&count, s);
    REQUIRE(count == got.count);
    std::vector<std::int64_t> padded(static_cast<std::size_t>(n + 1));
    offsets_into.copy_to_host(padded.data(), s);
    std::vector<std::int64_t> want_padded = want_offsets;
    want_padded.resize(static_cast<std::size_t>(n + 1), n);
    CHECK(first_difference(padded, want_padded) == -1);
    std::vector<T> keys_all(static_cast<std::size_t>(n));
    keys_into.copy_to_host(keys_all.data(), s);
    CHECK(first_difference(std::vector<T>(keys_all.begin(), keys_all.begin() + count), want_keys) == -1);
    CHECK(std::memcmp(keys_all.data() + count, keys_poison.data() + count * sizeof(T), static_cast<std::size_t>(n - count) * sizeof(T)) == 0);
}

template <class T>
void check_runs(DType t, const std::vector<std::int64_t>& lengths, const kjit::Stream& s) {
    const std::vector<T> host = keys_with_runs<T>(t, lengths);
    const auto n = static_cast<std::int64_t>(host.size());
    check_segments(t, host, Array::from_host(host.data(), t, {n}, kjit::Device::cuda(0), s), s);
}

// The same checks for keys of every supported dtype (T: the host element type of `t`).
template <class F>
void for_each_key_dtype(F&& f) {
    f(DType::bool_, std::uint8_t{});
    f(DType::int8, std::int8_t{});
    f(DType::uint8, std::uint8_t{});
    f(DType::int16, std::int16_t{});
    f(DType::uint16, std::uint16_t{});
    f(DType::int32, std::int32_t{});
    f(DType::uint32, std::uint32_t{});
    f(DType::int64, std::int64_t{});
    f(DType::uint64, std::uint64_t{});
    f(DType::float32, float{});
    f(DType::float64, double{});
}

}  // namespace

TEST_CASE("segments of every key dtype, short and long runs, across tiles", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::create();
    const std::int64_t tile = kjit::detail::kSegmentTile;
    for_each_key_dtype([&](DType t, auto zero) {
        using T = decltype(zero);
        check_runs<T>(t, {1}, s);                                   // n = 1
        check_runs<T>(t, {tile}, s);                                // one run filling one tile
        check_runs<T>(t, {tile + 1}, s);                            // one run over two tiles
        check_runs<T>(t, {tile - 1, 1, 1}, s);                      // a run starting at a tile's last and first keys
        check_runs<T>(t, std::vector<std::int64_t>(3 * tile + 7, 1), s);  // every key a run
        check_runs<T>(t, random_lengths(300'000, 40), s);           // many blocks, short runs
        check_runs<T>(t, random_lengths(200'000, 3'000), s);        // runs longer than a tile
    });
}

TEST_CASE("segments: n = 0, one run, runs of millions", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::create();

    const Array none = Array::empty({0}, DType::int64, kjit::Device::cuda(0), s);
    const Segments empty = segments_of_sorted_keys(none, s);
    CHECK(empty.count == 0);
    REQUIRE(empty.offsets.shape() == kjit::Shape{1});
    std::int64_t zero = -1;
    empty.offsets.copy_to_host(&zero, s);
    CHECK(zero == 0);
    CHECK(empty.keys.shape() == kjit::Shape{0});
    CHECK(empty.keys.dtype() == DType::int64);

    check_runs<std::int32_t>(DType::int32, {5'000'000}, s);                           // a single run
    check_runs<std::int64_t>(DType::int64, {3'000'001, 1, 2'500'000, 4'000'000, 1}, s);  // runs of millions
    check_runs<double>(DType::float64, {1, 6'000'000, 2}, s);
}

TEST_CASE("segments over many blocks: the scan walks several chunks", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    // More than 1024 * 4 blocks: the one-block scan of the per-block counts loops.
    const kjit::Stream s = kjit::Stream::create();
    const std::int64_t n = 5 * 4096 * kjit::detail::kSegmentTile + 12'345;
    check_runs<std::int64_t>(DType::int64, random_lengths(n, 5'000), s);    // ~800 a day, as in a table of readings
    check_runs<std::int32_t>(DType::int32, random_lengths(n, 3), s);        // nearly every key a run
    check_runs<std::uint16_t>(DType::uint16, std::vector<std::int64_t>(n, 1), s);  // count = n
}

TEST_CASE("segments of strided and reversed views", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::current();  // the default stream, for once
    for_each_key_dtype([&](DType t, auto zero) {
        using T = decltype(zero);
        const std::vector<T> base = keys_with_runs<T>(t, random_lengths(150'000, 9));
        const auto n = static_cast<std::int64_t>(base.size());
        const Array device = Array::from_host(base.data(), t, {n}, kjit::Device::cuda(0), s);
        for (const std::int64_t step : {std::int64_t{3}, std::int64_t{-2}, std::int64_t{-1}}) {
            const Array view = device.slice(0, {std::nullopt, std::nullopt, step});
            std::vector<T> logical;
            if (step > 0)
                for (std::int64_t i = 0; i < n; i += step) logical.push_back(base[static_cast<std::size_t>(i)]);
            else
                for (std::int64_t i = n - 1; i >= 0; i += step) logical.push_back(base[static_cast<std::size_t>(i)]);
            REQUIRE(view.size() == static_cast<std::int64_t>(logical.size()));
            check_segments(t, logical, view, s);
        }
        // A column of a 2-D table, as a reduce-by-key over a date column sees it.
        const Array table = device.slice(0, {0, n - n % 4}).reshape({-1, 4});
        const Array column = table.index(1, 2);
        std::vector<T> logical;
        for (std::int64_t r = 0; r < table.shape()[0]; ++r)
            logical.push_back(base[static_cast<std::size_t>(4 * r + 2)]);
        check_segments(t, logical, column, s);
        // A broadcast view (stride 0) is one run.
        const Array same = device.slice(0, {5, 6}).broadcast_to({10'000});
        check_segments(t, std::vector<T>(10'000, base[5]), same, s);
    });
}

TEST_CASE("segments of float keys: -0.0 equals 0.0, each NaN is a run; bool keys compare truth", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::create();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> f = {0.0f, -0.0f, 0.0f, nan, nan, 1.0f, 1.0f, -inf, -inf, inf, nan};
    const Array fd = Array::from_host(f.data(), DType::float32, {11}, kjit::Device::cuda(0), s);
    check_segments(DType::float32, f, fd, s);
    const Segments fs = segments_of_sorted_keys(fd, s);
    CHECK(fs.count == 7);  // [0, 3) [3] [4] [5, 7) [7, 9) [9] [10]

    const std::vector<double> d = {-0.0, 0.0, 2.5, 2.5, std::nan(""), 3.0};
    const Array dd = Array::from_host(d.data(), DType::float64, {6}, kjit::Device::cuda(0), s);
    check_segments(DType::float64, d, dd, s);
    const Segments ds = segments_of_sorted_keys(dd, s);
    REQUIRE(ds.count == 4);
    double first = 0;
    ds.keys.slice(0, {0, 1}).copy_to_host(&first, s);
    CHECK(std::signbit(first));  // the run's key is its first element: -0.0

    // A byte 2 in a bool array is true, as C++ and NumPy read it.
    const std::vector<std::uint8_t> b = {0, 1, 2, 1, 0, 0, 7};
    const Array bd = Array::from_host(b.data(), DType::bool_, {7}, kjit::Device::cuda(0), s);
    check_segments(DType::bool_, b, bd, s);
    CHECK(segments_of_sorted_keys(bd, s).count == 4);  // [0] [1, 4) [4, 6) [6]
}

TEST_CASE("segments of more than 2^31 keys", "[gpu][segments]") {
    KJIT_REQUIRE_GPU();
    // 64-bit indices: runs start on both sides of 2^31, and offsets[count] = n > 2^31.
    const kjit::Stream s = kjit::Stream::create();
    const std::int64_t big = std::int64_t{1} << 31;
    check_runs<std::int8_t>(DType::int8, {big - 3, 1, 2, 1, 4'097, 5'000'000}, s);
}
