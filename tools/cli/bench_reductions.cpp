// `kjit bench`: the reduction cases of issue 6.
#include <algorithm>
#include <sstream>

#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {

namespace {

// Host wall time of `all` with a synchronisation after it (for calls that wait for the GPU
// themselves), median of 31 after 5 warm-up runs.
double median_wall_ms(const std::function<void()>& all, const Stream& s) { return median_host_ms(all, {s}, 31, 1, 5); }

}  // namespace

// Reductions (issue 6): the built-ins and a user ReductionKernel, bytes counted as the peers do
// (tools/bench/cases.py: every input element read once plus the outputs written).
void add_reduction_cases(Cases& c) {
    const std::int64_t n28 = std::int64_t{1} << 28, side = 16384;
    c.emplace_back("red_sum_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array y = Array::empty({}, DType::float32, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("red_sum_f32", DType::float32, n28, 4.0 * n28 + 4, [&] { kjit::sum(x, o, y); }, s,
                              "kjit::sum(x, {}, y), every axis");
    });
    c.emplace_back("red_sumsq_f32", [=](const Stream& s) {
        const ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq");
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array y = Array::empty({}, DType::float32, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("red_sumsq_f32", DType::float32, n28, 4.0 * n28 + 4, [&] { sumsq.launch({x, y}, o); }, s,
                              "ReductionKernel('T x', 'T y', 'x * x', 'a + b', 'y = a', '0').launch({x, y})");
    });
    for (const int axis : {1, 0}) {
        const std::string name = "red_sum_ax" + std::to_string(axis) + "_f32";
        c.emplace_back(name, [=](const Stream& s) {
            const Array x = filled(DType::float32, {side, side}, 0.5, s);
            const Array y = Array::empty({side}, DType::float32, Device::cuda(0), s);
            ReduceOptions o;
            o.stream = s;
            o.axis = std::vector<int>{axis};
            return bandwidth_case(name, DType::float32, side * side, 4.0 * (side * side + side), [&] { kjit::sum(x, o, y); }, s,
                                  "kjit::sum(x, {axis=" + std::to_string(axis) + "}, y)");
        });
    }
    c.emplace_back("red_argmax_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array y = Array::empty({}, DType::int64, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("red_argmax_f32", DType::float32, n28, 4.0 * n28 + 8, [&] { kjit::argmax(x, o, y); }, s,
                              "kjit::argmax(x, {}, y), flattened");
    });
    c.emplace_back("red_var_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array y = Array::empty({}, DType::float32, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("red_var_f32", DType::float32, n28, 4.0 * n28 + 4, [&] { kjit::var(x, o, 0, y); }, s,
                              "kjit::var(x, {}, 0, y): shifted sums in float64, one pass");
    });
    c.emplace_back("red_argmax_value_f32", [=](const Stream& s) {
        KernelOptions ko;
        ko.reduce_type = "struct { T v; int64 at; }";
        const ReductionKernel top("T x", "T best, int64 where", "{x, i}", "b.v > a.v || (b.v == a.v && b.at < a.at) ? b : a",
                                  "best = a.v; where = a.at", "", "argmax_value", ko);
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array best = Array::empty({}, DType::float32, Device::cuda(0), s), at = Array::empty({}, DType::int64, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("red_argmax_value_f32", DType::float32, n28, 4.0 * n28 + 12, [&] { top.launch({x, best, at}, o); }, s,
                              "ReductionKernel with struct { T v; int64 at; }: value and index in one pass");
    });
    c.emplace_back("red_histogram_i32", [=](const Stream& s) {
        const ElementwiseKernel make_values("", "int32 v", "v = (int)(((uint64)i * 2654435761ull) >> 7 & 255)", "bench_bin_values");
        const ElementwiseKernel histogram("int32 v", "raw int32 bins", "atomic_add(bins[v], 1)", "histogram");
        const Array v = Array::empty({n28}, DType::int32, Device::cuda(0), s);
        make_values.launch({v}, {s, -1});
        const Array bins = filled(DType::int32, {256}, 0, s);
        CallOptions o;
        o.stream = s;
        return bandwidth_case("red_histogram_i32", DType::int32, n28, 4.0 * n28 + 4 * 256, [&] { histogram.launch({v, bins}, o); }, s,
                              "ElementwiseKernel 'atomic_add(bins[v], 1)' into 256 int32 bins (global atomics)");
    });
    c.emplace_back("red_bincount_i32", [=](const Stream& s) {
        const ElementwiseKernel make_values("", "int32 v", "v = (int)(((uint64)i * 2654435761ull) >> 7 & 255)", "bench_bin_values");
        const Array v = Array::empty({n28}, DType::int32, Device::cuda(0), s);
        make_values.launch({v}, {s, -1});
        const Array bins = Array::empty({256}, DType::int64, Device::cuda(0), s);
        CallOptions o;
        o.stream = s;
        return bandwidth_case("red_bincount_i32", DType::int32, n28, 4.0 * n28 + 8 * 256, [&] { kjit::bincount(v, 256, o, bins); }, s,
                              "kjit::bincount(v, 256, {}, bins): shared-memory bins per block, added once");
    });
    c.emplace_back("red_cumsum_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 0.5, s);
        const Array y = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        ScanOptions o;
        o.stream = s;
        return bandwidth_case("red_cumsum_f32", DType::float32, n28, 8.0 * n28, [&] { kjit::cumsum(x, o, y); }, s,
                              "kjit::cumsum(x, {}, y): a ScanKernel, decoupled look-back in one pass");
    });
    c.emplace_back("red_groupby_f64", [](const Stream& s) {
        // 12M readings with a sorted integer day column of 800 days (equal runs of 15000: the
        // peers draw sorted uniform integers, runs of ~15000), reduced to min, max and mean per day.
        const std::int64_t n = 12'000'000, groups = 800;
        const ElementwiseKernel make_days("", "int64 day", "day = i * 800 / n", "bench_days");
        const ElementwiseKernel make_readings("", "float64 x", "x = sin((double)i * 0.001) * 3.0", "bench_readings");
        const Array days = Array::empty({n}, DType::int64, Device::cuda(0), s), x = Array::empty({n}, DType::float64, Device::cuda(0), s);
        make_days.launch({days}, {s, -1});
        make_readings.launch({x}, {s, -1});
        const ReductionKernel lo("T x", "T y", "x", "b < a ? b : a", "y = a", "1e300", "group_min");
        const ReductionKernel hi("T x", "T y", "x", "b > a ? b : a", "y = a", "-1e300", "group_max");
        const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "group_mean");
        const Array mins = Array::empty({groups}, DType::float64, Device::cuda(0), s), maxs = Array::empty({groups}, DType::float64, Device::cuda(0), s),
                    means = Array::empty({groups}, DType::float64, Device::cuda(0), s);
        auto all = [&] {
            const KeyGroups g = group_sorted_keys(days, s);  // synchronises once
            segmented_reduce(lo, {x, mins}, g.offsets, {s});
            segmented_reduce(hi, {x, maxs}, g.offsets, {s});
            segmented_reduce(mean, {x, means}, g.offsets, {s});
        };
        Record r;
        r.name = "red_groupby_f64";
        r.dtype = "float64";
        r.n = n;
        r.bytes = 8.0 * n + 3.0 * 8 * groups;
        r.ms = median_wall_ms(all, s);
        r.note = "group_sorted_keys(days) then segmented_reduce min, max, mean; wall time with sync, median of 31";
        // The three reductions alone, offsets known (events, as the bandwidth cases).
        const KeyGroups g = group_sorted_keys(days, s);
        Record only = r;
        only.variant = "segmented min, max, mean with the offsets known";
        only.ms = time_ms([&] {
            segmented_reduce(lo, {x, mins}, g.offsets, {s});
            segmented_reduce(hi, {x, maxs}, g.offsets, {s});
            segmented_reduce(mean, {x, means}, g.offsets, {s});
        }, s);
        only.note = only.variant;
        extra_records().push_back(only);
        return r;
    });
    c.emplace_back("red_groupby_unsorted_f64", [](const Stream& s) {
        // The same 12M readings and 800 days, the day column in no order (a multiplicative hash of
        // the index: ~15000 readings a day), reduced to min, max and mean per day.
        const std::int64_t n = 12'000'000;
        const ElementwiseKernel make_days("", "int32 day", "day = (int)((uint64)i * 2654435761ull % 800ull)", "bench_unsorted_days");
        const ElementwiseKernel make_readings("", "float64 x", "x = sin((double)i * 0.001) * 3.0", "bench_readings");
        const Array days = Array::empty({n}, DType::int32, Device::cuda(0), s), x = Array::empty({n}, DType::float64, Device::cuda(0), s);
        make_days.launch({days}, {s, -1});
        make_readings.launch({x}, {s, -1});
        const ReductionKernel lo("T x", "T y", "x", "b < a ? b : a", "y = a", "1e300", "group_min");
        const ReductionKernel hi("T x", "T y", "x", "b > a ? b : a", "y = a", "-1e300", "group_max");
        const ReductionKernel mean("T x", "T y", "x", "a + b", "y = a / n", "0", "group_mean");
        CallOptions o;
        o.stream = s;
        std::int64_t found = 0;
        auto all = [&] {
            const KeyGroups g = group_keys(days, s);  // the range and the group count: two waits
            reduce_by_key(lo, g, {x}, o);
            reduce_by_key(hi, g, {x}, o);
            reduce_by_key(mean, g, {x}, o);
            found = g.count;
        };
        Record r;
        r.name = "red_groupby_unsorted_f64";
        r.dtype = "float64";
        r.n = n;
        r.bytes = 8.0 * n + 3.0 * 8 * 800;
        r.ms = median_wall_ms(all, s);
        r.note = "group_keys(days) (a table over the days' range) then reduce_by_key min, max, mean by group index; " + std::to_string(found) +
                 " groups; wall time with sync, median of 31";
        // Where the time goes: the same steps alone (each timed the same way).
        const KeyGroups kept = group_keys(days, s);
        const auto part = [&](const std::string& variant, const std::function<void()>& step) {
            Record p = r;
            p.variant = variant;
            p.ms = median_wall_ms(step, s);
            p.note = "the step alone, wall time with sync, median of 31";
            extra_records().push_back(p);
        };
        part("argsort(days) alone", [&] { (void)argsort(days, s); });
        part("group_keys(days) alone", [&] { (void)group_keys(days, s); });
        part("the three reduce_by_key alone", [&] {
            reduce_by_key(lo, kept, {x}, o);
            reduce_by_key(hi, kept, {x}, o);
            reduce_by_key(mean, kept, {x}, o);
        });
        return r;
    });
    c.emplace_back("red_host_1k", [](const Stream& s) {
        const ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq");
        const Array x = filled(DType::float32, {1000}, 0.5, s);
        const Array y = Array::empty({}, DType::float32, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        for (int k = 0; k < 1000; ++k) sumsq.launch({x, y}, o);
        s.synchronize();
        std::vector<double> us;
        for (int r = 0; r < 5; ++r) {
            const auto t0 = Clock::now();
            for (int k = 0; k < 10000; ++k) sumsq.launch({x, y}, o);
            s.synchronize();
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 10000);
        }
        std::sort(us.begin(), us.end());
        Record r;
        r.name = "red_host_1k";
        r.dtype = "float32";
        r.n = 1000;
        r.us_per_call = us[2];
        r.note = "sum-of-squares ReductionKernel .launch({x, y}), 10000 calls then one sync, median of 5";
        return r;
    });
}

}  // namespace kjit::cli::bench
