// ScanKernel and kjit::cumsum / cumprod (issue 36): inclusive and exclusive scans of every size
// around the GPU's tile boundaries, along each axis and flattened, segmented with empty segments,
// in place; the generated CUDA compiled by NVRTC; the errors. Results against references computed
// here in int64 or double, outputs poisoned first.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <iomanip>

#include "cupy_support.hpp"
#include "cache/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "jit/kernels/scan/scans.hpp"
#include "kjit/cache.hpp"
#include "kjit/scan_kernel.hpp"
#include "runtime/detail/nvrtc.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

// Inclusive or exclusive prefix sums of `x` (int64), restarting at each of `heads`.
std::vector<std::int64_t> prefix_sums(const std::vector<std::int32_t>& x, bool exclusive, const std::vector<std::int64_t>& heads = {}) {
    std::vector<std::int64_t> out(x.size());
    std::int64_t run = 0;
    for (std::size_t e = 0; e < x.size(); ++e) {
        if (std::find(heads.begin(), heads.end(), static_cast<std::int64_t>(e)) != heads.end()) run = 0;
        if (exclusive) out[e] = run;
        run += x[e];
        if (!exclusive) out[e] = run;
    }
    return out;
}

// Sizes around the int32 tile (256 threads x 16 items) and the warp and thread boundaries in it.
const std::vector<std::int64_t> kSizes{1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097, 8191, 8193, 3 * 4096 + 5, 100003};

void int_scans_on(Device device) {
    const ScanKernel sum("T x", "T y", "a + b", "0", "int_sum");
    for (const std::int64_t n : kSizes) {
        const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(static_cast<std::size_t>(n), -100, 100, true));
        const Array xs = on(device, x, DType::int32);
        for (const bool exclusive : {false, true}) {
            INFO("n = " << n << (exclusive ? " exclusive" : " inclusive"));
            const Array out = poisoned_on(device, DType::int32, {n});
            sum.launch({xs, out}, {.exclusive = exclusive});
            const std::vector<std::int32_t> got = elements_of<std::int32_t>(out);
            const std::vector<std::int64_t> want = prefix_sums(x, exclusive);
            std::size_t bad = 0;
            for (std::size_t e = 0; e < got.size(); ++e) bad += got[e] != want[e];
            CHECK(bad == 0);
        }
    }
}

void float_scans_on(Device device) {
    // A running sum in float32 against double, within float32's rounding of the running sum of
    // magnitudes; and a running maximum, which is exact.
    const ScanKernel sum("T x", "T y", "a + b", "0", "float_sum");
    const ScanKernel running_max("T x", "T y", "a > b ? a : b", "-CUDART_INF_F", "running_max");
    const std::int64_t n = 1'000'003;
    const std::vector<float> x = cast_all<float>(draw(static_cast<std::size_t>(n), -1, 1, false));
    const Array xs = on(device, x, DType::float32);
    const std::vector<float> got = elements_of<float>(sum({xs})[0]);
    const std::vector<float> top = elements_of<float>(running_max({xs})[0]);
    double run = 0, magnitude = 0;
    float best = -INFINITY;
    std::size_t bad = 0, bad_max = 0;
    for (std::size_t e = 0; e < x.size(); ++e) {
        run += x[e];
        magnitude += std::fabs(x[e]);
        best = std::max(best, x[e]);
        if (!(std::fabs(got[e] - run) <= 1e-6 * magnitude + 1e-6)) ++bad;
        if (top[e] != best) ++bad_max;
    }
    CHECK(bad == 0);
    CHECK(bad_max == 0);
}

void axis_scans_on(Device device) {
    // (3, 5000, 4) int32: each axis, a negative one, and flattened through a transposed view.
    const ScanKernel sum("T x", "int64 y", "a + b", "0", "axis_sum");
    const Shape shape{3, 5000, 4};
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(60000, -1000, 1000, true));
    const Array xs = on(device, x, DType::int32, shape);
    auto at = [&](std::int64_t i, std::int64_t j, std::int64_t k) { return static_cast<std::int64_t>(x[static_cast<std::size_t>((i * 5000 + j) * 4 + k)]); };
    const std::int64_t strides[3] = {20000, 4, 1};
    for (const int axis : {0, 1, 2, -2}) {
        INFO("axis " << axis);
        const int a = axis < 0 ? axis + 3 : axis;
        const Array out = poisoned_on(device, DType::int64, shape);
        sum.launch({xs, out}, {.axis = axis});
        const std::vector<std::int64_t> got = elements_of<std::int64_t>(out);
        // In C order each element's predecessor along the axis comes before it.
        std::vector<std::int64_t> want(x.begin(), x.end());
        for (std::int64_t e = 0; e < 60000; ++e)
            if ((e / strides[a]) % shape[static_cast<std::size_t>(a)] > 0)
                want[static_cast<std::size_t>(e)] += want[static_cast<std::size_t>(e - strides[a])];
        CHECK(got == want);
    }
    // Flattened: the transposed view's C order, into a 1-D output.
    const Array t = xs.transpose();  // (4, 5000, 3)
    const Array flat = sum({t})[0];
    REQUIRE(flat.shape() == Shape{60000});
    const std::vector<std::int64_t> got = elements_of<std::int64_t>(flat);
    std::int64_t run = 0;
    std::size_t bad = 0, e = 0;
    for (std::int64_t k = 0; k < 4; ++k)
        for (std::int64_t j = 0; j < 5000; ++j)
            for (std::int64_t i = 0; i < 3; ++i) {
                run += at(i, j, k);
                bad += got[e++] != run;
            }
    CHECK(bad == 0);
}

void segmented_scans_on(Device device) {
    const ScanKernel sum("T x", "T y", "a + b", "0", "segment_sum");
    const std::int64_t n = 20011;
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(static_cast<std::size_t>(n), -50, 50, true));
    const Array xs = on(device, x, DType::int32);
    // Empty segments (repeats), segments inside one tile and across several, the offsets of
    // CuPy's form ([0 .. n]) and offsets that start late (the elements before form a scan too).
    const std::vector<std::vector<std::int64_t>> cuts{{0, 0, 1, 1, 700, 4096, 4097, 12000, n}, {10, 20, 20, 9000}, {0, n}};
    for (const auto& c : cuts) {
        for (const bool exclusive : {false, true}) {
            INFO(c.size() << " offsets, " << (exclusive ? "exclusive" : "inclusive"));
            const Outputs got = sum.scan_segments({xs}, on(device, c, DType::int64), {.exclusive = exclusive});
            const std::vector<std::int32_t> g = elements_of<std::int32_t>(got[0]);
            const std::vector<std::int64_t> want = prefix_sums(x, exclusive, c);
            std::size_t bad = 0;
            for (std::size_t e = 0; e < g.size(); ++e) bad += g[e] != want[e];
            CHECK(bad == 0);
        }
    }
    // int32 offsets are converted.
    const std::vector<std::int32_t> c32{0, 5, 5000};
    const std::vector<std::int32_t> g = elements_of<std::int32_t>(sum.scan_segments({xs}, on(device, c32, DType::int32))[0]);
    CHECK(static_cast<std::int64_t>(g[5000]) == prefix_sums(x, false, {0, 5, 5000})[5000]);
}

void in_place_and_cumulative_on(Device device) {
    const std::int64_t n = 70000;
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(static_cast<std::size_t>(n), -9, 9, true));
    // In place: the output is the input.
    const Array xs = on(device, x, DType::int32);
    const ScanKernel sum("T x", "T y", "a + b", "0", "in_place_sum");
    sum.launch({xs, xs});
    const std::vector<std::int32_t> g = elements_of<std::int32_t>(xs);
    const std::vector<std::int64_t> want = prefix_sums(x, false);
    std::size_t bad = 0;
    for (std::size_t e = 0; e < g.size(); ++e) bad += g[e] != want[e];
    CHECK(bad == 0);

    // cumsum's NumPy dtypes: int8 into int64, uint8 into uint64, bool into int64; float16 kept.
    const Array small = on(device, cast_all<std::int8_t>(draw(5000, -100, 100, true)), DType::int8);
    const Array c = cumsum(small);
    CHECK(c.dtype() == DType::int64);
    const std::vector<std::int8_t> s8 = elements_of<std::int8_t>(small);
    const std::vector<std::int64_t> c64 = elements_of<std::int64_t>(c);
    std::int64_t run = 0;
    bad = 0;
    for (std::size_t e = 0; e < s8.size(); ++e) bad += c64[e] != (run += s8[e]);
    CHECK(bad == 0);
    CHECK(cumsum(on(device, std::vector<std::uint8_t>{1, 2, 3}, DType::uint8)).dtype() == DType::uint64);
    CHECK(elements_of<std::int64_t>(cumsum(on(device, std::vector<std::uint8_t>{1, 0, 1, 1}, DType::bool_)))[3] == 3);
    CHECK(cumsum(on(device, std::vector<std::uint16_t>(8, 0x3c00), DType::float16)).dtype() == DType::float16);
    // cumprod of float64, exclusive, along an axis.
    const std::vector<double> p = draw(600, 0.5, 1.5, false);
    const Array ps = on(device, p, DType::float64, {3, 200});
    const std::vector<double> cp = elements_of<double>(cumprod(ps, {.axis = 1, .exclusive = true}));
    bad = 0;
    for (std::size_t r = 0; r < 3; ++r) {
        double prod = 1;
        for (std::size_t j = 0; j < 200; ++j) {
            bad += !(std::fabs(cp[r * 200 + j] - prod) <= 1e-12 * std::fabs(prod));
            prod *= p[r * 200 + j];
        }
    }
    CHECK(bad == 0);
}

// Scans whose running value is a struct (ScanKernel::mapped): the index of the running maximum,
// and a running mean, inclusive and exclusive, across tiles, along an axis and segmented. The
// struct values travel through the look-back's slots (a 24-byte value: 48-byte slots).
void struct_scans_on(Device device) {
    KernelOptions arg;
    arg.reduce_type = "struct { T v; int64 at; }";
    // Ties keep the earlier index (b replaces a only when larger): associative, not commutative.
    const ScanKernel argmax_so_far = ScanKernel::mapped("T x", "int64 y", "{x, i}", "b.v > a.v ? b : a", "y = a.at",
                                                        "{-CUDART_INF_F, -1}", "argmax_so_far", arg);
    KernelOptions mean_type;
    mean_type.reduce_type = "struct running_mean { float64 s; float64 n; float64 pad; }";
    const ScanKernel mean_so_far = ScanKernel::mapped("T x", "float64 y", "{x, 1, 0}", "{a.s + b.s, a.n + b.n, 0}",
                                                      "y = a.n == 0 ? -1.0 : a.s / a.n", "{0, 0, 0}", "mean_so_far", mean_type);
    for (const std::int64_t n : {std::int64_t{1}, std::int64_t{257}, std::int64_t{5000}, std::int64_t{100003}}) {
        INFO("n " << n);
        std::vector<float> x(static_cast<std::size_t>(n));
        const std::vector<double> drawn = draw(x.size(), -1000, 1000, true);  // integers: ties happen
        for (std::size_t e = 0; e < x.size(); ++e) x[e] = static_cast<float>(drawn[e]);
        const Array xs = on(device, x, DType::float32);
        const std::vector<std::int64_t> at = elements_of<std::int64_t>(argmax_so_far({xs})[0]);
        const std::vector<double> mean = elements_of<double>(mean_so_far({xs})[0]);
        const Array ex = poisoned_on(device, DType::float64, {n});
        mean_so_far.launch({xs, ex}, {.exclusive = true});
        const std::vector<double> mean_ex = elements_of<double>(ex);
        std::int64_t best = 0;
        double sum = 0;
        std::size_t bad_at = 0, bad_mean = 0, bad_ex = 0;
        for (std::size_t e = 0; e < x.size(); ++e) {
            bad_ex += std::abs(mean_ex[e] - (e == 0 ? -1.0 : sum / static_cast<double>(e))) > 1e-9 * 1000;
            if (x[e] > x[static_cast<std::size_t>(best)]) best = static_cast<std::int64_t>(e);
            sum += x[e];
            bad_at += at[e] != best;
            bad_mean += std::abs(mean[e] - sum / static_cast<double>(e + 1)) > 1e-9 * 1000;
        }
        CHECK(bad_at == 0);
        CHECK(bad_mean == 0);
        CHECK(bad_ex == 0);
    }
    // Along axis 0 of a (300, 7) array (each column its own scan), and segmented.
    const std::vector<double> drawn = draw(2100, -50, 50, true);
    std::vector<float> x(drawn.begin(), drawn.end());
    const Array xs = on(device, x, DType::float32, {300, 7});
    const std::vector<std::int64_t> cols = elements_of<std::int64_t>(argmax_so_far({xs}, {.axis = 0})[0]);
    std::size_t bad = 0;
    for (std::size_t c = 0; c < 7; ++c) {
        std::size_t best = 0;
        for (std::size_t r = 0; r < 300; ++r) {
            if (x[r * 7 + c] > x[best * 7 + c]) best = r;
            bad += cols[r * 7 + c] != static_cast<std::int64_t>(best);
        }
    }
    CHECK(bad == 0);
    const Array flat = on(device, x, DType::float32);
    const std::vector<std::int64_t> cuts{0, 0, 100, 1500, 1501};
    const std::vector<std::int64_t> seg = elements_of<std::int64_t>(argmax_so_far.scan_segments({flat}, on(device, cuts, DType::int64))[0]);
    bad = 0;
    std::size_t best = 0;
    for (std::size_t e = 0; e < x.size(); ++e) {
        if (std::find(cuts.begin(), cuts.end(), static_cast<std::int64_t>(e)) != cuts.end() || x[e] > x[best]) best = e;
        bad += seg[e] != static_cast<std::int64_t>(best);
    }
    CHECK(bad == 0);
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan][struct]", "struct scan values: the running argmax and a running mean", struct_scans_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan]", "integer scans of every size around the tile boundaries are exact", int_scans_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan]", "float32 running sums and a running maximum", float_scans_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan]", "scans along each axis and flattened through a view", axis_scans_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan]", "segmented scans with empty segments and late offsets", segmented_scans_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[scan]", "a scan in place and cumsum / cumprod with NumPy's dtypes", in_place_and_cumulative_on)

TEST_CASE("gpu: a scan of 2^31 + 5 elements takes the 64-bit index kernels", "[scan][gpu][large]") {
    KJIT_REQUIRE_GPU();
    // uint8 sums wrap modulo 256, exactly as the reference's.
    const std::int64_t n = (std::int64_t{1} << 31) + 5;
    std::vector<std::uint8_t> x(static_cast<std::size_t>(n));
    std::uint32_t state = static_cast<std::uint32_t>(rng()());
    for (std::uint8_t& v : x) v = static_cast<std::uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
    const Array xs = on(Device::cuda(0), x, DType::uint8);
    const ScanKernel sum("T x", "T y", "a + b", "0", "wide_sum");
    const std::vector<std::uint8_t> got = elements_of<std::uint8_t>(sum({xs})[0]);
    std::uint8_t run = 0;
    std::size_t bad = 0;
    for (std::size_t e = 0; e < x.size(); ++e) bad += got[e] != (run = static_cast<std::uint8_t>(run + x[e]));
    CHECK(bad == 0);
}

TEST_CASE("scan kernels compile with NVRTC for every entry point", "[scan][nvrtc]") {
    const ScanKernel sum("T x", "T y", "a + b", "0", "nvrtc_sum");
    for (const DType t : {DType::float32, DType::float64, DType::int8, DType::float16, DType::complex128, DType::uint64}) {
        INFO(t.name());
        const Binary b = sum.compile({{"T", t}}, "sm_90");
        CHECK_FALSE(b.cubin.empty());
        CHECK(b.entry_points.size() == 4);
        CHECK(b.entry_points.count("scan_segments64") == 1);
    }
    const std::string src = sum.source({{"T", DType::float32}});
    CHECK_THAT(src, Contains("kjit::scan_tile<nvrtc_sum_ops, int, false>"));
    // A 64-byte struct value (the largest): 80-byte look-back slots, one item per thread.
    KernelOptions o;
    o.reduce_type = "struct wide { float64 a0; float64 a1; float64 a2; float64 a3; float64 a4; float64 a5; float64 a6; int64 k; }";
    const ScanKernel wide = ScanKernel::mapped("T x", "T y", "{x, x, x, x, x, x, x, 1}",
                                               "{a.a0 + b.a0, a.a1 + b.a1, a.a2 + b.a2, a.a3 + b.a3, a.a4 + b.a4, a.a5 + b.a5, a.a6 + b.a6, a.k + b.k}",
                                               "y = a.a0 / a.k", "{0, 0, 0, 0, 0, 0, 0, 0}", "nvrtc_wide", o);
    CHECK(wide.compile({{"T", DType::float64}}, "sm_90").entry_points.size() == 4);
}

TEST_CASE("scan kernels say what is wrong", "[scan]") {
    CHECK_THAT(error_of([] { ScanKernel("T x, T z", "T y", "a + b", "0").check(); }), Contains("a scan has one input"));
    CHECK_THAT(error_of([] { ScanKernel("T x", "T y, T w", "a + b", "0").check(); }), Contains("a scan has one output"));
    CHECK_THAT(error_of([] { ScanKernel("raw T x", "T y", "a + b", "0").check(); }), Contains("cannot be raw"));
    CHECK_THAT(error_of([] { ScanKernel("T x", "T y", "a + b", " ").check(); }), Contains("a scan needs an identity"));
    CHECK_THAT(error_of([] { ScanKernel("T x", "T y", "a + c", "0").check(); }), Contains("reduce:1:5: error: unknown name 'c'"));
    KernelOptions o;
    o.reduce_type = "struct { float64 s; }";
    CHECK_THAT(error_of([&] { ScanKernel("T x", "T y", "a + b", "0", "s", o).check(); }), Contains("a struct scan value needs a map and a post"));
    CHECK_THAT(error_of([&] { ScanKernel::mapped("T x", "T y", "{x}", "{a.s + b.t}", "y = a.s", "{0}", "s", o).check(); }),
               Contains("reduce:1:10: error: the struct has no field 't'"));
    CHECK_THAT(error_of([&] { ScanKernel::mapped("T x", "T y", "{x, 1}", "{a.s + b.s}", "y = a.s", "{0}", "s", o).check(); }),
               Contains("2 values for the 1 fields"));
    CHECK(ScanKernel("T x", "U y", "a + b", "0").placeholders() == std::vector<std::string>{"T", "U"});
}

TEST_CASE("host: scan calls refuse bad axes and shapes", "[scan][host]") {
    KJIT_REQUIRE_HOST_BACKEND();
    const ScanKernel sum("T x", "T y", "a + b", "0", "checked_sum");
    const Array x = on(Device::cpu(), std::vector<float>(12, 1.0f), DType::float32, {3, 4});
    CHECK_THAT(error_of([&] { sum({x}, {.axis = 2}); }), Contains("axis 2 is out of range"));
    CHECK_THAT(error_of([&] { sum.launch({x, Array::empty({3, 4}, DType::float32, Device::cpu())}); }),
               Contains("has shape (3, 4) but scanning (3, 4) flattened gives (12,)"));
    CHECK_THAT(error_of([&] { sum.scan_segments({x}, on(Device::cpu(), std::vector<std::int64_t>{0, 2}, DType::int64)); }),
               Contains("a segmented scan takes a 1-D input"));
    CHECK_THAT(error_of([&] { cumsum(x, {}, Array::empty({12}, DType::int32, Device::cpu())); }),
               Contains("kjit::cumsum: out has dtype int32 but a float32 input gives float32"));
    // A failed call leaves the kernel usable.
    const std::vector<float> got = elements_of<float>(sum({x}, {.axis = 1})[0]);
    CHECK(got[3] == 4.0f);
    CHECK(got[11] == 4.0f);
}

TEST_CASE("recorded scans read back and precompile", "[scan][manifest][nvrtc]") {
    const kjit::test::ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const auto manifest = work.path() / "manifest.json";
    KernelOptions options;
    options.reduce_type = "float64";
    const ScanKernel sum("T x", "T y", "a + b", "0", "sum_rec", options);
    CacheSettings app;
    app.dir = (work.path() / "app-cache").string();
    app.record = manifest.string();
    configure_cache(app);
    sum.compile({{"T", DType::float32}}, "sm_90");
    const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 1);
    CHECK(recorded["kernels"][0]["kind"] == "scan");
    const jit::kernels::ManifestScan back = jit::kernels::scan_from_manifest_entry(recorded["kernels"][0]);
    CHECK(back.kernel.scan_expr() == "a + b");
    CHECK(back.kernel.identity() == "0");
    CHECK(back.kernel.options().reduce_type == "float64");
    CHECK(back.kernel.map_expr().empty());
    REQUIRE(back.bindings.size() == 1);
    {
        // A mapped scan's map and post travel too.
        const kjit::test::TempDir other;
        CacheSettings rec;
        rec.dir = (other.path() / "c").string();
        rec.record = (other.path() / "m.json").string();
        configure_cache(rec);
        KernelOptions mean_type;
        mean_type.reduce_type = "struct { float64 s; float64 n; }";
        ScanKernel::mapped("T x", "float64 y", "{x, 1}", "{a.s + b.s, a.n + b.n}", "y = a.s / a.n", "{0, 0}", "mean_rec", mean_type)
            .compile({{"T", DType::float32}}, "sm_90");
        const nlohmann::json m = kjit::cache::read_manifest(other.path() / "m.json");
        const jit::kernels::ManifestScan mapped = jit::kernels::scan_from_manifest_entry(m["kernels"][0]);
        CHECK(mapped.kernel.map_expr() == "{x, 1}");
        CHECK(mapped.kernel.post_expr() == "y = a.s / a.n");
        CHECK(mapped.kernel.options().reduce_type == "struct { float64 s; float64 n; }");
        configure_cache(app);
    }

    // A build machine precompiles each entry point's program; a process without NVRTC finds them.
    CacheSettings build;
    build.dir = (work.path() / "shipped").string();
    configure_cache(build);
    const auto built = jit::kernels::precompile(recorded, {"sm_90"}, 2);
    CHECK(built.failures.empty());
    CHECK(built.jobs == jit::kernels::kScanGroups);
    CHECK(built.compiled == built.jobs);
    CacheSettings shipped;
    shipped.dir = (work.path() / "empty-writable").string();
    shipped.read_only = {(work.path() / "shipped").string()};
    configure_cache(shipped);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    for (std::size_t g = 0; g < static_cast<std::size_t>(jit::kernels::kScanGroups); ++g)
        CHECK(jit::kernels::compile_scan_group(sum, {{"T", DType::float32}}, {}, "sm_90", g).compile_ms == 0);
}
