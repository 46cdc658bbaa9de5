// kjit::var, std, any, all, count_nonzero, nansum, nanmin, nanmax and nanmean (issue 36) for every
// dtype on both back ends, against references computed here in double precision: rows with
// zeros, with NaN, and all NaN; ddof; keepdims; the errors NumPy raises.
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "cupy_support.hpp"
#include "jit/kernels/ops/builtin_reductions.hpp"
#include "jit/kernels/precompile.hpp"
#include "jit/kernels/reduction/calls.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

using C = std::complex<double>;

bool nan_of(C v) { return std::isnan(v.real()) || std::isnan(v.imag()); }

// Writes NaN (quiet) into element k of bytes of dtype t (the real part of a complex one).
void put_nan(std::vector<unsigned char>& bytes, DType t, std::size_t k) {
    unsigned char* p = bytes.data() + k * t.itemsize();
    switch (t.id()) {
        case DType::float16: {
            const std::uint16_t v = 0x7e00;
            std::memcpy(p, &v, 2);
            break;
        }
        case DType::bfloat16: {
            const std::uint16_t v = 0x7fc0;
            std::memcpy(p, &v, 2);
            break;
        }
        case DType::float32:
        case DType::complex64: {
            const float v = std::nanf("");
            std::memcpy(p, &v, 4);
            break;
        }
        default: {
            const double v = std::nan("");
            std::memcpy(p, &v, 8);
        }
    }
}

// The reference of `op` over `values` (NumPy's rules).
C reference(const std::string& op, const std::vector<C>& values, double ddof) {
    std::vector<C> kept;
    for (const C& v : values)
        if (!nan_of(v)) kept.push_back(v);
    const bool any_nan = kept.size() != values.size();
    if (op == "var" || op == "std") {
        if (any_nan) return std::nan("");
        C mean = 0;
        for (const C& v : values) mean += v;
        mean /= static_cast<double>(values.size());
        double m2 = 0;
        for (const C& v : values) m2 += std::norm(v - mean);
        const double var = m2 / std::max(static_cast<double>(values.size()) - ddof, 0.0);
        return op == "var" ? var : std::sqrt(var);
    }
    if (op == "any" || op == "all" || op == "count_nonzero") {
        std::size_t nonzero = 0;
        for (const C& v : values) nonzero += v != C(0);  // NaN != 0
        if (op == "any") return nonzero > 0 ? 1 : 0;
        if (op == "all") return nonzero == values.size() ? 1 : 0;
        return static_cast<double>(nonzero);
    }
    if (op == "nansum" || op == "nanmean") {
        C s = 0;
        for (const C& v : kept) s += v;
        return op == "nansum" ? s : (kept.empty() ? C(std::nan(""), 0) : s / static_cast<double>(kept.size()));
    }
    // nanmin, nanmax: NumPy's order for complex numbers (real part, then imaginary part).
    if (kept.empty()) return std::nan("");
    C best = kept[0];
    for (const C& v : kept) {
        const bool less = v.real() < best.real() || (v.real() == best.real() && v.imag() < best.imag());
        const bool more = v.real() > best.real() || (v.real() == best.real() && v.imag() > best.imag());
        if (op == "nanmin" ? less : more) best = v;
    }
    return best;
}

Array call(const std::string& op, const Array& x, const ReduceOptions& o, double ddof) {
    if (op == "var") return var(x, o, ddof);
    if (op == "std") return kjit::std(x, o, ddof);
    if (op == "any") return any(x, o);
    if (op == "all") return all(x, o);
    if (op == "count_nonzero") return count_nonzero(x, o);
    if (op == "nansum") return nansum(x, o);
    if (op == "nanmin") return nanmin(x, o);
    if (op == "nanmax") return nanmax(x, o);
    return nanmean(x, o);
}

DType expected_dtype(const std::string& op, DType t) {
    if (op == "var" || op == "std") return var_dtype(t);
    if (op == "any" || op == "all") return DType::bool_;
    if (op == "count_nonzero") return DType::int64;
    if (op == "nansum") return sum_dtype(t);
    if (op == "nanmean") return mean_dtype(t);
    return t;
}

// Relative tolerance for results of dtype `out` computed from inputs of dtype `in`.
double tolerance(DType in, DType out) {
    if (out == DType::float16 || in == DType::float16) return 4e-3;
    if (out == DType::bfloat16 || in == DType::bfloat16) return 3e-2;
    if (out == DType::float32 || out == DType::complex64 || in == DType::float32 || in == DType::complex64) return 2e-5;
    return 1e-9;
}

bool near(C got, C want, double rtol) {
    if (nan_of(want)) return nan_of(got);
    if (std::isinf(want.real())) return got == want;
    return std::abs(got - want) <= rtol * std::abs(want) + 1e-12;
}

void every_dtype_on(Device device) {
    const std::int64_t rows = 4, cols = 301;
    const std::vector<std::string> ops{"var", "std", "any", "all", "count_nonzero", "nansum", "nanmin", "nanmax", "nanmean"};
    for (const DType t : all_dtypes()) {
        std::vector<unsigned char> bytes = random_elements(t, rows * cols);
        const bool floats = t.is_floating() || t.is_complex();
        // Row 1: zeros; row 2: a few NaN (floats); row 3: all NaN (floats) or all zeros.
        for (std::int64_t c = 0; c < cols; c += 37) std::memset(bytes.data() + (cols + c) * t.itemsize(), 0, t.itemsize());
        for (std::int64_t c = 3; c < cols && floats; c += 50) put_nan(bytes, t, static_cast<std::size_t>(2 * cols + c));
        for (std::int64_t c = 0; c < cols; ++c) {
            if (floats) put_nan(bytes, t, static_cast<std::size_t>(3 * cols + c));
            else std::memset(bytes.data() + (3 * cols + c) * t.itemsize(), 0, t.itemsize());
        }
        const Array x = on(device, bytes, t, {rows, cols});
        for (const std::string& op : ops) {
            for (const double ddof : {0.0, 1.0}) {
                if (ddof != 0 && op != "var" && op != "std") continue;
                INFO(op << " of " << t.name() << " ddof " << ddof);
                const Array y = call(op, x, {.axis = std::vector<int>{1}}, ddof);
                REQUIRE(y.dtype() == expected_dtype(op, t));
                REQUIRE(y.shape() == Shape{rows});
                const std::vector<unsigned char> got = device.is_cpu() ? host_bytes_c_order(y) : to_host(y);
                for (std::int64_t r = 0; r < rows; ++r) {
                    std::vector<C> values;
                    for (std::int64_t c = 0; c < cols; ++c) values.push_back(element_value(bytes, t, static_cast<std::size_t>(r * cols + c)));
                    C want = reference(op, values, ddof);
                    if (op == "nansum" && t.is_integer() && t.itemsize() == 8) {
                        // 64-bit sums wrap around, as NumPy's do.
                        std::uint64_t s = 0;
                        for (std::int64_t c = 0; c < cols; ++c) {
                            std::uint64_t v;
                            std::memcpy(&v, bytes.data() + (r * cols + c) * 8, 8);
                            s += v;
                        }
                        want = t.is_signed() ? static_cast<double>(static_cast<std::int64_t>(s)) : static_cast<double>(s);
                    }
                    const C have = element_value(got, y.dtype(), static_cast<std::size_t>(r));
                    INFO("row " << r << ": got " << have << " want " << want);
                    CHECK(near(have, want, tolerance(t, y.dtype())));
                }
            }
        }
    }
}

void statistics_on(Device device) {
    // var and std of float32 against two passes in double within 1e-6 (issue 36's bar), over an
    // axis, every axis and with keepdims, with ddof 0 and 1.
    const std::int64_t rows = 64, cols = 3001;
    const std::vector<double> drawn = draw(static_cast<std::size_t>(rows * cols), -3, 3, false);
    std::vector<float> x(drawn.size());
    for (std::size_t e = 0; e < x.size(); ++e) x[e] = static_cast<float>(50 + drawn[e]);
    const Array xs = on(device, x, DType::float32, {rows, cols});
    auto two_pass = [&](std::int64_t begin, std::int64_t end, std::int64_t step, double ddof) {
        double mean = 0, count = 0;
        for (std::int64_t e = begin; e < end; e += step, ++count) mean += x[static_cast<std::size_t>(e)];
        mean /= count;
        double m2 = 0;
        for (std::int64_t e = begin; e < end; e += step) m2 += (x[static_cast<std::size_t>(e)] - mean) * (x[static_cast<std::size_t>(e)] - mean);
        return m2 / (count - ddof);
    };
    auto floats = [&](const Array& a) {
        const std::vector<unsigned char> b = device.is_cpu() ? host_bytes_c_order(a) : to_host(a);
        std::vector<float> v(b.size() / 4);
        std::memcpy(v.data(), b.data(), b.size());
        return v;
    };
    for (const double ddof : {0.0, 1.0}) {
        INFO("ddof " << ddof);
        CHECK(near(floats(var(xs, {}, ddof))[0], two_pass(0, rows * cols, 1, ddof), 1e-6));
        const Array out = poisoned_on(device, DType::float32, {1, cols});
        kjit::std(xs, {.axis = std::vector<int>{0}, .keepdims = true}, ddof, out);
        const std::vector<float> s = floats(out);
        for (std::int64_t c = 0; c < cols; c += 7) {
            INFO("column " << c);
            CHECK(near(s[static_cast<std::size_t>(c)], std::sqrt(two_pass(c, rows * cols, cols, ddof)), 1e-6));
        }
        const std::vector<float> v = floats(var(xs, {.axis = std::vector<int>{1}}, ddof));
        for (std::int64_t r = 0; r < rows; ++r) CHECK(near(v[static_cast<std::size_t>(r)], two_pass(r * cols, (r + 1) * cols, 1, ddof), 1e-6));
    }
    // Far from zero (mean 1e4, spread 1: sum(x^2) - sum(x)^2 would lose 8 digits), and constant data,
    // whose std must be 0, not a rounding below it made NaN by the square root.
    {
        std::vector<float> far(100003);
        for (std::size_t e = 0; e < far.size(); ++e) far[e] = static_cast<float>(1e4 + drawn[e] / 3);
        double mean = 0, m2 = 0;
        for (const float v : far) mean += v;
        mean /= static_cast<double>(far.size());
        for (const float v : far) m2 += (v - mean) * (v - mean);
        CHECK(near(floats(var(on(device, far, DType::float32)))[0], m2 / static_cast<double>(far.size()), 1e-6));
        const std::vector<float> same(70001, 1e4f + 0.3f);
        CHECK(floats(kjit::std(on(device, same, DType::float32)))[0] == 0.0f);
    }
    // NumPy's edge cases: no elements (NaN), fewer elements than ddof (infinity), empty nanmin.
    const Array none = on(device, std::vector<float>{}, DType::float32, {0});
    CHECK(std::isnan(floats(var(none))[0]));
    CHECK(std::isinf(floats(var(on(device, std::vector<float>{1, 2}, DType::float32), {}, 3))[0]));
    CHECK(floats(nansum(none))[0] == 0);
    CHECK_THROWS_WITH(nanmin(none), Contains("kjit::nanmin: a reduction over zero elements"));
    CHECK_THROWS_WITH(var(xs, {}, -1), Contains("ddof must be a finite number >= 0"));
}

// The GPU's float32 fold of var (a vector's deviations and squares in float32, jit/kernels/ops/
// numpy_reductions.cpp) where it must step aside: NaN and infinity inside a vector, squares past
// float32's range; and on rows whose vectors are aligned (the rows strategy's fold), far from zero.
void fold_edges_on(Device device) {
    const std::size_t n = 100003;
    const std::vector<double> drawn = draw(n, -3, 3, false);
    auto first_float = [&](const Array& a) {
        const std::vector<unsigned char> b = device.is_cpu() ? host_bytes_c_order(a) : to_host(a);
        float v;
        std::memcpy(&v, b.data(), 4);
        return v;
    };
    auto two_pass = [](const std::vector<float>& x, std::size_t begin, std::size_t end) {
        double mean = 0;
        for (std::size_t e = begin; e < end; ++e) mean += x[e];
        mean /= static_cast<double>(end - begin);
        double m2 = 0;
        for (std::size_t e = begin; e < end; ++e) m2 += (x[e] - mean) * (x[e] - mean);
        return m2 / static_cast<double>(end - begin);
    };
    std::vector<float> x(n);
    for (std::size_t e = 0; e < n; ++e) x[e] = static_cast<float>(drawn[e]);
    for (const std::size_t at : {std::size_t{50001}, std::size_t{7}, n - 2}) {
        INFO("NaN at " << at);
        std::vector<float> with = x;
        with[at] = std::numeric_limits<float>::quiet_NaN();
        CHECK(std::isnan(first_float(var(on(device, with, DType::float32)))));
        with[at] = std::numeric_limits<float>::infinity();
        CHECK(std::isnan(first_float(var(on(device, with, DType::float32)))));
    }
    {
        // Deviations near 1e20: squares near 1e40, past float32 (std itself fits).
        std::vector<float> wide(n);
        for (std::size_t e = 0; e < n; ++e) wide[e] = static_cast<float>(drawn[e] * 1e20);
        CHECK(near(first_float(kjit::std(on(device, wide, DType::float32))), std::sqrt(two_pass(wide, 0, n)), 1e-6));
    }
    {
        const std::int64_t rows = 16, cols = 4096;
        std::vector<float> far(static_cast<std::size_t>(rows * cols));
        for (std::size_t e = 0; e < far.size(); ++e) far[e] = static_cast<float>(1e4 + drawn[e % n] / 3);
        const Array out = poisoned_on(device, DType::float32, {rows});
        var(on(device, far, DType::float32, {rows, cols}), {.axis = std::vector<int>{1}}, 0, out);
        const std::vector<unsigned char> b = device.is_cpu() ? host_bytes_c_order(out) : to_host(out);
        for (std::int64_t r = 0; r < rows; ++r) {
            float v;
            std::memcpy(&v, b.data() + r * 4, 4);
            INFO("row " << r);
            CHECK(near(v, two_pass(far, static_cast<std::size_t>(r * cols), static_cast<std::size_t>((r + 1) * cols)), 1e-6));
        }
    }
    for (const DType t : {DType::float16, DType::bfloat16}) {
        INFO(t.name());
        const std::vector<unsigned char> bytes = random_elements(t, static_cast<std::int64_t>(n));
        std::vector<C> values;
        for (std::size_t e = 0; e < n; ++e) values.push_back(element_value(bytes, t, e));
        const Array y = var(on(device, bytes, t, {static_cast<std::int64_t>(n)}));
        const std::vector<unsigned char> got = device.is_cpu() ? host_bytes_c_order(y) : to_host(y);
        CHECK(near(element_value(got, y.dtype(), 0), reference("var", values, 0), tolerance(t, y.dtype())));
    }
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[reduction][numpy]", "var's float32 fold steps aside for NaN, infinity and squares past float32",
                              fold_edges_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[reduction][numpy]", "var std any all count_nonzero and the nan reductions: every dtype",
                              every_dtype_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[reduction][numpy]", "var and std of float32 within 1e-6 of two passes: axes ddof keepdims",
                              statistics_on)

TEST_CASE("var std any all count_nonzero and the nan reductions compile with NVRTC", "[reduction][numpy][nvrtc]") {
    // The struct-valued ones (var, std, nanmean) for every dtype; the rest for one of each kind.
    std::vector<std::pair<std::string, DType>> work;
    for (const DType t : all_dtypes()) {
        for (const char* op : {"var", "std", "nanmean"}) work.emplace_back(op, t);
        if (t == DType::bool_ || t == DType::int8 || t == DType::uint64 || t == DType::float16 || t == DType::bfloat16 ||
            t == DType::float64 || t == DType::complex64)
            for (const char* op : {"any", "all", "count_nonzero", "nansum", "nanmin", "nanmax"}) work.emplace_back(op, t);
    }
    const std::vector<std::string> errors = run_on_all_cores(work.size(), [&](std::size_t k) -> std::string {
        try {
            const Binary b = jit::kernels::numpy_reduction(work[k].first, work[k].second).compile({}, "sm_90");
            return b.cubin.empty() ? "no cubin" : "";
        } catch (const std::exception& e) {
            return e.what();
        }
    });
    for (std::size_t k = 0; k < work.size(); ++k) {
        INFO(work[k].first << " of " << work[k].second.name());
        CHECK(errors[k] == "");
    }
    CHECK_THROWS_WITH(jit::kernels::numpy_reduction("median", DType::float32), Contains("no NumPy reduction 'median'"));
}

TEST_CASE("var of float32, float16 and bfloat16 folds each vector in float32, and its builtin manifest entry precompiles what calls load",
          "[reduction][numpy][nvrtc]") {
    for (const DType t : {DType::float32, DType::float16, DType::bfloat16}) {
        INFO(t.name());
        const std::string source = jit::kernels::numpy_reduction("var", t).source({});
        CHECK_THAT(source, Contains("static_cast<float>(v_x.v[k]) - shift"));
        CHECK_THAT(source, Contains("fold_vector_elements<Index>(v, ok, args, off, j, n);\n            return;"));
    }
    for (const DType t : {DType::float64, DType::int32, DType::complex64}) {
        INFO(t.name());
        const std::string source = jit::kernels::numpy_reduction("std", t).source({});
        CHECK_THAT(source, !Contains("static_cast<float>(v_x.v[k]) - shift"));
        CHECK_THAT(source, Contains("fold_vector_elements<Index>(v, ok, args, off, j, n);\n    }"));
    }
    // The entry names the kernel (its strings would make a module without the fold); the modules it
    // precompiles are the ones a call of std(ddof=1) on float16 looks up: found, not compiled.
    const nlohmann::json manifest = {
        {"kernels",
         {{{"kind", "builtin"}, {"name", "kjit_std"}, {"types", {{{"T", "float16"}}}}, {"ddof", 1}},
          {{"kind", "builtin"}, {"name", "kjit_var"}, {"types", {{{"T", "float32"}}}}, {"ddof", -1}},
          {{"kind", "builtin"}, {"name", "kjit_var"}, {"types", {{{"U", "float32"}}}}}}}};
    const jit::kernels::PrecompileResult r = jit::kernels::precompile(manifest, {"sm_90"}, 2);
    CHECK(r.jobs == static_cast<std::size_t>(jit::kernels::kReductionPrograms));
    REQUIRE(r.failures.size() == 2);
    CHECK_THAT(r.failures[0], Contains("\"ddof\" must be a finite number >= 0"));
    CHECK_THAT(r.failures[1], Contains("needs the type T of its data"));
    const ReductionKernel& k = jit::kernels::numpy_reduction("std", DType::float16, 1);
    for (int g = 0; g < jit::kernels::kReductionEntryGroups; ++g)
        for (const bool wide : {false, true}) {
            const auto group = static_cast<jit::kernels::ReductionEntryGroup>(g);
            if (!jit::kernels::reduction_group_exists(group, wide)) continue;
            INFO(jit::kernels::reduction_group_label(group, wide));
            CHECK(jit::kernels::compile_reduction_group(k, {}, {}, "sm_90", group, wide).compile_ms == 0);
        }
}
