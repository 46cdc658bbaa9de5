// The reduction cases of the shared table (backend_cases.hpp): the built-ins on every dtype, axes
// (none, all, negative, several, none at all), keepdims, views, empty reductions, NaN, argmin and
// argmax, and kernels from strings (two inputs, a scalar, i and n, no identity, a reduce type).
#include <algorithm>
#include <cmath>

#include "backend_cases.hpp"
#include "kjit/reductions.hpp"
#include "kjit/scalar.hpp"
#include "runtime/detail/reduce_layout.hpp"
#include "test_support.hpp"

namespace kjit::test {
namespace {

using C = std::complex<double>;

double eps_of(DType t) {
    switch (t.real_type().id()) {
        case DType::float16: return 1e-3;
        case DType::bfloat16: return 8e-3;
        case DType::float32: return 2.5e-7;
        case DType::float64: return 3e-16;
        default: return 0;
    }
}

bool is_nan(C v) { return std::isnan(v.real()) || std::isnan(v.imag()); }

// NumPy's ordering for max/min (complex: real part, then imaginary part); NaN wins.
bool better(C b, C a, bool max) {
    if (b.real() != a.real()) return max ? b.real() > a.real() : b.real() < a.real();
    return max ? b.imag() > a.imag() : b.imag() < a.imag();
}

Values extreme(const Values& row, bool max) {
    C best = row.front();
    for (const C& v : row) {
        if (is_nan(best)) break;
        if (is_nan(v) || better(v, best, max)) best = v;
    }
    return {best};
}

Values arg_extreme(const Values& row, bool max) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < row.size(); ++j) {
        if (is_nan(row[best])) break;
        if (is_nan(row[j]) || (max ? row[j].real() > row[best].real() : row[j].real() < row[best].real())) best = j;
    }
    return {C(static_cast<double>(best))};
}

C total(const Values& row) {
    C s = 0;
    for (const C& v : row) s += v;
    return s;
}

ReductionCase builtin(std::string name, std::string op, CaseInput input, std::optional<std::vector<int>> axis = std::nullopt,
                      bool keepdims = false) {
    const DType t = input.dtype;
    ReductionCase c;
    c.name = std::move(name);
    c.builtin = op;
    c.inputs = {input};
    c.axis = std::move(axis);
    c.keepdims = keepdims;
    const DType out = op == "mean" ? mean_dtype(t) : (op == "sum" || op == "prod") ? sum_dtype(t) : t;
    // float16/bfloat16 accumulate in float32 and round once at the end.
    const double acc_eps = t == DType::float16 || t == DType::bfloat16 ? eps_of(DType::float32) : eps_of(out);
    if (op == "sum") c.reference = [out](const std::vector<Values>& r) { return Values{as(out, total(r[0]))}; };
    if (op == "mean")
        c.reference = [out](const std::vector<Values>& r) { return Values{as(out, total(r[0]) / static_cast<double>(r[0].size()))}; };
    if (op == "prod")
        c.reference = [out](const std::vector<Values>& r) {
            C p = 1;
            for (const C& v : r[0]) p *= v;
            return Values{as(out, p)};
        };
    if (op == "min" || op == "max") c.reference = [max = op == "max"](const std::vector<Values>& r) { return extreme(r[0], max); };
    if (op == "argmin" || op == "argmax")
        c.reference = [max = op == "argmax"](const std::vector<Values>& r) { return arg_extreme(r[0], max); };
    c.rtol = eps_of(out) + (op == "prod" ? 200 * acc_eps : 0);
    c.sum_tol = op == "sum" || op == "mean" ? 4 * acc_eps : 0;
    return c;
}

std::vector<ReductionCase> make_cases() {
    std::vector<ReductionCase> cs;
    for (DType t : all_dtypes()) {
        const std::string tn(t.name());
        const double lo = t.is_bool() || (t.is_integer() && !t.is_signed()) ? 0 : -50;
        const double hi = t.is_bool() ? 1 : 50;
        cs.push_back(builtin("sum_all_" + tn, "sum", {t, {37, 129}, lo, hi}));
        cs.push_back(builtin("sum_rows_" + tn, "sum", {t, {37, 129}, lo, hi}, std::vector<int>{-1}));
        cs.push_back(builtin("max_rows_keepdims_" + tn, "max", {t, {37, 129}, lo, hi}, std::vector<int>{1}, true));
        cs.push_back(builtin("min_columns_" + tn, "min", {t, {37, 129}, lo, hi}, std::vector<int>{0}));
        cs.push_back(builtin("mean_columns_" + tn, "mean", {t, {65, 33}, lo, hi}, std::vector<int>{0}));
        if (!t.is_complex()) {
            cs.push_back(builtin("argmax_columns_" + tn, "argmax", {t, {37, 129}, lo, hi}, std::vector<int>{0}));
            cs.push_back(builtin("argmin_all_" + tn, "argmin", {t, {37, 129}, lo, hi}));
        }
        const double plo = t.is_bool() || (t.is_integer() && !t.is_signed()) ? 0 : -2, phi = t.is_bool() ? 1 : 2;
        cs.push_back(builtin("prod_rows_" + tn, "prod", {t, {50, 6}, plo, phi}, std::vector<int>{1}));
    }
    // Layouts: views, several and negative axes, keepdims over everything, no axes at all.
    cs.push_back(builtin("sum_transposed_f32", "sum", {DType::float32, {45, 70}, -4, 4, View::transposed}, std::vector<int>{-1}));
    cs.push_back(builtin("sum_axes_0_2_reversed_f64", "sum", {DType::float64, {6, 7, 50}, -4, 4, View::reversed}, std::vector<int>{0, 2}));
    cs.push_back(builtin("max_axes_2_0_every_other_i16", "max", {DType::int16, {6, 7, 50}, -900, 900, View::every_other},
                         std::vector<int>{2, -3}));
    cs.push_back(builtin("mean_every_other_f32", "mean", {DType::float32, {33, 200}, -4, 4, View::every_other}, std::vector<int>{1}));
    cs.push_back(builtin("sum_keepdims_all_f64", "sum", {DType::float64, {3, 4, 5}}, std::nullopt, true));
    cs.push_back(builtin("sum_no_axes_i32", "sum", {DType::int32, {7, 9}, -100, 100}, std::vector<int>{}));
    cs.push_back(builtin("argmax_last_axis_reversed_f64", "argmax", {DType::float64, {40, 77}, -4, 4, View::reversed}, std::vector<int>{-1}));
    // Several chunks per output (kChunkElements = 32768), rows of every length, one long column.
    cs.push_back(builtin("sum_long_rows_f32", "sum", {DType::float32, {3, 100003}, -1, 1}, std::vector<int>{1}));
    cs.push_back(builtin("sum_long_all_f64", "sum", {DType::float64, {300001}, -1, 1}));
    cs.push_back(builtin("max_long_column_u8", "max", {DType::uint8, {70001, 3}, 0, 255}, std::vector<int>{0}));
    cs.push_back(builtin("argmin_long_f32", "argmin", {DType::float32, {200003}, -100, 100}));
    // Empty reductions: post(identity); mean of nothing is 0 / 0.
    cs.push_back(builtin("sum_empty_axis_f32", "sum", {DType::float32, {0, 5}}, std::vector<int>{0}));
    cs.push_back(builtin("prod_empty_rows_i64", "prod", {DType::int64, {4, 0}}, std::vector<int>{1}));
    cs.push_back(builtin("mean_empty_rows_f64", "mean", {DType::float64, {3, 0}}, std::vector<int>{1}));
    // NaN: min/max/argmin/argmax take the first NaN; sums become NaN.
    for (DType t : {DType::float16, DType::bfloat16, DType::float32, DType::float64}) {
        const std::string tn(t.name());
        cs.push_back(builtin("max_nan_" + tn, "max", {t, {20, 64}, -4, 4, View::plain, false, 97}, std::vector<int>{1}));
        cs.push_back(builtin("min_nan_all_" + tn, "min", {t, {20, 64}, -4, 4, View::plain, false, 301}));
        cs.push_back(builtin("argmax_nan_" + tn, "argmax", {t, {20, 64}, -4, 4, View::plain, false, 97}, std::vector<int>{1}));
        cs.push_back(builtin("argmin_nan_columns_" + tn, "argmin", {t, {64, 20}, -4, 4, View::plain, false, 301}, std::vector<int>{0}));
        cs.push_back(builtin("sum_nan_" + tn, "sum", {t, {20, 64}, -4, 4, View::plain, false, 301}, std::vector<int>{1}));
    }
    cs.push_back(builtin("max_nan_complex64", "max", {DType::complex64, {20, 64}, -4, 4, View::plain, false, 97}, std::vector<int>{1}));

    // Kernels from strings.
    auto kernel = [](std::string name, std::string in, std::string out, std::string map, std::string reduce, std::string post,
                     std::string identity, std::vector<CaseInput> inputs, std::optional<std::vector<int>> axis,
                     std::function<Values(const std::vector<Values>&)> reference, double rtol, double sum_tol) {
        ReductionCase c;
        c.name = std::move(name);
        c.in = std::move(in);
        c.out = std::move(out);
        c.map = std::move(map);
        c.reduce = std::move(reduce);
        c.post = std::move(post);
        c.identity = std::move(identity);
        c.inputs = std::move(inputs);
        c.axis = std::move(axis);
        c.reference = std::move(reference);
        c.rtol = rtol;
        c.sum_tol = sum_tol;
        return c;
    };
    cs.push_back(kernel("l2_rows_f64", "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", {{DType::float64, {17, 1000}}}, std::vector<int>{1},
                        [](const std::vector<Values>& r) {
                            double s = 0;
                            for (const C& v : r[0]) s += v.real() * v.real();
                            return Values{std::sqrt(s)};
                        },
                        1e-14, 0));
    cs.push_back(kernel("dot_columns_f32", "T x, T z", "T y", "x * z", "a + b", "y = a", "0",
                        {{DType::float32, {300, 40}}, {DType::float32, {300, 40}, -4, 4}}, std::vector<int>{0},
                        [](const std::vector<Values>& r) {
                            double s = 0;
                            for (std::size_t j = 0; j < r[0].size(); ++j) s += r[0][j].real() * r[1][j].real();
                            return Values{s};
                        },
                        0, 16 * eps_of(DType::float32)));
    cs.push_back(kernel("scaled_sum_scalar_f64", "T x, T s", "T y", "x * s", "a + b", "y = a", "0",
                        {{DType::float64, {1000, 7}}, {DType::float64, {}, 2.5, 0, View::plain, true}}, std::vector<int>{0},
                        [](const std::vector<Values>& r) { return Values{2.5 * total(r[0])}; }, 0, 8 * eps_of(DType::float64)));
    cs.push_back(kernel("index_and_size_i64", "int64 x", "int64 y, int64 m", "x * i", "a + b", "y = a + n; m = i", "0",
                        {{DType::int64, {9, 500}, -1000, 1000}}, std::vector<int>{1},
                        [](const std::vector<Values>& r) {
                            double s = 0;
                            for (std::size_t j = 0; j < r[0].size(); ++j) s += r[0][j].real() * static_cast<double>(j);
                            return Values{s + static_cast<double>(r[0].size()), C(-1)};  // m: the output's index, checked below
                        },
                        0, 0));
    cs.push_back(kernel("min_no_identity_i32", "T x", "T y", "x", "b < a ? b : a", "y = a", "", {{DType::int32, {11, 40000}, -1e9, 1e9}},
                        std::vector<int>{1}, [](const std::vector<Values>& r) { return extreme(r[0], false); }, 0, 0));
    cs.push_back(kernel("sum_no_identity_columns_f64", "T x", "T y", "x", "a + b", "y = a", "", {{DType::float64, {70000, 3}}},
                        std::vector<int>{0}, [](const std::vector<Values>& r) { return Values{total(r[0])}; }, 0, 8 * eps_of(DType::float64)));
    {
        ReductionCase c = kernel("float32_in_float64_sum", "float32 x", "float64 y", "x", "a + b", "y = a", "0", {{DType::float32, {100000}}},
                                 std::nullopt, [](const std::vector<Values>& r) { return Values{total(r[0])}; }, 0, 4 * eps_of(DType::float64));
        c.reduce_type = "float64";
        cs.push_back(c);
    }
    cs.push_back(kernel("count_positive_bool_to_i64", "T x", "int64 y", "x > 0 ? 1 : 0", "a + b", "y = a", "0",
                        {{DType::float32, {64, 77}}, }, std::vector<int>{0, 1},
                        [](const std::vector<Values>& r) {
                            double s = 0;
                            for (const C& v : r[0]) s += v.real() > 0 ? 1 : 0;
                            return Values{s};
                        },
                        0, 0));
    // Without a reduce type, CuPy reduces in the first output's type (issue 29): map's value is
    // converted to it element by element, then summed in it. Every input dtype into every output
    // dtype (a complex into a real one is refused). Values are small and, for unsigned and bool
    // outputs, not negative, so that no sum wraps and no conversion is undefined.
    for (DType t : all_dtypes()) {
        for (DType o : all_dtypes()) {
            if (t.is_complex() && !o.is_complex()) continue;
            const bool non_negative = o.is_bool() || (o.is_integer() && !o.is_signed()) || t.is_bool() ||
                                      (t.is_integer() && !t.is_signed());
            const double lo = t.is_bool() ? 0 : non_negative ? 0 : -3, hi = t.is_bool() ? 1 : 3;
            const double tol = o.is_floating() || o.is_complex() ? (o.itemsize() == 2 ? 8 : 4) * eps_of(o) : 0;
            cs.push_back(kernel("sum_into_" + std::string(o.name()) + "_from_" + std::string(t.name()), "T x",
                                std::string(o.name()) + " y", "x", "a + b", "y = a", "0", {{t, {6, 40}, lo, hi}}, std::vector<int>{1},
                                [o](const std::vector<Values>& r) {
                                    C s = 0;
                                    for (const C& v : r[0]) s += as(o, v);
                                    return Values{as(o, s)};
                                },
                                eps_of(o), tol));
        }
    }
    // The two CuPy ports that gave wrong numbers: int8 values of 100 summed into an int64 output,
    // and a count of true values into an int32 output.
    cs.push_back(kernel("sum_int8_hundreds_into_int64", "T x", "int64 y", "x", "a + b", "y = a", "0", {{DType::int8, {1000}, 100, 100}},
                        std::nullopt, [](const std::vector<Values>& r) { return Values{C(100.0 * static_cast<double>(r[0].size()))}; }, 0, 0));
    cs.push_back(kernel("count_true_bool_into_int32", "T x", "int32 c", "x ? 1 : 0", "a + b", "c = a", "0", {{DType::bool_, {3, 500}, 0, 1}},
                        std::vector<int>{0, 1},
                        [](const std::vector<Values>& r) {
                            double s = 0;
                            for (const C& v : r[0]) s += v.real() != 0 ? 1 : 0;
                            return Values{s};
                        },
                        0, 0));
    return cs;
}

// Elements of a C-order shape: the coordinates of e.
std::vector<std::int64_t> coordinates(std::int64_t e, const Shape& shape) {
    std::vector<std::int64_t> c(shape.size());
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
        c[static_cast<std::size_t>(d)] = e % shape[static_cast<std::size_t>(d)];
        e /= shape[static_cast<std::size_t>(d)];
    }
    return c;
}

bool close(C got, C want, double tol) {
    if (is_nan(want) || is_nan(got)) return is_nan(want) && is_nan(got);
    return std::abs(got - want) <= tol;
}

// The reference's outputs, output by output (C order of the output's shape), and each one's
// allowed error.
struct Expected {
    std::vector<Values> outputs;
    std::vector<double> tolerance;
};

Expected expected(const ReductionCase& c, const std::vector<KernelArg>& args) {
    const Array* first = nullptr;
    for (const KernelArg& a : args)
        if (a.is_array() && first == nullptr) first = &a.array();
    const Shape shape = first->shape();
    std::vector<int> axes = detail::normalize_axes(c.axis ? *c.axis : std::vector<int>{}, static_cast<int>(shape.size()));
    if (c.axis && c.axis->empty()) axes.clear();
    Shape kept_shape, reduced_shape;
    for (std::size_t d = 0; d < shape.size(); ++d)
        (std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end() ? reduced_shape : kept_shape).push_back(shape[d]);
    std::vector<std::vector<unsigned char>> bytes(args.size());
    for (std::size_t k = 0; k < args.size(); ++k)
        if (args[k].is_array()) bytes[k] = host_bytes_c_order(args[k].array().is_host() ? args[k].array() : args[k].array().to_host());
    Expected out;
    const std::int64_t kept = shape_size(kept_shape), reduced = shape_size(reduced_shape);
    for (std::int64_t o = 0; o < kept; ++o) {
        const std::vector<std::int64_t> kc = coordinates(o, kept_shape);
        std::vector<Values> rows(args.size());
        for (std::int64_t j = 0; j < reduced; ++j) {
            const std::vector<std::int64_t> rc = coordinates(j, reduced_shape);
            std::int64_t index = 0;
            for (std::size_t d = 0, ki = 0, ri = 0; d < shape.size(); ++d) {
                const bool is_reduced = std::find(axes.begin(), axes.end(), static_cast<int>(d)) != axes.end();
                index = index * shape[d] + (is_reduced ? rc[ri++] : kc[ki++]);
            }
            for (std::size_t k = 0; k < args.size(); ++k)
                rows[k].push_back(args[k].is_array() ? element_value(bytes[k], args[k].array().dtype(), static_cast<std::size_t>(index))
                                                     : args[k].scalar().to_complex());
        }
        Values want = c.reference(rows);
        if (c.name == "index_and_size_i64") want[1] = C(static_cast<double>(o));
        double magnitude = 0;
        for (const C& v : rows[0])
            if (!is_nan(v)) magnitude += std::abs(v);
        double tol = c.atol + c.sum_tol * magnitude;
        for (const C& w : want)
            if (!is_nan(w)) tol = std::max(tol, c.atol + c.sum_tol * magnitude + c.rtol * std::abs(w));
        out.outputs.push_back(std::move(want));
        out.tolerance.push_back(tol);
    }
    return out;
}

}  // namespace

const std::vector<ReductionCase>& reduction_cases() {
    static const std::vector<ReductionCase> cases = make_cases();
    return cases;
}

namespace {
BackendCase as_backend_case(const ReductionCase& c) {
    BackendCase b;
    b.name = c.name;
    b.inputs = c.inputs;
    return b;
}
}  // namespace

std::vector<Array> make_case_arrays(const ReductionCase& c) { return make_case_arrays(as_backend_case(c)); }
CaseCall case_arguments(const ReductionCase& c, const std::vector<Array>& arrays) { return case_arguments(as_backend_case(c), arrays); }

Outputs run_reduction_case(const ReductionCase& c, std::span<const KernelArg> args) {
    ReduceOptions options;
    options.axis = c.axis;
    options.keepdims = c.keepdims;
    if (!c.builtin.empty()) {
        const Array& x = args[0].array();
        Array y;
        if (c.builtin == "sum") y = sum(x, options);
        else if (c.builtin == "prod") y = prod(x, options);
        else if (c.builtin == "min") y = min(x, options);
        else if (c.builtin == "max") y = max(x, options);
        else if (c.builtin == "mean") y = mean(x, options);
        else if (c.builtin == "argmin") y = argmin(x, options);
        else if (c.builtin == "argmax") y = argmax(x, options);
        return Outputs({y});
    }
    KernelOptions ko;
    ko.reduce_type = c.reduce_type;
    const ReductionKernel k(c.in, c.out, c.map, c.reduce, c.post, c.identity, "case_" + c.name, ko);
    return k(args, options);
}

std::size_t reduction_mismatches(const ReductionCase& c, const std::vector<KernelArg>& args, const std::vector<Array>& got) {
    const Expected want = expected(c, args);
    std::size_t wrong = 0;
    for (std::size_t o = 0; o < got.size(); ++o) {
        const std::vector<unsigned char> g = host_bytes_c_order(got[o].is_host() ? got[o] : got[o].to_host());
        if (static_cast<std::size_t>(got[o].size()) != want.outputs.size()) {
            UNSCOPED_INFO(c.name << " output " << o << ": " << got[o].size() << " elements, want " << want.outputs.size());
            return ++wrong;
        }
        for (std::size_t e = 0; e < want.outputs.size(); ++e) {
            const C gv = element_value(g, got[o].dtype(), e);
            if (!close(gv, want.outputs[e][o], want.tolerance[e]) && ++wrong <= 5)
                UNSCOPED_INFO(c.name << " output " << o << " element " << e << ": got " << gv << ", want " << want.outputs[e][o]
                                     << " (tolerance " << want.tolerance[e] << ")");
        }
    }
    return wrong;
}

std::size_t reduction_agreement_mismatches(const ReductionCase& c, const std::vector<KernelArg>& args, const Array& got,
                                           const Array& want) {
    const Expected exact = expected(c, args);
    const std::vector<unsigned char> g = host_bytes_c_order(got.is_host() ? got : got.to_host());
    const std::vector<unsigned char> w = host_bytes_c_order(want);
    if (got.size() != want.size()) return 1;
    std::size_t wrong = 0;
    for (std::int64_t e = 0; e < want.size(); ++e) {
        const C gv = element_value(g, got.dtype(), static_cast<std::size_t>(e)), wv = element_value(w, want.dtype(), static_cast<std::size_t>(e));
        // float16/bfloat16 results may round either way of a tie: one more unit of the result's precision.
        const double tol = 2 * exact.tolerance[static_cast<std::size_t>(e)] + eps_of(got.dtype()) * std::abs(wv);
        if (!close(gv, wv, tol) && ++wrong <= 5) UNSCOPED_INFO(c.name << " element " << e << ": GPU " << gv << ", host back end " << wv);
    }
    return wrong;
}

}  // namespace kjit::test
