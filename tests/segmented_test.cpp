// Segmented reductions on the GPU against a host reference: segments of length 0, 1 and millions,
// a warp or a block per segment, strided inputs, offsets of another integer dtype, errors.
#include "test_support.hpp"
#include "gpu_data.hpp"

#include <cmath>

#include "kjit/error.hpp"
#include "kjit/segmented.hpp"

using kjit::Array;
using kjit::DType;
using kjit::ReductionKernel;
using Catch::Matchers::Contains;

namespace {

const kjit::Device gpu = kjit::Device::cuda(0);

Array int64_device(const std::vector<std::int64_t>& v) {
    return Array::from_host(v.data(), DType::int64, {static_cast<std::int64_t>(v.size())}, gpu);
}

// Offsets of segments with the given lengths.
std::vector<std::int64_t> offsets_of(const std::vector<std::int64_t>& lengths) {
    std::vector<std::int64_t> o{0};
    for (const std::int64_t n : lengths) o.push_back(o.back() + n);
    return o;
}

}  // namespace

TEST_CASE("segmented sums, counts and index sums: empty, one-element and long segments", "[gpu][reduction][segmented]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    // Both strategies: many short segments (a warp each) and few long ones (a block each).
    std::uniform_int_distribution<std::int64_t> short_len(0, 70);
    std::vector<std::int64_t> many;
    for (int s = 0; s < 5000; ++s) many.push_back(s % 17 == 0 ? 0 : s % 13 == 0 ? 1 : short_len(kjit::test::rng()));
    const std::vector<std::vector<std::int64_t>> layouts{many, {0, 3'000'000, 1, 0, 2'500'001}, {7}, {0}};
    const ReductionKernel stats("float64 x", "float64 sum, int64 count, int64 index_sum", "x", "a + b",
                                "sum = a; count = n; index_sum = i", "0", "seg_stats");
    // map's i is the element's index within its segment: sum of i over a segment is n(n-1)/2.
    const ReductionKernel index_sum("float64 x", "float64 y", "(double)i + 0 * x", "a + b", "y = a", "0", "seg_isum");
    for (const std::vector<std::int64_t>& lengths : layouts) {
        INFO(lengths.size() << " segments");
        const std::vector<std::int64_t> offsets = offsets_of(lengths);
        const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {offsets.back()});
        const kjit::Outputs out = kjit::segmented_reduce(stats, {x.device}, int64_device(offsets));
        REQUIRE(out.size() == 3);
        REQUIRE(out[0].shape() == kjit::Shape{static_cast<std::int64_t>(lengths.size())});
        std::vector<double> want(lengths.size(), 0), scale(lengths.size(), 0);
        for (std::size_t s = 0; s < lengths.size(); ++s)
            for (std::int64_t k = offsets[s]; k < offsets[s + 1]; ++k) {
                const double v = kjit::test::element_value(x.host, DType::float64, static_cast<std::size_t>(k)).real();
                want[s] += v;
                scale[s] += std::abs(v);
            }
        const std::vector<unsigned char> got = kjit::test::to_host(out[0]);
        std::size_t wrong = 0;
        for (std::size_t s = 0; s < lengths.size(); ++s) {
            const double g = kjit::test::element_value(got, DType::float64, s).real();
            if (!(std::abs(g - want[s]) <= 1e-12 * scale[s]) && ++wrong <= 5) UNSCOPED_INFO("segment " << s << ": " << g << " vs " << want[s]);
        }
        CHECK(wrong == 0);
        CHECK(kjit::test::mismatches(out[1], [&](std::size_t s) { return static_cast<double>(lengths[s]); }, 0) == 0);
        CHECK(kjit::test::mismatches(out[2], [&](std::size_t s) { return static_cast<double>(s); }, 0) == 0);
        const Array is = kjit::segmented_reduce(index_sum, {x.device}, int64_device(offsets));
        CHECK(kjit::test::mismatches(is, [&](std::size_t s) {
                  const double n = static_cast<double>(lengths[s]);
                  return n * (n - 1) / 2;
              }, 0) == 0);
    }
}

TEST_CASE("segmented reductions of strided inputs, int32 offsets, given outputs, a stream", "[gpu][reduction][segmented]") {
    KJIT_REQUIRE_GPU();
    const ReductionKernel top("T x", "T y", "x", "b > a ? b : a", "y = a", "-1e30f", "seg_max");
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {20000});
    const Array every_other = x.device.slice(0, {0, {}, 2});  // 10000 elements, stride 2
    const std::vector<std::int32_t> offsets32{0, 10, 10, 4000, 9999, 10000};
    const Array offsets = Array::from_host(offsets32.data(), DType::int32, {6}, gpu);
    const kjit::Stream s = kjit::Stream::create();
    const Array out = kjit::test::poisoned(DType::float32, {5}, s);
    kjit::segmented_reduce(top, {every_other, out}, offsets, {s});
    s.synchronize();
    CHECK(kjit::test::mismatches(out, [&](std::size_t seg) {
              double best = static_cast<double>(-1e30f);  // the identity, as the kernel's float holds it
              for (std::int32_t k = offsets32[seg]; k < offsets32[seg + 1]; ++k)
                  best = std::max(best, kjit::test::element_value(x.host, DType::float32, static_cast<std::size_t>(2 * k)).real());
              return best;
          }, 0) == 0);
}

TEST_CASE("segmented reduction errors, and offsets beyond the input read nothing outside it", "[gpu][reduction][segmented]") {
    KJIT_REQUIRE_GPU();
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "seg_sum");
    const ReductionKernel no_identity("T x", "T y", "x", "a + b", "y = a", "", "seg_noid");
    const Array x = kjit::test::random_device(DType::float32, {100}).device;
    const Array offsets = int64_device({0, 50, 100});
    CHECK_THROWS_WITH(kjit::segmented_reduce(no_identity, {x}, offsets), Contains("needs an identity"));
    CHECK_THROWS_WITH(kjit::segmented_reduce(sum, {x.reshape({10, 10})}, offsets), Contains("1-D inputs") && Contains("(10, 10)"));
    CHECK_THROWS_WITH(kjit::segmented_reduce(sum, {x}, Array::empty({0}, DType::int64, gpu)), Contains("(segments + 1)"));
    const Array host_offsets = Array::empty({3}, DType::int64, kjit::Device::cpu());
    CHECK_THROWS_WITH(kjit::segmented_reduce(sum, {x}, host_offsets), Contains("offsets must be too") && Contains("on cpu"));
    // Offsets past either end are clamped to the input: [90, 100), then (1000 > -5) nothing, then [0, 100).
    const Array wild = kjit::segmented_reduce(sum, {x}, int64_device({90, 1000, -5, 100}));
    const std::vector<unsigned char> host = kjit::test::to_host(x);
    double tail = 0, all = 0;
    for (std::size_t k = 0; k < 100; ++k) (k >= 90 ? tail : all) += kjit::test::element_value(host, DType::float32, k).real();
    all += tail;
    CHECK(kjit::test::mismatches(wild, [&](std::size_t s) { return s == 0 ? tail : s == 1 ? 0.0 : all; }, 1e-5, 1e-4) == 0);
    // Still usable.
    CHECK(kjit::segmented_reduce(sum, {x}, offsets)[0].shape() == kjit::Shape{2});
}

TEST_CASE("readings with a date column reduced to min, max and mean per day", "[gpu][reduction][segmented]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << kjit::test::seed());
    // 200 days, each with 0 (absent) to 3000 readings; sorted by day.
    std::vector<std::int32_t> days;
    std::uniform_int_distribution<int> per_day(0, 3000);
    for (int d = 0; d < 200; ++d) {
        const int count = d % 7 == 3 ? 0 : d % 11 == 0 ? 1 : per_day(kjit::test::rng());
        days.insert(days.end(), static_cast<std::size_t>(count), 10000 + d);
    }
    const std::int64_t n = static_cast<std::int64_t>(days.size());
    const kjit::test::DeviceData readings = kjit::test::random_device(DType::float64, {n});
    const Array day_column = Array::from_host(days.data(), DType::int32, {n}, gpu);

    const ReductionKernel lo("T x", "T y", "x", "b < a ? b : a", "y = a", "1e300", "day_min");
    const ReductionKernel hi("T x", "T y", "x", "b > a ? b : a", "y = a", "-1e300", "day_max");
    const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "day_mean");
    const kjit::KeyGroups groups = kjit::group_sorted_keys(day_column);
    const Array mins = kjit::segmented_reduce(lo, {readings.device}, groups.offsets);
    const Array maxs = kjit::segmented_reduce(hi, {readings.device}, groups.offsets);
    const Array means = kjit::segmented_reduce(mean, {readings.device}, groups.offsets);
    const kjit::ReducedByKey by_key = kjit::reduce_by_key(hi, day_column, {readings.device});

    // The host's groups.
    std::vector<std::int32_t> keys;
    std::vector<double> want_min, want_max, want_mean;
    for (std::int64_t k = 0; k < n;) {
        std::int64_t e = k;
        double a = 1e300, b = -1e300, s = 0;
        while (e < n && days[static_cast<std::size_t>(e)] == days[static_cast<std::size_t>(k)]) {
            const double v = kjit::test::element_value(readings.host, DType::float64, static_cast<std::size_t>(e)).real();
            a = std::min(a, v);
            b = std::max(b, v);
            s += v;
            ++e;
        }
        keys.push_back(days[static_cast<std::size_t>(k)]);
        want_min.push_back(a);
        want_max.push_back(b);
        want_mean.push_back(s / static_cast<double>(e - k));
        k = e;
    }
    REQUIRE(groups.count == static_cast<std::int64_t>(keys.size()));
    CHECK(kjit::test::mismatches(groups.keys, [&](std::size_t g) { return static_cast<double>(keys[g]); }, 0) == 0);
    CHECK(kjit::test::mismatches(mins, [&](std::size_t g) { return want_min[g]; }, 0) == 0);
    CHECK(kjit::test::mismatches(maxs, [&](std::size_t g) { return want_max[g]; }, 0) == 0);
    CHECK(kjit::test::mismatches(means, [&](std::size_t g) { return want_mean[g]; }, 1e-12, 1e-12) == 0);
    CHECK(kjit::test::mismatches(by_key.keys, [&](std::size_t g) { return static_cast<double>(keys[g]); }, 0) == 0);
    CHECK(kjit::test::mismatches(by_key.values[0], [&](std::size_t g) { return want_max[g]; }, 0) == 0);
    CHECK_THROWS_WITH(kjit::reduce_by_key(hi, day_column.slice(0, {0, 10, 1}), {readings.device}), Contains("but keys has shape"));
}
