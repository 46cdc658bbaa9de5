// `kjit bench`: the fused array expressions of issue 34: bandwidth of a fused elementwise
// expression, a fused reduction and a where on float16 (each one launch), the host time of a warm
// evaluation, and the first evaluation of a new expression (compile included).
#include <algorithm>
#include <sstream>

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
        for (int k = 0; k < 1000; ++k) eval(z, (2.0f * x + 1.0f) * cc, o);
        s.synchronize();
        std::vector<double> us;
        const int calls = 10000;
        for (int r = 0; r < 5; ++r) {
            const auto t0 = Clock::now();
            for (int k = 0; k < calls; ++k) eval(z, (2.0f * x + 1.0f) * cc, o);
            s.synchronize();
            us.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e6 / calls);
        }
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
}

}  // namespace kjit::cli::bench
