// Checked atomics in kernel code (issue 36): histograms with every bin hit and with every value in
// one bin, scatter-add, -min and -max, exchange and compare-and-swap, on both back ends against
// counts made here; the dtypes each atomic takes, and the errors for the rest.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "cupy_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

template <class T>
std::vector<T> read(Device device, const Array& a) {
    const std::vector<unsigned char> b = device.is_cpu() ? host_bytes_c_order(a) : to_host(a);
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), b.size());
    return v;
}

// `a` converted to dtype t (a kernel of its own: the conversions under test are the atomics').
Array as(const Array& a, DType t) {
    static const ElementwiseKernel cast("S x", "T y", "y = (T)x", "atomics_test_cast");
    const Array out = Array::empty(a.shape(), t, a.device());
    cast.launch({a, out});
    return out;
}

void histograms_on(Device device) {
    const ElementwiseKernel histogram("int32 v", "raw int32 bins", "atomic_add(bins[v], 1)", "histogram");
    const std::int64_t n = (1 << 20) + 77;
    SECTION("every bin hit") {
        const std::vector<std::int32_t> v = cast_all<std::int32_t>(draw(static_cast<std::size_t>(n), -0.49, 255.49, true));
        const Array bins = on(device, std::vector<std::int32_t>(256, 0), DType::int32);
        histogram({on(device, v, DType::int32), bins});
        std::vector<std::int32_t> want(256, 0);
        for (std::int32_t x : v) ++want[static_cast<std::size_t>(x)];
        CHECK(read<std::int32_t>(device, bins) == want);
        CHECK(std::count(want.begin(), want.end(), 0) == 0);
    }
    SECTION("every value in one bin") {
        const Array bins = on(device, std::vector<std::int32_t>(256, 5), DType::int32);
        histogram({on(device, std::vector<std::int32_t>(static_cast<std::size_t>(n), 200), DType::int32), bins});
        std::vector<std::int32_t> want(256, 5);
        want[200] += static_cast<std::int32_t>(n);
        CHECK(read<std::int32_t>(device, bins) == want);
    }
}

void scatter_on(Device device) {
    const std::int64_t n = 100000, groups = 97;
    const std::vector<std::int64_t> key = cast_all<std::int64_t>(draw(static_cast<std::size_t>(n), -0.49, groups - 0.51, true));
    const std::vector<double> drawn = draw(static_cast<std::size_t>(n), -1000, 1000, true);  // integers: float sums are exact
    const Array k = on(device, key, DType::int64);
    std::map<std::int64_t, std::vector<double>> by_key;
    for (std::int64_t e = 0; e < n; ++e) by_key[key[static_cast<std::size_t>(e)]].push_back(drawn[static_cast<std::size_t>(e)]);

    SECTION("add in every dtype the GPU adds atomically") {
        for (const DType t : {DType::int32, DType::uint32, DType::int64, DType::uint64, DType::float32, DType::float64, DType::float16,
                              DType::bfloat16}) {
            INFO(t.name());
            const std::string T(t.name());
            const ElementwiseKernel add("int64 k, " + T + " x", "raw " + T + " total", "atomic_add(total[k], x)", "scatter_add_" + T);
            // Ones and zeros for the 16-bit floats: about 129 per group (sd 11), so that every running
            // sum stays within 256, below which bfloat16's 8 significant bits hold each integer.
            // (One in five ones, about 206 a group, went past 256 once in CI: 257 rounds to 256.)
            const bool narrow = t == DType::float16 || t == DType::bfloat16;
            std::vector<double> x(static_cast<std::size_t>(n));
            for (std::int64_t e = 0; e < n; ++e) x[static_cast<std::size_t>(e)] = narrow ? (e % 8 == 0 ? 1 : 0) : std::abs(drawn[static_cast<std::size_t>(e)]);
            Array xs = as(on(device, x, DType::float64), t);
            const Array total = as(on(device, std::vector<double>(static_cast<std::size_t>(groups), 0), DType::float64), t);
            add({k, xs, total});
            const std::vector<double> got = read<double>(device, as(total, DType::float64));
            for (std::int64_t g = 0; g < groups; ++g) {
                double want = 0;
                for (std::int64_t e = 0; e < n; ++e)
                    if (key[static_cast<std::size_t>(e)] == g) want += x[static_cast<std::size_t>(e)];
                INFO("group " << g);
                CHECK(got[static_cast<std::size_t>(g)] == want);
            }
        }
    }
    SECTION("min and max of 32- and 64-bit integers, float32 and float64") {
        for (const DType t : {DType::int32, DType::int64, DType::uint32, DType::uint64, DType::float32, DType::float64}) {
            INFO(t.name());
            const std::string T(t.name());
            const ElementwiseKernel lo_hi("int64 k, " + T + " x", "raw " + T + " lo, raw " + T + " hi",
                                          "atomic_min(lo[k], x); atomic_max(hi[k], x)", "scatter_min_max_" + T);
            std::vector<double> x(static_cast<std::size_t>(n));
            for (std::int64_t e = 0; e < n; ++e) x[static_cast<std::size_t>(e)] = drawn[static_cast<std::size_t>(e)] + (t.kind() == DTypeKind::unsigned_int ? 1000 : 0) + (t.is_floating() ? 0.375 : 0);
            const Array lo = as(on(device, std::vector<double>(static_cast<std::size_t>(groups), 5000), DType::float64), t);
            const Array hi = as(on(device, std::vector<double>(static_cast<std::size_t>(groups), t.kind() == DTypeKind::unsigned_int ? 0 : -5000), DType::float64), t);
            lo_hi({k, as(on(device, x, DType::float64), t), lo, hi});
            const std::vector<double> got_lo = read<double>(device, as(lo, DType::float64)), got_hi = read<double>(device, as(hi, DType::float64));
            for (std::int64_t g = 0; g < groups; ++g) {
                double want_lo = 5000, want_hi = t.kind() == DTypeKind::unsigned_int ? 0 : -5000;
                for (std::int64_t e = 0; e < n; ++e)
                    if (key[static_cast<std::size_t>(e)] == g) {
                        want_lo = std::min(want_lo, x[static_cast<std::size_t>(e)]);
                        want_hi = std::max(want_hi, x[static_cast<std::size_t>(e)]);
                    }
                INFO("group " << g);
                CHECK(got_lo[static_cast<std::size_t>(g)] == want_lo);
                CHECK(got_hi[static_cast<std::size_t>(g)] == want_hi);
            }
        }
    }
    SECTION("float min and max are fmin and fmax: a NaN never wins") {
        const ElementwiseKernel lo("int64 k, T x", "raw T t, T old", "old = atomic_min(t[k], x)", "nan_min");
        for (const DType t : {DType::float32, DType::float64}) {
            INFO(t.name());
            const Array held = as(on(device, std::vector<double>{std::nan(""), 3.0, -1.0}, DType::float64), t);
            const Array old = as(on(device, std::vector<double>{0, 0, 0}, DType::float64), t);
            lo({as(on(device, std::vector<double>{0, 1, 2}, DType::float64), DType::int64),
                as(on(device, std::vector<double>{2.0, std::nan(""), -4.0}, DType::float64), t), held, old});
            const std::vector<double> h = read<double>(device, as(held, DType::float64)), o = read<double>(device, as(old, DType::float64));
            CHECK(h[0] == 2.0);
            CHECK(h[1] == 3.0);
            CHECK(h[2] == -4.0);
            CHECK(std::isnan(o[0]));
            CHECK(o[1] == 3.0);
            CHECK(o[2] == -1.0);
        }
    }
    SECTION("compare-and-swap: one owner per key, the first to claim it") {
        const ElementwiseKernel claim("int64 k", "raw int64 owner, bool won", "won = atomic_cas(owner[k], -1, i) == -1", "claim");
        const Array owner = on(device, std::vector<std::int64_t>(static_cast<std::size_t>(groups), -1), DType::int64);
        const Array won = poisoned_on(device, DType::bool_, {n});
        claim({k, owner, won});
        const std::vector<std::int64_t> o = read<std::int64_t>(device, owner);
        const std::vector<std::uint8_t> w = read<std::uint8_t>(device, won);
        std::int64_t winners = 0;
        for (std::int64_t e = 0; e < n; ++e) {
            REQUIRE(w[static_cast<std::size_t>(e)] <= 1);
            winners += w[static_cast<std::size_t>(e)];
        }
        CHECK(winners == static_cast<std::int64_t>(by_key.size()));
        for (std::int64_t g = 0; g < groups; ++g) {
            const std::int64_t at = o[static_cast<std::size_t>(g)];
            INFO("group " << g << " owner " << at);
            REQUIRE(at >= 0);
            CHECK(key[static_cast<std::size_t>(at)] == g);
            CHECK(w[static_cast<std::size_t>(at)] == 1);
        }
    }
    SECTION("exchange: every value comes out once") {
        const ElementwiseKernel swap("float64 x", "raw float64 slot, float64 y", "y = atomic_exch(slot[0], x)", "swap_through");
        const std::int64_t m = 5000;
        std::vector<double> x(drawn.begin(), drawn.begin() + m);
        for (std::int64_t e = 0; e < m; ++e) x[static_cast<std::size_t>(e)] += 0.25 * static_cast<double>(e) / m;  // distinct
        const Array slot = on(device, std::vector<double>{-1e9}, DType::float64);
        const Array y = poisoned_on(device, DType::float64, {m});
        swap({on(device, x, DType::float64), slot, y});
        std::vector<double> seen = read<double>(device, y);
        seen.push_back(read<double>(device, slot)[0]);
        std::vector<double> want = x;
        want.push_back(-1e9);
        std::sort(seen.begin(), seen.end());
        std::sort(want.begin(), want.end());
        CHECK(seen == want);
    }
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[atomics]", "histograms with every bin hit and with every value in one bin", histograms_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[atomics]", "scatter add min max exchange and compare-and-swap", scatter_on)

TEST_CASE("atomics compile with NVRTC for every dtype they take", "[atomics][nvrtc]") {
    const ElementwiseKernel every("int64 k, T x", "raw T t, T old",
                                  "old = atomic_add(t[k], x); old = atomic_exch(t[k], x)", "atomic_add_exch");
    for (const DType t : {DType::int32, DType::uint32, DType::int64, DType::uint64, DType::float32, DType::float64}) {
        INFO(t.name());
        CHECK_FALSE(every.compile({{"T", t}}, "sm_90").cubin.empty());
    }
    const ElementwiseKernel add16("int64 k, T x", "raw T t", "atomic_add(t[k], x)", "atomic_add16");
    for (const DType t : {DType::float16, DType::bfloat16}) CHECK_FALSE(add16.compile({{"T", t}}, "sm_90").cubin.empty());
    const ElementwiseKernel integers("int64 k, T x", "raw T t, T old",
                                     "old = atomic_min(t[k], x) + atomic_max(t[k], x) + atomic_cas(t[k], x, x)", "atomic_int");
    for (const DType t : {DType::int32, DType::uint32, DType::int64, DType::uint64}) {
        INFO(t.name());
        CHECK_THAT(integers.source({{"T", t}}), Contains("kjit::atomic_cas(&t[k], x, x)"));
        CHECK_FALSE(integers.compile({{"T", t}}, "sm_90").cubin.empty());
    }
    const ElementwiseKernel float_min_max("int64 k, T x", "raw T t, T old", "old = atomic_min(t[k], x) + atomic_max(t[k], x)",
                                          "atomic_float_min_max");
    for (const DType t : {DType::float32, DType::float64}) CHECK_FALSE(float_min_max.compile({{"T", t}}, "sm_90").cubin.empty());
    // Kernels without atomics do not carry them.
    CHECK_THAT(ElementwiseKernel("T x", "T y", "y = x", "plain").source({{"T", DType::float32}}),
               !Contains("KJIT_ATOMICS_CUH"));
}

TEST_CASE("atomics: errors say what and where", "[atomics]") {
    auto error = [](const std::string& in, const std::string& out, const std::string& body, DType t = DType::float32) {
        return error_of([&] { ElementwiseKernel(in, out, body, "bad").check({{"T", t}}); });
    };
    CHECK(error("int64 k, T x", "raw T t", "atomic_add(t[k], x)") == "no error");
    CHECK_THAT(error("int64 k, raw T t", "T y", "y = atomic_add(t[k], 1)"), Contains("cannot assign to an element of input parameter 't'"));
    CHECK(error("int64 k, raw _non_const T t", "T y", "y = atomic_add(t[k], 1)") == "no error");
    CHECK_THAT(error("T x", "T y", "atomic_add(y, x)"), Contains("atomic_add updates an element of a raw output"));
    CHECK(error("int64 k, T x", "raw T t", "atomic_min(t[k], x)") == "no error");
    CHECK_THAT(error("int64 k, T x", "raw T t", "atomic_max(t[k], x)", DType::float16),
               Contains("atomic_max on float16: atomic min and max take 32- and 64-bit integers, float32 and float64"));
    CHECK_THAT(error("int64 k, T x", "raw T t", "atomic_add(t[k], x)", DType::int8), Contains("atomic_add on int8"));
    CHECK_THAT(error("int64 k, T x", "raw T t", "atomic_add(t[k], x)", DType::complex64), Contains("atomic_add on complex64"));
    CHECK_THAT(error("int64 k, T x", "raw T t", "atomic_cas(t[k], x)", DType::int32),
               Contains("atomic_cas() takes 3 arguments, not 2"));
    CHECK_THAT(error("int64 k, T x", "raw T t", "float a[4]; atomic_add(a[k], x)"),
               Contains("not of local array 'a'"));
}
