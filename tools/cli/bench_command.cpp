// `kjit bench`: kjit's side of the benchmark table (tools/bench/README.md). Each case times kjit on
// the H200-sized problems of the issues with CUDA events (median of several repeats of a batch of
// launches, arrays far larger than the L2), and the device-to-device copy ceiling is measured in
// the same run. Results are JSON lines, one per case.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "jit/elementwise_calls.hpp"
#include "kjit/kjit.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/cublas.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/matmul_plan.hpp"
#include "tools/cli/bench_crossover.hpp"
#include "tools/cli/commands.hpp"

namespace kjit::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Record {
    std::string name;
    std::string dtype;
    std::int64_t n = 0;
    double bytes = 0;
    std::optional<double> gbps, us_per_call, ms;
    std::string note, error;
    std::string variant;  // a secondary measurement of the case (tools/bench/README.md)
    std::optional<double> tflops;
    std::string impl = "kjit";  // or "cublas": the raw library on the same shapes
};

std::string today() {
    char buf[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
    return buf;
}

// The middle value of `v` (the upper one of an even count).
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Milliseconds per call of `launch` on `stream`: median over `repeats` batches of `batch` calls.
double time_ms(const std::function<void()>& launch, const Stream& stream, int batch = 20, int repeats = 7) {
    launch();  // warm: compiles, loads, touches the memory
    stream.synchronize();
    std::vector<double> per_call;
    Event start, end;
    for (int r = 0; r < repeats; ++r) {
        start.record(stream);
        for (int k = 0; k < batch; ++k) launch();
        end.record(stream);
        end.synchronize();
        per_call.push_back(Event::elapsed_ms(start, end) / batch);
    }
    std::sort(per_call.begin(), per_call.end());
    return per_call[per_call.size() / 2];
}

Array filled(DType t, const Shape& shape, double value, const Stream& s) {
    const ElementwiseKernel fill("T v", "T y", "y = v", "bench_fill");
    Array a = Array::empty(shape, t, Device::cuda(0), s);
    fill.launch({Scalar(value).cast(t), a}, {s, -1});
    return a;
}

Record bandwidth_case(const std::string& name, DType t, std::int64_t n, double bytes, const std::function<void()>& launch,
                      const Stream& s, const std::string& note) {
    Record r;
    r.name = name;
    r.dtype = std::string(t.name());
    r.n = n;
    r.bytes = bytes;
    r.ms = time_ms(launch, s);
    r.gbps = bytes / (*r.ms * 1e-3) / 1e9;
    r.note = note;
    return r;
}

using Case = std::function<Record(const Stream&)>;

std::vector<Record>& extra_records();

std::vector<std::pair<std::string, Case>> cases(const std::string& self) {
    std::vector<std::pair<std::string, Case>> c;
    const std::int64_t n28 = std::int64_t{1} << 28;
    c.emplace_back("copy", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 1.0, s), y = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        detail::Driver& d = detail::driver_on(0);
        return bandwidth_case("copy", DType::float32, n28, 2.0 * 4 * n28, [&] {
            KJIT_CU_CHECK(d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(y.data()), reinterpret_cast<CUdeviceptr>(x.data()),
                                              x.nbytes(), s.handle()));
        }, s, "cuMemcpyDtoDAsync, bytes read + written");
    });
    auto axpb_case = [=](const std::string& name, DType t) {
        return [=](const Stream& s) {
            const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
            const Array x = filled(t, {n28}, 1.5, s), y = Array::empty({n28}, t, Device::cuda(0), s);
            return bandwidth_case(name, t, n28, 2.0 * t.itemsize() * n28, [&] { axpb.launch({x, 2.0, 1.0, y}, {s, -1}); }, s,
                                  "a, b scalars; x read, y written");
        };
    };
    c.emplace_back("ew_axpb_f32", axpb_case("ew_axpb_f32", DType::float32));
    c.emplace_back("ew_axpb_f16", axpb_case("ew_axpb_f16", DType::float16));
    c.emplace_back("ew_axpb_bf16", axpb_case("ew_axpb_bf16", DType::bfloat16));
    c.emplace_back("ew_abc_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T a, T b, T c", "T y", "y = a * b + c", "fma3");
        const Array a = filled(DType::float32, {n28}, 1.5, s), b = filled(DType::float32, {n28}, 2.0, s),
                    cc = filled(DType::float32, {n28}, 0.5, s), y = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        return bandwidth_case("ew_abc_f32", DType::float32, n28, 4.0 * 4 * n28, [&] { k.launch({a, b, cc, y}, {s, -1}); }, s,
                              "three arrays read, one written");
    });
    const std::int64_t side = 16384;
    c.emplace_back("ew_rowadd_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T x, T r", "T y", "y = x + r", "row_add");
        const Array x = filled(DType::float32, {side, side}, 1.5, s), row = filled(DType::float32, {side}, 2.0, s),
                    y = Array::empty({side, side}, DType::float32, Device::cuda(0), s);
        return bandwidth_case("ew_rowadd_f32", DType::float32, side * side, 2.0 * 4 * side * side + 4.0 * side,
                              [&] { k.launch({x, row, y}, {s, -1}); }, s, "x + row[None, :]");
    });
    c.emplace_back("ew_trowadd_f32", [=](const Stream& s) {
        const ElementwiseKernel k("T x, T r", "T y", "y = x + r", "row_add");
        const Array x = filled(DType::float32, {side, side}, 1.5, s), row = filled(DType::float32, {side}, 2.0, s),
                    y = Array::empty({side, side}, DType::float32, Device::cuda(0), s);
        const Array xt = x.transpose();
        return bandwidth_case("ew_trowadd_f32", DType::float32, side * side, 2.0 * 4 * side * side + 4.0 * side,
                              [&] { k.launch({xt, row, y}, {s, -1}); }, s, "x.T + row[None, :], C-ordered output");
    });
    c.emplace_back("ew_inplace_f64", [=](const Stream& s) {
        const ElementwiseKernel k("T x", "T y", "y = x + 5", "add5");
        const std::int64_t n = 300000000;
        const Array x = filled(DType::float64, {n}, 1.0, s);
        return bandwidth_case("ew_inplace_f64", DType::float64, n, 2.0 * 8 * n, [&] { k.launch({x, x}, {s, -1}); }, s,
                              "x = x + 5 in place");
    });
    // Host time per call at 1000 elements. As the peers measure it: many calls, then one sync, all
    // timed (the GPU's own pace can bound it); variants: calls in batches of 100 between syncs,
    // only the calls timed (kjit's host cost alone), and calls that allocate their output.
    enum class HostMode { peers, batches, allocating };
    auto host_case = [=](HostMode mode) {
        return [=](const Stream& s) {
            const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
            const Array x = filled(DType::float32, {1000}, 1.5, s), y = Array::empty({1000}, DType::float32, Device::cuda(0), s);
            const CallOptions o{s, -1};
            for (int k = 0; k < 1000; ++k) axpb.launch({x, 2.0f, 1.0f, y}, o);
            s.synchronize();
            std::vector<double> us;
            const int calls = 10000;
            for (int r = 0; r < 5; ++r) {
                double seconds = 0;
                if (mode == HostMode::batches) {
                    for (int b = 0; b < calls / 100; ++b) {
                        const auto t0 = Clock::now();
                        for (int k = 0; k < 100; ++k) axpb.launch({x, 2.0f, 1.0f, y}, o);
                        seconds += std::chrono::duration<double>(Clock::now() - t0).count();
                        s.synchronize();
                    }
                } else {
                    const auto t0 = Clock::now();
                    if (mode == HostMode::allocating)
                        for (int k = 0; k < calls; ++k) (void)axpb({x, 2.0f, 1.0f}, o);
                    else
                        for (int k = 0; k < calls; ++k) axpb.launch({x, 2.0f, 1.0f, y}, o);
                    s.synchronize();
                    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
                }
                us.push_back(seconds * 1e6 / calls);
            }
            std::sort(us.begin(), us.end());
            Record r;
            r.name = "ew_host_1k";
            r.dtype = "float32";
            r.n = 1000;
            r.us_per_call = us[us.size() / 2];
            std::ostringstream note;
            note << "median of 5 x 10000 calls (min " << us.front() << ", max " << us.back() << " us); ";
            switch (mode) {
                case HostMode::peers: note << "axpb.launch(x, 2, 1, y), then one sync, all timed (as the peers)"; break;
                case HostMode::batches:
                    r.variant = "launch(), batches of 100 between syncs, calls only";
                    note << r.variant;
                    break;
                case HostMode::allocating:
                    r.variant = "axpb(x, 2, 1), output allocated per call, then one sync";
                    note << r.variant;
                    break;
            }
            r.note = note.str();
            return r;
        };
    };
    c.emplace_back("ew_host_1k", host_case(HostMode::peers));
    c.emplace_back("ew_host_1k_batches", host_case(HostMode::batches));
    c.emplace_back("ew_host_1k_alloc", host_case(HostMode::allocating));
    c.emplace_back("ew_first_new", [=](const Stream& s) {
        // Kernels no cache has seen (their operations name this process), in a process whose NVRTC
        // has started already. The first call is timed whole; the same steps are then timed one by
        // one on another new kernel: the program of the variant the call launches (front end +
        // NVRTC + cache write), its module load, and the call (binding, launch, sync). 1000
        // elements take the small variant; a variant record times a first call on 2^20 elements,
        // which takes the vectorised contiguous variant.
        const Array x = filled(DType::float32, {1000}, 1.5, s);
        const Array large = filled(DType::float32, {std::int64_t{1} << 20}, 1.5, s);
        auto fresh = [](int k) {
            return ElementwiseKernel("T x", "T y",
                                     "y = x * " + std::to_string(getpid()) + ".0f + " + std::to_string(k) + "." +
                                         std::to_string(std::time(nullptr) % 100000) + "f",
                                     "fresh");
        };
        std::vector<double> whole, nvrtc, compile, load, call, whole_large, nvrtc_large;
        auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
        for (int k = 0; k < 5; ++k) {
            const ElementwiseKernel a = fresh(3 * k);
            double before = cache_stats().compile_ms;
            auto t = Clock::now();
            (void)a({x}, {s, -1});
            s.synchronize();
            whole.push_back(ms_since(t));
            nvrtc.push_back(cache_stats().compile_ms - before);
            const ElementwiseKernel b = fresh(3 * k + 1);
            const TypeBinding types{{"T", DType::float32}};
            t = Clock::now();
            (void)jit::compile_elementwise_entry(b, types, {}, "", jit::ElementwiseEntry::small32);
            compile.push_back(ms_since(t));
            t = Clock::now();
            (void)jit::elementwise_variants(b, types, {}, 0).function(jit::ElementwiseEntry::small32);
            load.push_back(ms_since(t));
            t = Clock::now();
            (void)b({x}, {s, -1});
            s.synchronize();
            call.push_back(ms_since(t));
            const ElementwiseKernel c = fresh(3 * k + 2);
            before = cache_stats().compile_ms;
            t = Clock::now();
            (void)c({large}, {s, -1});
            s.synchronize();
            whole_large.push_back(ms_since(t));
            nvrtc_large.push_back(cache_stats().compile_ms - before);
        }
        Record r;
        r.name = "ew_first_new";
        r.dtype = "float32";
        r.n = 1000;
        r.ms = median(whole);
        std::ostringstream note;
        note << "median of 5 new kernels (parse, generate, NVRTC of the small variant, cache write, load, launch, sync), NVRTC's part "
             << median(nvrtc) << " ms; by step, medians: program " << median(compile) << " ms, load " << median(load)
             << " ms, then the call " << median(call) << " ms";
        r.note = note.str();
        Record big = r;
        big.n = std::int64_t{1} << 20;
        big.ms = median(whole_large);
        big.variant = "2^20 elements (the contiguous variant: vector loads, unrolled)";
        std::ostringstream big_note;
        big_note << "median of 5 new kernels, first call on 2^20 float32; NVRTC's part " << median(nvrtc_large) << " ms";
        big.note = big_note.str();
        extra_records().push_back(big);
        return r;
    });
    c.emplace_back("red_first_new", [=](const Stream& s) {
        // Reductions no cache has seen, summed whole (the `full` strategy): the first call compiles
        // the module of that strategy alone, loads it and launches (NVRTC started already).
        const Array x = filled(DType::float32, {1000}, 1.5, s);
        std::vector<double> whole, nvrtc;
        for (int k = 0; k < 5; ++k) {
            const ReductionKernel r("T x", "T y",
                                    "x * " + std::to_string(getpid()) + ".0f + " + std::to_string(k) + "." +
                                        std::to_string(std::time(nullptr) % 100000) + "f",
                                    "a + b", "y = a", "0", "fresh_sum");
            const double before = cache_stats().compile_ms;
            const auto t = Clock::now();
            (void)r({x}, ReduceOptions{std::nullopt, false, s});
            s.synchronize();
            whole.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
            nvrtc.push_back(cache_stats().compile_ms - before);
        }
        Record rec;
        rec.name = "red_first_new";
        rec.dtype = "float32";
        rec.n = 1000;
        rec.ms = median(whole);
        std::ostringstream note;
        note << "median of 5 new reductions of everything (parse, generate, NVRTC of one strategy, cache write, load, "
                "launch, sync); NVRTC's part: "
             << median(nvrtc) << " ms";
        rec.note = note.str();
        return rec;
    });
    c.emplace_back("ew_first_disk", [=](const Stream&) {
        // Fresh processes (this program, --probe) whose kernel is on disk: the first call's time after
        // CUDA has started, as the probe measures it.
        Record r;
        r.name = "ew_first_disk";
        r.dtype = "float32";
        r.n = 1000;
        std::vector<double> ms;
        for (int k = 0; k < 6; ++k) {
            const std::string cmd = "'" + self + "' bench --probe";
            FILE* p = popen(cmd.c_str(), "r");
            if (!p) throw Error("cannot run " + cmd);
            char line[256] = {};
            const bool got = std::fgets(line, sizeof line, p) != nullptr;
            pclose(p);
            if (got && k > 0) ms.push_back(std::atof(line));  // the first run fills the cache
        }
        if (ms.empty()) throw Error("the probe printed nothing");
        // The same, cut in steps (a kernel of its own, so the first run fills the cache).
        std::vector<std::array<double, 4>> steps;
        for (int k = 0; k < 4; ++k) {
            const std::string cmd = "'" + self + "' bench --probe-phases";
            FILE* p = popen(cmd.c_str(), "r");
            if (!p) throw Error("cannot run " + cmd);
            std::array<double, 4> v{};
            const bool got = std::fscanf(p, "%lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3]) == 4;
            pclose(p);
            if (got && k > 0) steps.push_back(v);
        }
        std::sort(ms.begin(), ms.end());
        r.ms = ms[ms.size() / 2];
        std::ostringstream note;
        note << "median of " << ms.size() << " fresh processes, kernel on disk; min " << ms.front() << " max " << ms.back()
             << " ms; CUDA's own start excluded";
        for (const auto& v : steps)
            note << "; in steps: check " << v[0] << ", compile() from disk " << v[1] << ", load() " << v[2] << ", call " << v[3]
                 << " ms";
        r.note = note.str();
        return r;
    });
    return c;
}

// Reductions (issue 6): the built-ins and a user ReductionKernel, bytes counted as the peers do
// (tools/bench/cases.py: every input element read once plus the outputs written).
std::vector<Record>& extra_records();

void add_reduction_cases(std::vector<std::pair<std::string, Case>>& c) {
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
            segmented_reduce(lo, {x, mins}, g.offsets, s);
            segmented_reduce(hi, {x, maxs}, g.offsets, s);
            segmented_reduce(mean, {x, means}, g.offsets, s);
        };
        // Host wall time per whole call (grouping included), synchronised: median of 31.
        std::vector<double> ms;
        for (int k = 0; k < 36; ++k) {
            const auto t0 = Clock::now();
            all();
            s.synchronize();
            if (k >= 5) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        Record r;
        r.name = "red_groupby_f64";
        r.dtype = "float64";
        r.n = n;
        r.bytes = 8.0 * n + 3.0 * 8 * groups;
        r.ms = ms[ms.size() / 2];
        r.note = "group_sorted_keys(days) then segmented_reduce min, max, mean; wall time with sync, median of 31";
        // The three reductions alone, offsets known (events, as the bandwidth cases).
        const KeyGroups g = group_sorted_keys(days, s);
        Record only = r;
        only.variant = "segmented min, max, mean with the offsets known";
        only.ms = time_ms([&] {
            segmented_reduce(lo, {x, mins}, g.offsets, s);
            segmented_reduce(hi, {x, maxs}, g.offsets, s);
            segmented_reduce(mean, {x, means}, g.offsets, s);
        }, s);
        only.note = only.variant;
        extra_records().push_back(only);
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

// Records a case adds beside its own (raw cuBLAS beside kjit's matmul), printed after it.
std::vector<Record>& extra_records() {
    static std::vector<Record> extra;
    return extra;
}

// Matrix products (issue 7): kjit::matmul and, in the same process on the same arrays, cuBLAS called
// directly (cublasGemmEx with the same types), whose TFLOP/s kjit's are judged against.
void add_matmul_cases(std::vector<std::pair<std::string, Case>>& c, std::vector<Record>& extra) {
    struct Kind {
        const char* id;
        DType dtype;
        bool tf32;
    };
    for (const std::int64_t n : {std::int64_t{8192}, std::int64_t{10000}})
        for (const Kind k : {Kind{"f32", DType::float32, false}, Kind{"tf32", DType::float32, true},
                             Kind{"f64", DType::float64, false}, Kind{"bf16", DType::bfloat16, false},
                             Kind{"f16", DType::float16, false}}) {
            const std::string name = std::string("mm_") + k.id + "_" + std::to_string(n);
            c.emplace_back(name, [=, &extra](const Stream& s) {
                const Array a = filled(k.dtype, {n, n}, 0.5, s), b = filled(k.dtype, {n, n}, 0.25, s);
                const Array out = Array::empty({n, n}, k.dtype, Device::cuda(0), s);
                MatmulOptions o;
                o.stream = s;
                o.allow_tf32 = k.tf32;
                const double flops = 2.0 * static_cast<double>(n) * n * n;
                Record r;
                r.name = name;
                r.dtype = std::string(k.dtype.name());
                r.n = n * n;
                r.bytes = 3.0 * k.dtype.itemsize() * n * n;
                const auto kjit_call = [&] { kjit::matmul(a, b, out, o); };
                // The cuBLAS call kjit's plan makes, for the note (so that a difference from the
                // raw call below can be told from the call itself).
                const detail::GemmPlan plan = detail::plan_gemm({a.dtype(), a.shape(), a.strides()}, {b.dtype(), b.shape(), b.strides()},
                                                                {out.dtype(), out.shape(), out.strides()});
                const auto op = [](bool t) { return t ? "T" : "N"; };
                r.note = std::string("kjit::matmul(a, b, out)") + (k.tf32 ? ", allow_tf32" : "") + "; its GEMM: " +
                         (plan.swapped ? "swapped, " : "") + op(plan.first.transpose) + op(plan.second.transpose) + " m=" +
                         std::to_string(plan.m) + " n=" + std::to_string(plan.n) + " k=" + std::to_string(plan.k) +
                         " ld=" + std::to_string(plan.first.ld) + "," + std::to_string(plan.second.ld) + "," + std::to_string(plan.c.ld) +
                         "; best of two timings alternating with raw cuBLAS";
                // The same product by cuBLAS directly (C = A·B row-major as Cᵀ = Bᵀ·Aᵀ).
                const detail::CublasApi& api = detail::cublas();
                cublasHandle_t h = nullptr;
                detail::driver_on(0);
                KJIT_CUBLAS_CHECK(api.cublasCreate_v2(&h));
                KJIT_CUBLAS_CHECK(api.cublasSetStream_v2(h, s.handle()));
                // The same 32 MiB workspace kjit gives cuBLAS (without one, cuBLAS's default
                // measured 12% slower in bfloat16 and float16 at 8192², 2026-11-30).
                const std::shared_ptr<Buffer> ws = Buffer::allocate_device(std::size_t{32} << 20, s);
                KJIT_CUBLAS_CHECK(api.cublasSetWorkspace_v2(h, ws->data(), std::size_t{32} << 20));
                const cudaDataType t = k.dtype == DType::float64 ? CUDA_R_64F
                                       : k.dtype == DType::float32 ? CUDA_R_32F
                                       : k.dtype == DType::float16 ? CUDA_R_16F : CUDA_R_16BF;
                const cublasComputeType_t ct = k.dtype == DType::float64 ? CUBLAS_COMPUTE_64F
                                               : k.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
                const double one64 = 1, zero64 = 0;
                const float one32 = 1, zero32 = 0;
                const void* one = k.dtype == DType::float64 ? static_cast<const void*>(&one64) : &one32;
                const void* zero = k.dtype == DType::float64 ? static_cast<const void*>(&zero64) : &zero32;
                Record raw = r;
                raw.impl = "cublas";
                const auto raw_call = [&] {
                    // Exactly kjit's call (its plan is in kjit's note). Measured 2026-12-01: at 8192²
                    // in bfloat16 and float16 this handle gets 785 and 742 TFLOP/s where kjit's gets
                    // 890 and 887, alternating, same workspace size; equal at 10000². Not explained.
                    KJIT_CUBLAS_CHECK(api.cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, one, b.data(), t, n, 0,
                                                                      a.data(), t, n, 0, zero, out.data(), t, n, 0, 1, ct,
                                                                      CUBLAS_GEMM_DEFAULT));
                };
                // Alternating, best of two each: neither side always runs on a GPU warmed (or
                // power-limited) by the other.
                const double k1 = time_ms(kjit_call, s, 5, 5), r1 = time_ms(raw_call, s, 5, 5);
                const double k2 = time_ms(kjit_call, s, 5, 5), r2 = time_ms(raw_call, s, 5, 5);
                r.ms = std::min(k1, k2);
                r.tflops = flops / (*r.ms * 1e-3) / 1e12;
                raw.ms = std::min(r1, r2);
                raw.tflops = flops / (*raw.ms * 1e-3) / 1e12;
                raw.note = "cublasGemmStridedBatchedEx_64 NN m=n=k, batch 1, same arrays, types and 32 MiB workspace; best of two, alternating with kjit";
                api.cublasDestroy_v2(h);
                extra.push_back(raw);
                return r;
            });
        }
    c.emplace_back("mm_host_64", [&extra](const Stream& s) {
        const Array a = filled(DType::float32, {64, 64}, 0.5, s), b = filled(DType::float32, {64, 64}, 0.25, s);
        const Array out = Array::empty({64, 64}, DType::float32, Device::cuda(0), s);
        MatmulOptions o;
        o.stream = s;
        // Host time per call: 10000 calls then one sync, median of 5 repeats.
        auto per_call_us = [&](const std::function<void()>& call) {
            for (int k = 0; k < 100; ++k) call();
            s.synchronize();
            std::vector<double> us;
            for (int r = 0; r < 5; ++r) {
                const auto t0 = Clock::now();
                for (int k = 0; k < 10000; ++k) call();
                s.synchronize();
                us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 10000);
            }
            std::sort(us.begin(), us.end());
            return us[2];
        };
        Record r;
        r.name = "mm_host_64";
        r.dtype = "float32";
        r.n = 64 * 64;
        r.us_per_call = per_call_us([&] { kjit::matmul(a, b, out, o); });
        r.note = "kjit::matmul(a, b, out), 10000 calls then one sync, median of 5";
        // The host's share alone: 500 calls queued without waiting (fewer than the launch queue
        // holds), so a GPU slower than the host does not set the pace.
        Record submit = r;
        submit.impl = "kjit_submit";
        {
            std::vector<double> us;
            for (int rep = 0; rep < 5; ++rep) {
                s.synchronize();
                const auto t0 = Clock::now();
                for (int k = 0; k < 500; ++k) kjit::matmul(a, b, out, o);
                us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 500);
                s.synchronize();
            }
            std::sort(us.begin(), us.end());
            submit.us_per_call = us[2];
        }
        // The GPU's pace: when a product takes the GPU longer than the host needs to queue it,
        // the main record measures the GPU, not the host path.
        const double gpu_us = 1e3 * time_ms([&] { kjit::matmul(a, b, out, o); }, s, 1000, 5);
        submit.note = "kjit::matmul(a, b, out), 500 calls queued, timed without waiting for the GPU, median of 5; GPU time per "
                      "product back to back " + std::to_string(gpu_us) + " us (events over 1000)";
        extra.push_back(submit);
        // The floor: cuBLAS alone on the same arrays, its handle bound to the stream once; then
        // with cublasSetStream + cublasSetWorkspace before each call (what a library that does not
        // remember the handle's stream pays).
        const detail::CublasApi& api = detail::cublas();
        cublasHandle_t h = nullptr;
        detail::driver_on(0);
        KJIT_CUBLAS_CHECK(api.cublasCreate_v2(&h));
        const std::shared_ptr<Buffer> ws = Buffer::allocate_device(std::size_t{32} << 20, s);
        KJIT_CUBLAS_CHECK(api.cublasSetStream_v2(h, s.handle()));
        KJIT_CUBLAS_CHECK(api.cublasSetWorkspace_v2(h, ws->data(), std::size_t{32} << 20));
        const float one = 1, zero = 0;
        auto gemm = [&] {
            KJIT_CUBLAS_CHECK(api.cublasGemmStridedBatchedEx_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, b.data(), CUDA_R_32F, 64, 0,
                                                              a.data(), CUDA_R_32F, 64, 0, &zero, out.data(), CUDA_R_32F, 64, 0, 1,
                                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        };
        Record raw = r;
        raw.impl = "cublas";
        raw.us_per_call = per_call_us(gemm);
        raw.note = "cublasGemmStridedBatchedEx_64 alone, handle bound to the stream once";
        extra.push_back(raw);
        Record rebound = r;
        rebound.impl = "cublas_rebind";
        rebound.us_per_call = per_call_us([&] {
            KJIT_CUBLAS_CHECK(api.cublasSetStream_v2(h, s.handle()));
            KJIT_CUBLAS_CHECK(api.cublasSetWorkspace_v2(h, ws->data(), std::size_t{32} << 20));
            gemm();
        });
        rebound.note = "cublasSetStream + cublasSetWorkspace + cublasGemmStridedBatchedEx_64 per call";
        extra.push_back(rebound);
        // The plain 32-bit, unbatched entry point: whether it costs the host less.
        Record sgemm = raw;
        sgemm.impl = "cublas_sgemm";
        sgemm.us_per_call = per_call_us([&] {
            KJIT_CUBLAS_CHECK(api.cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 64, 64, &one, static_cast<const float*>(b.data()), 64,
                                                 static_cast<const float*>(a.data()), 64, &zero, static_cast<float*>(out.data()), 64));
        });
        sgemm.note = "cublasSgemm alone";
        extra.push_back(sgemm);
        api.cublasDestroy_v2(h);
        return r;
    });
}

// --probe: start CUDA, then time the first call of a kernel (on disk after the first probe).
int probe() {
    Device::set_current(0);
    const Stream s = Stream::legacy_default(Device::cuda(0));
    std::vector<float> host(1000, 1.5f);
    const Array x = Array::from_host(host.data(), DType::float32, {1000}, Device::cuda(0), s);
    s.synchronize();
    const auto t0 = Clock::now();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "probe_axpb");
    (void)axpb({x, 2.0f, 1.0f}, {s, -1});
    s.synchronize();
    std::printf("%.4f\n", std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    return 0;
}

// --probe-phases: the same first call cut in steps, each the first of its kind in the process:
// the front end (check), the small variant's program served from disk, its module loaded,
// then the call.
int probe_phases() {
    Device::set_current(0);
    const Stream s = Stream::legacy_default(Device::cuda(0));
    std::vector<float> host(1000, 1.5f);
    const Array x = Array::from_host(host.data(), DType::float32, {1000}, Device::cuda(0), s);
    s.synchronize();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "probe_phases");
    const TypeBinding types{{"T", DType::float32}};
    auto ms_since = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
    // As a call binds (x, 2, 1, y): a and b passed by value, no input stored in another dtype.
    const kjit::jit::ModuleVariant scalars{{false, true, true, false}, std::vector<std::optional<DType>>(4)};
    auto t = Clock::now();
    axpb.check(types);
    const double check = ms_since(t);
    // What the call below needs, as it gets it: the small variant's program (from disk), then
    // loaded on the device.
    t = Clock::now();
    (void)jit::compile_elementwise_entry(axpb, types, scalars, "", jit::ElementwiseEntry::small32);
    const double compile = ms_since(t);
    t = Clock::now();
    (void)jit::elementwise_variants(axpb, types, scalars, 0).function(jit::ElementwiseEntry::small32);
    const double load = ms_since(t);
    t = Clock::now();
    (void)axpb({x, 2.0f, 1.0f}, {s, -1});
    s.synchronize();
    const double call = ms_since(t);
    std::printf("%.4f %.4f %.4f %.4f\n", check, compile, load, call);
    return 0;
}

nlohmann::json to_json(const Record& r, const std::string& device) {
    nlohmann::json j;
    j["impl"] = r.name == "copy" ? "ceiling" : r.impl;
    j["tflops"] = r.tflops ? nlohmann::json(*r.tflops) : nlohmann::json();
    if (!r.variant.empty()) {
        j["variant"] = r.variant;
        j["primary"] = false;
    }
    j["case"] = r.name;
    j["gbps"] = r.gbps ? nlohmann::json(*r.gbps) : nlohmann::json();
    j["us_per_call"] = r.us_per_call ? nlohmann::json(*r.us_per_call) : nlohmann::json();
    j["ms"] = r.ms ? nlohmann::json(*r.ms) : nlohmann::json();
    j["bytes"] = static_cast<std::int64_t>(r.bytes);
    j["n"] = r.n;
    j["dtype"] = r.dtype;
    j["note"] = r.note;
    if (!r.error.empty()) j["error"] = r.error;
    j["date"] = today();
    j["device"] = device;
    return j;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_status) {
    auto* cmd = app.add_subcommand("bench", "Time kjit on the benchmark cases (GPU needed): JSON lines");
    static std::string json_path, only;
    static bool list = false, run_probe = false, run_probe_phases = false, crossover = false;
    static std::string crossover_csv = "crossover.csv";
    static int crossover_max_exponent = 9;
    cmd->add_option("--json", json_path, "Also append the records to this file");
    cmd->add_option("--cases", only, "Comma-separated case names (default: all)");
    cmd->add_flag("--list", list, "List the cases");
    cmd->add_flag("--crossover", crossover,
                  "Instead: y = a*x + b over 10^3 ... 10^9 floats on the CPU (1 thread, all cores) and the GPU (kernel; with copies), as CSV");
    cmd->add_option("--csv", crossover_csv, "With --crossover: the CSV file (default crossover.csv)");
    cmd->add_option("--max-exp", crossover_max_exponent, "With --crossover: the largest size is 10^N (3-9, default 9)")
        ->check(CLI::Range(3, 9));
    cmd->add_flag("--probe", run_probe, "Internal: one fresh-process first call, prints milliseconds")->group("");
    cmd->add_flag("--probe-phases", run_probe_phases, "Internal: the same in steps")->group("");
    cmd->callback([&exit_status] {
        if (run_probe || run_probe_phases) {
            exit_status = run_probe ? probe() : probe_phases();
            return;
        }
        if (crossover) {
            exit_status = run_crossover(crossover_csv, crossover_max_exponent);
            return;
        }
        const std::string self = std::filesystem::canonical("/proc/self/exe").string();
        auto all = cases(self);
        add_reduction_cases(all);
        add_matmul_cases(all, extra_records());
        if (list) {
            for (const auto& [name, fn] : all) std::printf("%s\n", name.c_str());
            return;
        }
        if (Device::count() == 0) throw NoDeviceError("kjit bench needs a GPU: " + no_device_reason());
        Device::set_current(0);
        const std::string device = Device::cuda(0).properties().name;
        const Stream s = Stream::create(Device::cuda(0));
        std::ofstream file;
        if (!json_path.empty()) file.open(json_path, std::ios::app);
        for (const auto& [name, fn] : all) {
            if (!only.empty() && ("," + only + ",").find("," + name + ",") == std::string::npos) continue;
            Record r;
            try {
                r = fn(s);
            } catch (const std::exception& e) {
                r.name = name;
                r.error = e.what();
                exit_status = 1;
            }
            std::vector<Record> records{r};
            records.insert(records.end(), extra_records().begin(), extra_records().end());
            extra_records().clear();
            for (const Record& rec : records) {
                const std::string line = to_json(rec, device).dump();
                std::printf("%s\n", line.c_str());
                std::fflush(stdout);
                if (file) file << line << "\n" << std::flush;
            }
        }
    });
}

}  // namespace kjit::cli
