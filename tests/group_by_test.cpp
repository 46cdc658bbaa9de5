// kjit::argsort and the unsorted group-by built on it (kjit::group_keys, reduce_by_key over its
// groups; issue 36): orders checked exactly against std::stable_sort of the same keys made here,
// around the radix sort's tile and warp boundaries, with duplicates, negatives, NaN and -0.0, and
// keys whose differing bits need one, two and eight passes; daily min / max / mean of unordered
// readings against per-group references in double.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include "cupy_support.hpp"
#include "jit/kernels/ops/sort.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/segmented.hpp"
#include "kjit/sort.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

// NumPy's stable argsort: by value, -0.0 equal to 0.0, NaN last, ties by index.
template <class T>
std::vector<std::int64_t> stable_order(const std::vector<T>& x) {
    std::vector<std::int64_t> o(x.size());
    std::iota(o.begin(), o.end(), std::int64_t{0});
    std::stable_sort(o.begin(), o.end(), [&](std::int64_t a, std::int64_t b) {
        const T u = x[static_cast<std::size_t>(a)], v = x[static_cast<std::size_t>(b)];
        if constexpr (std::is_floating_point_v<T>) {
            if (std::isnan(u)) return false;
            if (std::isnan(v)) return true;
        }
        return u < v;
    });
    return o;
}

template <class T>
void check_order(Device device, const std::vector<T>& x, DType t) {
    const std::vector<std::int64_t> got = elements_of<std::int64_t>(argsort(on(device, x, t)));
    const std::vector<std::int64_t> want = stable_order(x);
    REQUIRE(got.size() == want.size());
    std::size_t bad = 0;
    for (std::size_t e = 0; e < got.size(); ++e) bad += got[e] != want[e];
    CHECK(bad == 0);
}

void argsort_on(Device device) {
    // int32 keys with many duplicates (10 bits differ: two passes), at sizes around the tile
    // (4096) and a round (256).
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{255}, std::size_t{257}, std::size_t{4095}, std::size_t{4097},
                                std::size_t{3 * 4096 + 5}, std::size_t{100003}}) {
        INFO("n " << n);
        check_order(device, cast_all<std::int32_t>(draw(n, 0, 800, true)), DType::int32);
    }
    // Negative and positive int8; every int64 bit differing (eight passes); uint64 past 2^63.
    check_order(device, cast_all<std::int8_t>(draw(5000, -128, 127, true)), DType::int8);
    std::vector<std::int64_t> wide = cast_all<std::int64_t>(draw(20000, -9e18, 9e18, true));
    wide[7] = std::numeric_limits<std::int64_t>::min();
    wide[8] = std::numeric_limits<std::int64_t>::max();
    check_order(device, wide, DType::int64);
    std::vector<std::uint64_t> big(3000);
    for (std::size_t e = 0; e < big.size(); ++e) big[e] = (e * 0x9E3779B97F4A7C15ull) ^ (e % 3 == 0 ? 0x8000000000000000ull : 0);
    check_order(device, big, DType::uint64);
    // Floats: NaN last (in order), -0.0 equal to 0.0, infinities, duplicates.
    std::vector<double> f = draw(9000, -5, 5, true);
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    f[3] = nan, f[100] = -0.0, f[101] = 0.0, f[102] = -0.0, f[200] = inf, f[201] = -inf, f[8000] = nan;
    check_order(device, f, DType::float64);
    std::vector<float> g(f.begin(), f.end());
    check_order(device, g, DType::float32);
    // Every key equal: the identity order (one pass); bools.
    check_order(device, std::vector<std::int16_t>(5000, 7), DType::int16);
    const std::vector<std::uint8_t> flags = cast_all<std::uint8_t>(draw(777, 0, 1, true));
    check_order(device, flags, DType::bool_);
    // A strided view sorts as its elements.
    const std::vector<std::int32_t> x = cast_all<std::int32_t>(draw(2001, -50, 50, true));
    std::vector<std::int32_t> every_other;
    for (std::size_t e = 0; e < x.size(); e += 2) every_other.push_back(x[e]);
    const Array xs = on(device, x, DType::int32);
    CHECK(elements_of<std::int64_t>(argsort(xs.slice(0, Slice{std::nullopt, std::nullopt, 2}))) == stable_order(every_other));
    // Errors leave it usable.
    CHECK_THAT(error_of([&] { argsort(on(device, std::vector<float>(6, 1.0f), DType::float32, {2, 3})); }), Contains("keys must be 1-D"));
    CHECK_THAT(error_of([&] { argsort(Array::empty({4}, DType::float16, device)); }), Contains("float16 are not supported"));
    CHECK(argsort(Array::empty({0}, DType::int32, device)).size() == 0);
    CHECK(elements_of<std::int64_t>(argsort(xs)) == stable_order(x));
}

// The daily low, high and mean of 12 readings a day over `days` days, the readings in random order
// (seed 3's question with unordered input).
void unsorted_group_by_on(Device device) {
    const std::size_t n = 200003;
    const std::vector<std::int32_t> day = cast_all<std::int32_t>(draw(n, 0, 799, true));
    const std::vector<double> reading = draw(n, -40, 40, false);
    const Array days = on(device, day, DType::int32), readings = on(device, reading, DType::float64);
    const KeyGroups groups = group_keys(days);
    const ReductionKernel low("T x", "T y", "x", "min(a, b)", "y = a", "CUDART_INF", "daily_low");
    const ReductionKernel high("T x", "T y", "x", "max(a, b)", "y = a", "-CUDART_INF", "daily_high");
    const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "daily_mean");
    const std::vector<double> lo = elements_of<double>(reduce_by_key(low, groups, {readings})[0]);
    const std::vector<double> hi = elements_of<double>(reduce_by_key(high, groups, {readings})[0]);
    const std::vector<double> mu = elements_of<double>(reduce_by_key(mean, groups, {readings})[0]);
    const std::vector<std::int32_t> keys = elements_of<std::int32_t>(groups.keys);
    std::map<std::int32_t, std::vector<double>> by_day;
    for (std::size_t e = 0; e < n; ++e) by_day[day[e]].push_back(reading[e]);
    REQUIRE(groups.count == static_cast<std::int64_t>(by_day.size()));
    REQUIRE(keys.size() == by_day.size());
    std::size_t g = 0, bad = 0;
    for (const auto& [d, values] : by_day) {
        const double want_mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
        bad += keys[g] != d;
        bad += lo[g] != *std::min_element(values.begin(), values.end());
        bad += hi[g] != *std::max_element(values.begin(), values.end());
        bad += std::abs(mu[g] - want_mean) > 1e-12 * 40;
        ++g;
    }
    CHECK(bad == 0);
    // On the GPU the days (800 values) are numbered through a table (group_of); on the host they
    // are sorted, and the order applied is stable: the first reading of each day comes first in
    // its group.
    CHECK(groups.group_of.valid() == !device.is_cpu());
    CHECK(groups.order.valid() == device.is_cpu());
    bad = 0;
    if (groups.order.valid()) {
        const std::vector<std::int64_t> order = elements_of<std::int64_t>(groups.order);
        const std::vector<std::int64_t> offsets = elements_of<std::int64_t>(groups.offsets);
        for (std::size_t k = 0; k + 1 < offsets.size(); ++k)
            for (std::int64_t e = offsets[k] + 1; e < offsets[k + 1]; ++e)
                bad += order[static_cast<std::size_t>(e - 1)] > order[static_cast<std::size_t>(e)];
    } else {
        const std::vector<std::int32_t> of = elements_of<std::int32_t>(groups.group_of);
        for (std::size_t e = 0; e < n; ++e) bad += keys.at(static_cast<std::size_t>(of[e])) != day[e];
    }
    CHECK(bad == 0);
    // Sorted groups (no order) reduce as before.
    const std::vector<std::int32_t> sorted_days{1, 1, 2, 5, 5, 5};
    const KeyGroups sorted = group_sorted_keys(on(device, sorted_days, DType::int32));
    CHECK(elements_of<double>(reduce_by_key(mean, sorted, {on(device, std::vector<double>{1, 3, 4, 1, 2, 6}, DType::float64)})[0]) ==
          std::vector<double>{2, 4, 3});
    CHECK_THAT(error_of([&] { reduce_by_key(mean, groups, {on(device, std::vector<double>{1, 2}, DType::float64)}); }),
               Contains("input 'x' has shape (2,) but the keys had 200003 elements"));
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[sort]", "argsort is NumPy's stable argsort for every key dtype", argsort_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[sort][segments]", "group_keys and reduce_by_key on unordered keys: daily low, high and mean",
                              unsorted_group_by_on)

TEST_CASE("argsort's kernels compile with NVRTC", "[sort][nvrtc]") {
    const Binary b = jit::kernels::sort_module().compile("sm_90");
    CHECK_FALSE(b.cubin.empty());
}
