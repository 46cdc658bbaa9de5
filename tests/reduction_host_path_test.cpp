// The host side of reduction calls on a pretend driver (no GPU): which entry point each layout
// launches, with what grid, and the kjit::ReduceLayout it passes (checked field by field against
// templates/reduction.cuh's layout), so that CI checks the launcher without a GPU.
#include "test_support.hpp"

#include <cstring>

#include "fake_driver.hpp"
#include "kjit/error.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/segmented.hpp"
#include "jit/codegen/entry_points.hpp"
#include "jit/kernels/reduction/calls.hpp"

using kjit::Array;
using kjit::DType;
using kjit::ReduceOptions;
using kjit::ReductionKernel;
using Catch::Matchers::EndsWith;

namespace {

struct Launch {
    std::string function;
    unsigned grid[3], block[3];
    std::vector<unsigned char> layout;  // the second parameter's bytes
    const void* third = nullptr;        // the workspace or offsets pointer, when there is one
    unsigned shared = 0;                // dynamic shared memory bytes
};
std::vector<std::string> g_functions;
std::vector<Launch> g_launches;

constexpr std::size_t kLayoutBytes = 24 + 16 * 8 + 2 * 16 * 8;  // ReduceLayout<1, 1>

kjit::detail::DriverApi recording_fake() {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    g_functions.clear();
    g_launches.clear();
    api.cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; };  // workspaces
    api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
        g_functions.emplace_back(name);
        *f = reinterpret_cast<CUfunction>(std::uintptr_t{0x7000} + g_functions.size() - 1);
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                            CUstream, void** params, void**) {
        Launch l{g_functions.at(reinterpret_cast<std::uintptr_t>(f) - 0x7000), {gx, gy, gz}, {bx, by, bz}, {}, nullptr, shared};
        const auto* layout = static_cast<const unsigned char*>(params[1]);
        l.layout.assign(layout, layout + kLayoutBytes);
        if (l.function.find("rows") == std::string::npos && l.function.find("columns") == std::string::npos &&
            l.function.find("small") == std::string::npos)
            l.third = *static_cast<void* const*>(params[2]);
        else if (l.function.find("columns_") != std::string::npos)
            l.third = *static_cast<void* const*>(params[2]);
        g_launches.push_back(std::move(l));
        return CUDA_SUCCESS;
    };
    return api;
}

// ReduceLayout<1, 1>'s fields.
struct Layout {
    int kept_ndim, reduced_ndim;
    long long kept_size, reduced_size;
    std::vector<long long> shape, in_strides, out_strides;
};
Layout decode(const std::vector<unsigned char>& b) {
    Layout l{};
    std::memcpy(&l.kept_ndim, b.data(), 4);
    std::memcpy(&l.reduced_ndim, b.data() + 4, 4);
    std::memcpy(&l.kept_size, b.data() + 8, 8);
    std::memcpy(&l.reduced_size, b.data() + 16, 8);
    const int nd = l.kept_ndim + l.reduced_ndim;
    auto read = [&](std::size_t offset, int count) {
        std::vector<long long> v(static_cast<std::size_t>(count));
        std::memcpy(v.data(), b.data() + offset, 8 * static_cast<std::size_t>(count));
        return v;
    };
    l.shape = read(24, nd);
    l.in_strides = read(24 + 128, nd);
    l.out_strides = read(24 + 256, l.kept_ndim);
    return l;
}

ReduceOptions along(std::vector<int> axes) {
    ReduceOptions o;
    o.axis = std::move(axes);
    return o;
}

}  // namespace

TEST_CASE("each layout launches its strategy with its grid and ReduceLayout", "[reduction][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(recording_fake(), 1);
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "host_sum");
    const auto dev = kjit::Device::cuda(0);
    struct Case {
        const char* what;
        Array x;
        std::optional<std::vector<int>> axes;
        const char* entry;
        std::vector<unsigned> grid;  // x, y
        unsigned block;
        std::vector<long long> shape, in_strides, out_strides;
        int kept_ndim;
    };
    const Array tall = Array::empty({700, 900}, DType::float32, dev);
    const std::vector<Case> cases{
        {"everything, a few thousand", Array::empty({4096}, DType::float32, dev), std::nullopt, "host_sum_small32", {1, 1}, 512, {4096}, {1}, {}, 0},
        {"everything", Array::empty({4097}, DType::float32, dev), std::nullopt, "host_sum_full32", {5, 1}, 256, {4097}, {1}, {}, 0},
        {"everything, strided", Array::empty({2000}, DType::float32, dev).slice(0, {0, 2000, 2}), std::nullopt, "host_sum_full32", {1, 1},
         256, {1000}, {2}, {}, 0},
        {"rows", Array::empty({3000, 77}, DType::float32, dev), std::vector<int>{1}, "host_sum_rows_warp32", {375, 1}, 256,
         {3000, 77}, {77, 1}, {1}, 1},
        {"few long rows", Array::empty({3, 200001}, DType::float32, dev), std::vector<int>{-1}, "host_sum_rows_block32", {3, 1}, 512,
         {3, 200001}, {200001, 1}, {1}, 1},
        {"columns", Array::empty({50, 40000}, DType::float32, dev), std::vector<int>{0}, "host_sum_columns32", {157, 1}, 256,
         {40000, 50}, {1, 40000}, {1}, 1},
        {"few columns, split", Array::empty({5000, 300}, DType::float32, dev), std::vector<int>{0}, "host_sum_columns_split32",
         {2, 157}, 256, {300, 5000}, {1, 300}, {1}, 1},
        {"a transposed input", tall.transpose(), std::vector<int>{1}, "host_sum_columns32", {4, 1}, 256, {900, 700}, {1, 900}, {1}, 1},
        {"merged reduced axes", Array::empty({4, 5, 6}, DType::float32, dev), std::vector<int>{1, 2}, "host_sum_rows_warp32", {1, 1},
         256, {4, 30}, {30, 1}, {1}, 1},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        g_launches.clear();
        const Array y = c.axes ? sum({c.x}, along(*c.axes)) : sum({c.x});
        REQUIRE(!g_launches.empty());
        const Launch& l = g_launches.front();
        CHECK(l.function == c.entry);
        CHECK(l.grid[0] == c.grid[0]);
        CHECK(l.grid[1] == c.grid[1]);
        CHECK(l.block[0] == c.block);
        const Layout got = decode(l.layout);
        CHECK(got.kept_ndim == c.kept_ndim);
        CHECK(got.shape == c.shape);
        CHECK(got.in_strides == c.in_strides);
        CHECK(got.out_strides == c.out_strides);
        long long kept = 1;
        for (int d = 0; d < c.kept_ndim; ++d) kept *= c.shape[static_cast<std::size_t>(d)];
        CHECK(got.kept_size == kept);
        CHECK(got.kept_size * got.reduced_size == c.x.size());
        if (std::string(c.entry).find("split") != std::string::npos) {
            REQUIRE(g_launches.size() == 2);
            CHECK(g_launches[1].function == "host_sum_columns_finish32");
            CHECK(g_launches[1].third == l.third);  // the partials the split wrote
            CHECK(l.third != nullptr);
        } else {
            CHECK(g_launches.size() == 1);
        }
        if (std::string(c.entry).find("full") != std::string::npos) CHECK(l.third != nullptr);  // the workspace
    }

    // More than 2^31 elements: the 64-bit entry point.
    g_launches.clear();
    // (borrowed memory the pretend driver never touches: it has 2 GiB to allocate from)
    (void)sum({Array::wrap(reinterpret_cast<void*>(std::uintptr_t{0x40000000}), DType::uint8, {(std::int64_t{1} << 31) + 3}, dev)});
    REQUIRE(g_launches.size() == 1);
    CHECK_THAT(g_launches[0].function, EndsWith("_full64"));

    // Segments: one kept dimension of segments, the input's stride in the reduced one, the
    // offsets passed as the third parameter.
    const std::vector<std::int64_t> offsets{0, 10, 10, 1000};
    const Array off = Array::empty({4}, DType::int64, dev);
    g_launches.clear();
    (void)kjit::segmented_reduce(sum, {Array::empty({2000}, DType::float32, dev).slice(0, {0, 2000, 2})}, off);
    REQUIRE(g_launches.size() == 1);
    CHECK(g_launches[0].function == "host_sum_segments_warp32");
    CHECK(g_launches[0].third == off.data());
    const Layout seg = decode(g_launches[0].layout);
    CHECK(seg.kept_size == 3);
    CHECK(seg.reduced_size == 1000);
    CHECK(seg.in_strides == std::vector<long long>{0, 2});
    CHECK(seg.out_strides == std::vector<long long>{1});
}

TEST_CASE("a reduction call compiles the module of the one strategy it launches", "[reduction][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(recording_fake(), 1);
    kjit::test::ProcessCacheGuard guard;
    kjit::test::TempDir dir;
    kjit::configure_cache(kjit::test::cache_in(dir.path()));
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "one_strategy_sum");
    const auto dev = kjit::Device::cuda(0);
    auto compiles = [] { return kjit::cache_stats().compiles; };
    REQUIRE(compiles() == 0);
    (void)sum({Array::empty({1000}, DType::float32, dev)});  // full
    CHECK(compiles() == 1);
    (void)sum({Array::empty({2000}, DType::float32, dev)});  // full again: loaded already
    CHECK(compiles() == 1);
    (void)sum({Array::empty({3000, 77}, DType::float32, dev)}, along({1}));  // rows_warp
    CHECK(compiles() == 2);
    g_launches.clear();
    (void)sum({Array::empty({5000, 300}, DType::float32, dev)}, along({0}));  // columns_split and its finish: one module
    CHECK(compiles() == 3);
    REQUIRE(g_launches.size() == 2);
    CHECK(g_launches[0].function == "one_strategy_sum_columns_split32");
    CHECK(g_launches[1].function == "one_strategy_sum_columns_finish32");
}

TEST_CASE("a strategy's module holds its entry points only", "[reduction]") {
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "entries_sum");
    const std::string whole = sum.source({{"T", DType::float64}});
    auto count = [](const std::string& s, const std::string& what) {
        std::size_t n = 0;
        for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
        return n;
    };
    CHECK(count(whole, "extern \"C\" __global__") == 19);  // 7 strategies and columns_finish in two index widths, small and bins (with bins_finish) in one
    kjit::jit::codegen::GeneratedReduction g;
    g.source = "prefix\n";
    for (const char* name : {"k_full32", "k_columns_split32", "k_columns_finish32"}) {
        const std::string line = std::string("extern \"C\" __global__ void ") + name + "() {}\n";
        g.source += line;
        g.entry_lines.emplace_back(name, line);
    }
    g.full32 = "k_full32";
    g.columns_split32 = "k_columns_split32";
    g.columns_finish32 = "k_columns_finish32";
    CHECK(kjit::jit::codegen::keep_entry_points(g.source, g.entry_lines, kjit::jit::kernels::reduction_group_entries(g, kjit::jit::kernels::ReductionEntryGroup::full, false)) ==
          "prefix\nextern \"C\" __global__ void k_full32() {}\n");
    const std::string split =
        kjit::jit::codegen::keep_entry_points(g.source, g.entry_lines, kjit::jit::kernels::reduction_group_entries(g, kjit::jit::kernels::ReductionEntryGroup::columns_split, false));
    CHECK(count(split, "extern \"C\"") == 2);
    CHECK(split.find("k_full32") == std::string::npos);
    // Entry points that are not the source's last lines: an error, never a wrong module.
    g.source += "trailing\n";
    CHECK_THROWS_AS(kjit::jit::codegen::keep_entry_points(g.source, g.entry_lines, {"k_full32"}), kjit::Error);
}

TEST_CASE("a reduction by group index launches bins, a value of every group per warp in shared memory, then its finish",
          "[reduction][segments][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(recording_fake(), 1);
    kjit::test::ProcessCacheGuard guard;
    kjit::test::TempDir dir;
    kjit::configure_cache(kjit::test::cache_in(dir.path()));
    const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "bins_launch_mean");
    const auto dev = kjit::Device::cuda(0);
    kjit::KeyGroups groups;
    groups.count = 800;
    groups.group_of = Array::empty({1000000}, DType::int32, dev);
    groups.offsets = Array::empty({801}, DType::int64, dev);
    const Array x = Array::empty({1000000}, DType::float64, dev);
    g_launches.clear();
    const Array y = kjit::reduce_by_key(mean, groups, {x})[0];
    CHECK(y.shape() == kjit::Shape{800});
    REQUIRE(g_launches.size() == 2);
    const Launch& bins = g_launches[0];
    CHECK(bins.function == "bins_launch_mean_bins64");
    CHECK(bins.block[0] == 7 * 32);  // 48 KB / (800 groups * 8 bytes): 7 warps
    CHECK(bins.shared == 7 * 800 * 8);
    CHECK(bins.grid[0] == 132 * 3);  // the blocks 160 KB of shared memory keeps on each of the 132 SMs
    CHECK(bins.third == groups.group_of.data());
    const Layout l = decode(bins.layout);
    CHECK(l.kept_size == 800);
    CHECK(l.reduced_size == 1000000);
    CHECK(l.in_strides == std::vector<long long>{0, 1});
    CHECK(l.out_strides == std::vector<long long>{1});
    CHECK(g_launches[1].function == "bins_launch_mean_bins_finish64");
    CHECK(g_launches[1].grid[0] == 4);  // a thread per group
    CHECK(g_launches[1].shared == 0);
    // Bad groups: a clear error, nothing launched.
    g_launches.clear();
    kjit::KeyGroups bad = groups;
    bad.group_of = Array::empty({1000000}, DType::int64, dev);
    CHECK_THROWS_WITH(kjit::reduce_by_key(mean, bad, {x}), Catch::Matchers::Contains("C-contiguous int32 array of shape (1000000,)"));
    CHECK(g_launches.empty());
}
