// group_keys' table path for integer keys in a small range (jit/kernels/ops/dense_groups.hpp) and
// reduce_by_key by group index (templates/reduction.cuh's bins; issue 36): the groups, their keys,
// offsets and each element's group checked exactly against std::map of the same keys for every
// integer dtype and at the range's edges; daily min / max / mean and a Welford struct by group
// index against references in double, the same bits on a second run, and the kernels that go the
// sorted way instead (a map reading `i`, too many groups for shared memory, keys too far apart).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "cupy_support.hpp"
#include "jit/kernels/ops/dense_groups.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/segmented.hpp"
#include "kjit/sort.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

// group_keys(keys) against the distinct keys in order: keys, count, offsets and group_of exactly.
// `dense`: whether the table path must have been taken (group_of valid, no order).
template <class T>
void check_groups(const std::vector<T>& x, DType t, bool dense) {
    const Device device = Device::cuda(0);
    const KeyGroups g = group_keys(on(device, x, t));
    std::map<T, std::int64_t> counts;
    for (const T v : x) ++counts[v];
    REQUIRE(g.count == static_cast<std::int64_t>(counts.size()));
    CHECK(g.group_of.valid() == dense);
    CHECK(g.order.valid() == !dense);
    std::vector<T> want_keys;
    std::vector<std::int64_t> want_offsets{0};
    std::map<T, std::int32_t> rank;
    for (const auto& [v, c] : counts) {
        rank[v] = static_cast<std::int32_t>(want_keys.size());
        want_keys.push_back(v);
        want_offsets.push_back(want_offsets.back() + c);
    }
    CHECK(elements_of<T>(g.keys) == want_keys);
    CHECK(elements_of<std::int64_t>(g.offsets) == want_offsets);
    if (!dense) return;
    const std::vector<std::int32_t> got = elements_of<std::int32_t>(g.group_of);
    REQUIRE(got.size() == x.size());
    std::size_t bad = 0;
    for (std::size_t e = 0; e < x.size(); ++e) bad += got[e] != rank[x[e]];
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gpu: group_keys numbers integer keys through a table: every integer dtype, the range's edges", "[segments][gpu]") {
    KJIT_REQUIRE_GPU();
    check_groups(cast_all<std::int32_t>(draw(200003, -5, 794, true)), DType::int32, true);
    check_groups(cast_all<std::int8_t>(draw(5000, -128, 127, true)), DType::int8, true);
    check_groups(cast_all<std::uint8_t>(draw(5000, 0, 255, true)), DType::uint8, true);
    check_groups(cast_all<std::int16_t>(draw(70000, -300, 300, true)), DType::int16, true);
    check_groups(cast_all<std::uint16_t>(draw(70000, 0, 65535, true)), DType::uint16, true);  // the table's whole span
    std::vector<std::int64_t> low = cast_all<std::int64_t>(draw(9000, 0, 1000, true));
    for (std::int64_t& v : low) v += std::numeric_limits<std::int64_t>::min();
    check_groups(low, DType::int64, true);
    std::vector<std::uint64_t> high(9000);
    for (std::size_t e = 0; e < high.size(); ++e) high[e] = std::numeric_limits<std::uint64_t>::max() - (e * 7919) % 3000;
    check_groups(high, DType::uint64, true);
    check_groups(cast_all<std::uint32_t>(draw(4097, 7, 7, true)), DType::uint32, true);  // one group
    check_groups(std::vector<std::int32_t>{42}, DType::int32, true);
    // 65536 values apart at most: the table; one more: sorted.
    std::vector<std::int32_t> edge = cast_all<std::int32_t>(draw(100000, 0, 65535, true));
    edge[3] = 0, edge[9] = 65535;
    check_groups(edge, DType::int32, true);
    edge[9] = 65536;
    check_groups(edge, DType::int32, false);
    // Bool keys are their truth; floats always sort.
    check_groups(cast_all<std::uint8_t>(draw(3000, 0, 1, true)), DType::bool_, true);
    check_groups(draw(3000, 0, 10, true), DType::float64, false);
    // A strided view groups as its elements.
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(20001, -50, 50, true));
    std::vector<std::int32_t> every_other;
    for (std::size_t e = 0; e < x.size(); e += 2) every_other.push_back(x[e]);
    const KeyGroups g = group_keys(on(Device::cuda(0), x, DType::int32).slice(0, Slice{std::nullopt, std::nullopt, 2}));
    const std::vector<std::int32_t> of = elements_of<std::int32_t>(g.group_of);
    const std::vector<std::int32_t> keys = elements_of<std::int32_t>(g.keys);
    std::size_t bad = 0;
    for (std::size_t e = 0; e < every_other.size(); ++e) bad += keys.at(static_cast<std::size_t>(of[e])) != every_other[e];
    CHECK(bad == 0);
}

TEST_CASE("gpu: reduce_by_key by group index: daily low, high, mean and a Welford variance, the same bits twice", "[segments][gpu]") {
    KJIT_REQUIRE_GPU();
    const Device device = Device::cuda(0);
    const std::size_t n = 1'000'003;  // many blocks, a ragged last warp
    const std::vector<std::int32_t> day = cast_all<std::int32_t>(draw(n, 100, 899, true));
    const std::vector<double> reading = draw(n, -40, 40, false);
    const Array days = on(device, day, DType::int32), readings = on(device, reading, DType::float64);
    const KeyGroups groups = group_keys(days);
    REQUIRE(groups.group_of.valid());
    const ReductionKernel low("T x", "T y", "x", "min(a, b)", "y = a", "CUDART_INF", "bins_low");
    const ReductionKernel high("T x", "T y", "x", "max(a, b)", "y = a", "-CUDART_INF", "bins_high");
    const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "bins_mean");
    KernelOptions welford;
    welford.reduce_type = "struct bins_welford { float64 n; float64 mean; float64 m2; }";
    const ReductionKernel var("T x", "float64 var", "{1, x, 0}",
                              "{a.n + b.n, a.n + b.n == 0 ? 0.0 : a.mean + (b.mean - a.mean) * (b.n / (a.n + b.n)),"
                              " a.n + b.n == 0 ? 0.0 : a.m2 + b.m2 + (b.mean - a.mean) * (b.mean - a.mean) * (a.n * b.n / (a.n + b.n))}",
                              "var = a.m2 / a.n", "{0, 0, 0}", "bins_var", welford);
    // Reads `i`: the elements go in sorted order (argsort of group_of) as segments instead.
    const ReductionKernel placed("T x", "T y", "x + 0 * i", "a + b", "y = a / n", "0", "bins_placed_mean");
    const Array poison = poisoned_on(device, DType::float64, {groups.count});
    (void)reduce_by_key(mean, groups, {readings, poison});
    const std::vector<double> lo = elements_of<double>(reduce_by_key(low, groups, {readings})[0]);
    const std::vector<double> hi = elements_of<double>(reduce_by_key(high, groups, {readings})[0]);
    const std::vector<double> mu = elements_of<double>(poison);
    const std::vector<double> va = elements_of<double>(reduce_by_key(var, groups, {readings})[0]);
    const std::vector<double> pm = elements_of<double>(reduce_by_key(placed, groups, {readings})[0]);
    std::map<std::int32_t, std::vector<double>> by_day;
    for (std::size_t e = 0; e < n; ++e) by_day[day[e]].push_back(reading[e]);
    REQUIRE(groups.count == static_cast<std::int64_t>(by_day.size()));
    std::size_t g = 0, bad = 0;
    for (const auto& [d, values] : by_day) {
        const double count = static_cast<double>(values.size());
        const double want_mean = std::accumulate(values.begin(), values.end(), 0.0) / count;
        double ss = 0;
        for (const double v : values) ss += (v - want_mean) * (v - want_mean);
        bad += lo[g] != *std::min_element(values.begin(), values.end());
        bad += hi[g] != *std::max_element(values.begin(), values.end());
        bad += !(std::abs(mu[g] - want_mean) <= 1e-12 * 40);
        bad += !(std::abs(pm[g] - want_mean) <= 1e-12 * 40);
        bad += !(std::abs(va[g] - ss / count) <= 1e-9 * (ss / count));
        ++g;
    }
    CHECK(bad == 0);
    // A fixed order: the same bits on a second run.
    CHECK(elements_of<double>(reduce_by_key(mean, groups, {readings})[0]) == mu);
    CHECK(elements_of<double>(reduce_by_key(var, groups, {readings})[0]) == va);
    // Errors leave it usable: a kernel with no identity, an input of the wrong length.
    const ReductionKernel no_identity("T x", "T y", "x", "a + b", "y = a", "", "bins_no_identity");
    CHECK_THAT(error_of([&] { (void)reduce_by_key(no_identity, groups, {readings}); }), Contains("needs an identity"));
    CHECK_THAT(error_of([&] { (void)reduce_by_key(mean, groups, {on(device, std::vector<double>{1, 2}, DType::float64)}); }),
               Contains("input 'x' has shape (2,) but the keys had 1000003 elements"));
    CHECK(elements_of<double>(reduce_by_key(low, groups, {readings})[0]) == lo);
}

TEST_CASE("gpu: reduce_by_key by group index with more groups than shared memory holds goes the sorted way", "[segments][gpu]") {
    KJIT_REQUIRE_GPU();
    const Device device = Device::cuda(0);
    const std::size_t n = 300000;
    const std::vector<std::int32_t> key = cast_all<std::int32_t>(draw(n, 0, 60000, true));
    const std::vector<double> x = draw(n, -1, 1, false);
    const KeyGroups groups = group_keys(on(device, key, DType::int32));
    REQUIRE(groups.group_of.valid());
    REQUIRE(groups.count > 6144);  // 8-byte values of that many groups pass 48 KB
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "bins_many_sum");
    const std::vector<double> got = elements_of<double>(reduce_by_key(sum, groups, {on(device, x, DType::float64)})[0]);
    std::map<std::int32_t, double> want;
    for (std::size_t e = 0; e < n; ++e) want[key[e]] += x[e];
    REQUIRE(got.size() == want.size());
    std::size_t g = 0, bad = 0;
    for (const auto& [k, s] : want) bad += !(std::abs(got[g++] - s) <= 1e-12 * 20);
    CHECK(bad == 0);
}

TEST_CASE("the dense groups module compiles with NVRTC", "[segments][nvrtc]") {
    const Binary b = jit::kernels::dense_groups_module().compile("sm_90");
    CHECK_FALSE(b.cubin.empty());
}
