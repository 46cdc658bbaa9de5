// `kjit bench`: the fused array expressions of issue 34: bandwidth of a fused elementwise
// expression, a fused reduction and a where on float16 (each one launch), the host time of a warm
// evaluation, and the first evaluation of a new expression (compile included).
#include <algorithm>
#include <ctime>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "tools/cli/bench_support.hpp"

namespace kjit::cli::bench {

void add_expr_cases(Cases& c) {
    const std::int64_t n28 = std::int64_t{1} << 28;
    c.emplace_back("expr_fused_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 1.5, s), cc = filled(DType::float32, {n28}, 0.5, s);
        const Array z = Array::empty({n28}, DType::float32, Device::cuda(0), s);
        const CallOptions o{s};
        return bandwidth_case("expr_fused_f32", DType::float32, n28, 3.0 * 4 * n28,
                              [&] { eval(z, sqrt(2.0f * x + 1.0f) * cc, o); }, s, "eval(z, sqrt(a*x + b) * c): x, c read, z written, one kernel");
    });
    c.emplace_back("expr_var_f32", [=](const Stream& s) {
        const Array x = filled(DType::float32, {n28}, 1.5, s), out = Array::empty({}, DType::float32, Device::cuda(0), s);
        ReduceOptions o;
        o.stream = s;
        return bandwidth_case("expr_var_f32", DType::float32, n28, 4.0 * n28,
                              [&] { (void)sum((x - 0.25f) * (x - 0.25f), o, out); }, s, "sum((x - m) * (x - m)) into a given output, one kernel");
    });
    c.emplace_back("expr_where_f16", [=](const Stream& s) {
        const Array x = filled(DType::float16, {n28}, -1.5, s), y = Array::empty({n28}, DType::float16, Device::cuda(0), s);
        const CallOptions o{s};
        return bandwidth_case("expr_where_f16", DType::float16, n28, 2.0 * 2 * n28,
                              [&] { eval(y, where(x > 0, x, 0.1 * x), o); }, s, "eval(y, where(x > 0, x, 0.1 * x)), float16 kept");
    });
    // Host time of a warm evaluation of a 3-operator expression on 1000 elements, as ew_host_1k:
    // 1000 warm-up evaluations, then 10000 and one sync, all timed; median of 5.
    c.emplace_back("expr_host_1k", [=](const Stream& s) {
        const Array x = filled(DType::float32, {1000}, 1.5, s), cc = filled(DType::float32, {1000}, 0.5, s);
        const Array z = Array::empty({1000}, DType::float32, Device::cuda(0), s);
        const CallOptions o{s};
        const auto evaluate = [&] { eval(z, (2.0f * x + 1.0f) * cc, o); };
        (void)timed_calls(evaluate, 1000, s);
        std::vector<double> us;
        for (int r = 0; r < 5; ++r) us.push_back(timed_calls(evaluate, 10000, s) * 1e6 / 10000);
        std::sort(us.begin(), us.end());
        Record r;
        r.name = "expr_host_1k";
        r.dtype = "float32";
        r.n = 1000;
        r.us_per_call = us[us.size() / 2];
        std::ostringstream note;
        note << "median of 5 x 10000 evaluations of eval(z, (a*x + b) * c) then one sync (min " << us.front() << ", max " << us.back()
             << " us)";
        r.note = note.str();
        return r;
    });
    // The first evaluation of an expression of a structure new to the process and to the cache:
    // three operators drawn from eight, on x and c, seeded by the process id and the time.
    c.emplace_back("expr_first_new", [=](const Stream& s) {
        const Array x = filled(DType::float32, {1000}, 1.5, s), cc = filled(DType::float32, {1000}, 0.5, s);
        const Array z = Array::empty({1000}, DType::float32, Device::cuda(0), s);
        std::mt19937 pick(static_cast<unsigned>(getpid()) * 7919u + static_cast<unsigned>(std::time(nullptr)));
        const auto step = [&](const Expr& e, unsigned op, const Array& v) -> Expr {
            switch (op % 8) {
                case 0: return e + v;
                case 1: return e - v;
                case 2: return e * v;
                case 3: return e / v;
                case 4: return minimum(e, v);
                case 5: return maximum(e, v);
                case 6: return hypot(e, v);
                default: return atan2(e, v);
            }
        };
        std::set<unsigned> seen;
        std::vector<double> whole, nvrtc;
        while (whole.size() < 5) {
            const unsigned code = pick() % 4096;  // 8^3 operators x 2^3 operands
            if (!seen.insert(code).second) continue;
            Expr e = x;
            for (int k = 0; k < 3; ++k) e = step(e, code >> (3 * k), (code >> (9 + k)) & 1 ? cc : x);
            const double before = cache_stats().compile_ms;
            const auto t = Clock::now();
            eval(z, e, CallOptions{s});
            s.synchronize();
            whole.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
            nvrtc.push_back(cache_stats().compile_ms - before);
        }
        Record r;
        r.name = "expr_first_new";
        r.dtype = "float32";
        r.n = 1000;
        r.ms = median(whole);
        std::ostringstream note;
        note << "median of 5 new 3-operator expressions (flatten, write the kernel, parse, NVRTC of the small variant, cache write, load, "
                "launch, sync); NVRTC's part "
             << median(nvrtc) << " ms";
        r.note = note.str();
        return r;
    });
}

}  // namespace kjit::cli::bench
