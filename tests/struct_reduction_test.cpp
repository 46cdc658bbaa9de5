// Struct running values (issue 36): a reduction whose partial results are a struct, declared in
// KernelOptions::reduce_type or taken from the preamble. The generated CUDA, the errors, and the
// results of every strategy (whole array, rows, columns, segments) on both back ends against
// references computed here in double precision.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>

#include "cupy_support.hpp"
#include "jit/kernels/reduction/calls.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;

namespace {

// Welford's running (count, mean, sum of squared deviations), merged as Chan et al. do: one pass
// gives the variance without the cancellation of sum(x^2) - sum(x)^2.
KernelOptions welford_options() {
    KernelOptions o;
    o.reduce_type = "struct welford { float64 n; float64 mean; float64 m2; }";
    return o;
}
constexpr const char* kWelfordMerge =
    "{a.n + b.n,"
    " a.n + b.n == 0 ? 0.0 : a.mean + (b.mean - a.mean) * (b.n / (a.n + b.n)),"
    " a.n + b.n == 0 ? 0.0 : a.m2 + b.m2 + (b.mean - a.mean) * (b.mean - a.mean) * (a.n * b.n / (a.n + b.n))}";

ReductionKernel variance_kernel() {
    return ReductionKernel("T x", "float64 var, float64 mean", "{1, x, 0}", kWelfordMerge, "var = a.m2 / a.n, mean = a.mean",
                           "{0, 0, 0}", "welford_var", welford_options());
}

// The largest value with its first index, both outputs, from one pass; no identity.
ReductionKernel argmax_with_value_kernel() {
    KernelOptions o;
    o.reduce_type = "struct { T v; int64 at; }";
    return ReductionKernel("T x", "T best, int64 where", "{x, i}", "b.v > a.v || (b.v == a.v && b.at < a.at) ? b : a",
                           "best = a.v; where = a.at", "", "argmax_value", o);
}

// Population variance and mean of values[begin, end) (two passes in double; sequential sums,
// which the compiler keeps in order).
std::pair<double, double> var_mean(const std::vector<float>& values, std::int64_t begin, std::int64_t end) {
    if (begin == end) return {std::nan(""), std::nan("")};
    const auto count = static_cast<double>(end - begin);
    double mean = 0;
    for (std::int64_t k = begin; k < end; ++k) mean += static_cast<double>(values[static_cast<std::size_t>(k)]);
    mean /= count;
    double ss = 0;
    for (std::int64_t k = begin; k < end; ++k) {
        const double d = static_cast<double>(values[static_cast<std::size_t>(k)]) - mean;
        ss += d * d;
    }
    return {ss / count, mean};
}

std::vector<double> doubles_of(const Array& a) {
    const std::vector<unsigned char> bytes = a.is_host() ? host_bytes_c_order(a) : to_host(a);
    std::vector<double> v(bytes.size() / 8);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

bool close(double got, double want, double rtol) {
    if (std::isnan(want)) return std::isnan(got);
    return std::fabs(got - want) <= rtol * std::fabs(want) + 1e-300;
}

void variance_on(Device device) {
    const ReductionKernel k = variance_kernel();
    // float32 readings around 1000 with a spread of about 1: a one-pass sum of squares in float64
    // would lose about 6 of its 16 digits to cancellation; Welford keeps them.
    const std::int64_t rows = 37, cols = 2051;
    const std::vector<double> drawn = draw(static_cast<std::size_t>(rows * cols), -1, 1, false);
    std::vector<float> x(drawn.size());
    for (std::size_t e = 0; e < drawn.size(); ++e) x[e] = static_cast<float>(1000 + drawn[e]);
    const Array xs = on(device, x, DType::float32, {rows, cols});

    SECTION("the whole array, then each row and each column") {
        const auto [v_all, m_all] = var_mean(x, 0, rows * cols);
        const Outputs all = k({xs});
        CHECK(close(doubles_of(all[0])[0], v_all, 1e-9));
        CHECK(close(doubles_of(all[1])[0], m_all, 1e-12));

        const Array var_rows = poisoned_on(device, DType::float64, {rows}), mean_rows = poisoned_on(device, DType::float64, {rows});
        k.launch({xs, var_rows, mean_rows}, {.axis = std::vector<int>{1}});
        const std::vector<double> got_v = doubles_of(var_rows), got_m = doubles_of(mean_rows);
        for (std::int64_t r = 0; r < rows; ++r) {
            const auto [v, m] = var_mean(x, r * cols, (r + 1) * cols);
            const auto at = static_cast<std::size_t>(r);
            INFO("row " << r << ": " << std::setprecision(17) << got_v[at] << " want " << v << ", mean " << got_m[at] << " want " << m);
            CHECK(close(got_v[at], v, 1e-9));
            CHECK(close(got_m[at], m, 1e-12));
        }
        const Outputs by_col = k({xs}, {.axis = std::vector<int>{0}});
        const std::vector<double> col_v = doubles_of(by_col[0]);
        for (std::int64_t c = 0; c < cols; c += 97) {
            std::vector<float> column;
            for (std::int64_t r = 0; r < rows; ++r) column.push_back(x[static_cast<std::size_t>(r * cols + c)]);
            INFO("column " << c);
            CHECK(close(col_v[static_cast<std::size_t>(c)], var_mean(column, 0, rows).first, 1e-9));
        }
    }
    SECTION("segments, empty ones among them") {
        const Array flat = xs.reshape({rows * cols});
        const std::vector<std::int64_t> cuts{0, 0, 1, 1, 700, 5000, rows * cols};
        const Outputs seg = segmented_reduce(k, {flat}, on(device, cuts, DType::int64));
        const std::vector<double> got = doubles_of(seg[0]);
        REQUIRE(got.size() == cuts.size() - 1);
        for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
            INFO("segment " << s << ": " << std::setprecision(17) << got[s]);
            CHECK(close(got[s], var_mean(x, cuts[s], cuts[s + 1]).first, 1e-9));
        }
    }
}

void argmax_with_value_on(Device device) {
    const ReductionKernel k = argmax_with_value_kernel();
    const std::int64_t rows = 5, cols = 40000;
    // Few distinct values, so that ties decide: the first index wins.
    const std::vector<double> drawn = draw(static_cast<std::size_t>(rows * cols), 0, 50, true);
    const std::vector<float> x = cast_all<float>(drawn);
    const Array xs = on(device, x, DType::float32, {rows, cols});
    const Array best = poisoned_on(device, DType::float32, {rows}), where = poisoned_on(device, DType::int64, {rows});
    k.launch({xs, best, where}, {.axis = std::vector<int>{1}});
    const std::vector<unsigned char> b = device.is_cpu() ? host_bytes_c_order(best) : to_host(best);
    const std::vector<unsigned char> w = device.is_cpu() ? host_bytes_c_order(where) : to_host(where);
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto first = x.begin() + r * cols;
        const auto top = std::max_element(first, first + cols);  // the first of the largest
        float got_best;
        std::int64_t got_at;
        std::memcpy(&got_best, b.data() + 4 * r, 4);
        std::memcpy(&got_at, w.data() + 8 * r, 8);
        INFO("row " << r);
        CHECK(got_best == *top);
        CHECK(got_at == top - first);
    }
    // The whole array: one value from many blocks.
    const Outputs all = k({xs});
    const auto top = std::max_element(x.begin(), x.end());
    std::int64_t at;
    const std::vector<unsigned char> a = device.is_cpu() ? host_bytes_c_order(all[1]) : to_host(all[1]);
    std::memcpy(&at, a.data(), 8);
    CHECK(at == top - x.begin());
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[reduction][struct]", "a Welford variance in one pass: every strategy and segments",
                              variance_on)
KJIT_ON_BOTH_BACK_ENDS_TAGGED("[reduction][struct]", "argmax with its value from a struct of a placeholder and int64",
                              argmax_with_value_on)

TEST_CASE("struct running values: the generated CUDA declares the struct and asserts its layout", "[reduction][struct]") {
    const ReductionKernel k = variance_kernel();
    k.check();
    CHECK(k.placeholders() == std::vector<std::string>{"T"});
    const std::string src = k.source({{"T", DType::float32}});
    CHECK_THAT(src, Contains("struct welford {\n    double n;\n    double mean;\n    double m2;\n};"));
    CHECK_THAT(src, Contains("static_assert(sizeof(welford) == 24"));
    CHECK_THAT(src, Contains("_kjit_r.mean = "));
    // A placeholder field takes the binding's type; an unnamed struct is named after the kernel.
    const std::string half = argmax_with_value_kernel().source({{"T", DType::float16}});
    CHECK_THAT(half, Contains("struct argmax_value_value {\n    __half v;\n    long long at;\n};"));
    CHECK_THAT(half, Contains("static_assert(sizeof(argmax_value_value) == 16"));
}

TEST_CASE("struct running values compile with NVRTC for every strategy", "[reduction][struct][nvrtc]") {
    const jit::kernels::ReductionBinary compiled = jit::kernels::compile_reduction(variance_kernel(), {{"T", DType::float32}}, {}, "sm_90");
    const Binary& var = compiled.binary;
    CHECK_FALSE(var.cubin.empty());
    CHECK(var.entry_points.size() == 19);
    // What the launcher sizes scratch memory by: the struct's bytes (the module asserts them).
    CHECK(compiled.reduce_type == "struct welford");
    CHECK(compiled.reduce_itemsize == 24);
    CHECK(compiled.has_identity);
    for (const DType t : {DType::float16, DType::int8, DType::complex64, DType::float64}) {
        INFO(t.name());
        if (t.is_complex()) {
            // Complex values have no order: the type checker says so for b.v > a.v.
            CHECK_THROWS_WITH(argmax_with_value_kernel().compile({{"T", t}}, "sm_90"), Contains("complex"));
            continue;
        }
        CHECK_FALSE(argmax_with_value_kernel().compile({{"T", t}}, "sm_90").cubin.empty());
    }
}

TEST_CASE("struct running values from the preamble, as CuPy allows", "[reduction][struct][nvrtc]") {
    KernelOptions o;
    o.preamble = "struct span_t { float lo; float hi; };\n__device__ float width(span_t s) { return s.hi - s.lo; }\n";
    o.reduce_type = "span_t";
    const ReductionKernel k("float32 x", "float32 y", "{x, x}", "{min(a.lo, b.lo), max(a.hi, b.hi)}", "y = a.hi - a.lo", "", "span", o);
    const std::string src = k.source({});
    CHECK(src.find("struct span_t {") == src.find("struct span_t"));  // only the preamble's definition
    CHECK_THAT(src, Contains("static_assert(sizeof(span_t) == 8"));
    CHECK_FALSE(k.compile({}, "sm_90").cubin.empty());
    // A preamble struct with another layout than its fields' fails at compile time, saying why.
    KernelOptions padded = o;
    padded.preamble = "struct __align__(16) span_t { float lo; float hi; };\n";
    const ReductionKernel bad("float32 x", "float32 y", "{x, x}", "{min(a.lo, b.lo), max(a.hi, b.hi)}", "y = a.hi - a.lo", "",
                              "span_padded", padded);
    CHECK_THROWS_WITH(bad.compile({}, "sm_90"), Contains("must have its fields' C layout"));
}

TEST_CASE("struct running values: errors say what and where", "[reduction][struct]") {
    auto error = [](const std::string& reduce_type, const std::string& map, const std::string& reduce, const std::string& post,
                    const std::string& identity = "{0, 0}", const std::string& preamble = "") {
        KernelOptions o;
        o.reduce_type = reduce_type;
        o.preamble = preamble;
        return error_of([&] { ReductionKernel("float32 x", "float32 y", map, reduce, post, identity, "bad", o).check({}); });
    };
    const std::string pair = "struct pair { float64 s; int64 c; }";
    CHECK(error(pair, "{x, 1}", "{a.s + b.s, a.c + b.c}", "y = a.s / a.c") == "no error");
    CHECK_THAT(error(pair, "{x, 1}", "{a.s + b.sum, a.c + b.c}", "y = a.s"),
               Contains("reduce:1:10: error: struct 'pair' has no field 'sum'") && Contains("its fields: s, c"));
    CHECK_THAT(error(pair, "{x}", "{a.s + b.s, a.c + b.c}", "y = a.s"),
               Contains("map:1:1: error: 1 value for the 2 fields of struct 'pair'") && Contains("in order: s, c"));
    CHECK_THAT(error(pair, "{x, 1}", "{a.s + b.s, a.c + b.c}", "y = a"),
               Contains("post:1:5: error: 'a' is a value of struct 'pair': read one of its fields"));
    CHECK_THAT(error(pair, "{x, 1}", "a.s > b.s ? a : b.s", "y = a.s"), Contains("expected a value of struct 'pair'"));
    CHECK_THAT(error(pair, "{x, 1}", "{a.s(), a.c}", "y = a.s"), Contains("'a.s' is a field, not a function"));
    CHECK_THAT(error(pair, "x", "{a.s + b.s, a.c + b.c}", "y = a.s"), Contains("expected a value of struct 'pair'"));
    CHECK_THAT(error(pair, "{x, 1}", "{a.s + b.s, a.c + b.c}", "y = a.s", "{}"), Contains("an empty list"));
    CHECK_THAT(error("struct pair { float64 s; float64 s; }", "{x, 1}", "a", "y = a.s"), Contains("two fields named 's'"));
    CHECK_THAT(error("struct pair { }", "{x, 1}", "a", "y = a.s"), Contains("needs at least one field"));
    CHECK_THAT(error("struct pair { float64 s[4]; }", "{x}", "a", "y = a.s"), Contains("cannot be an array"));
    CHECK_THAT(error("struct pair { quad s; }", "{x}", "a", "y = a.s"), Contains("unknown type 'quad' for field 's'"));
    CHECK_THAT(error("struct pair { float64 s; } extra", "{x}", "a", "y = a.s"), Contains("unexpected text after the struct"));
    CHECK_THAT(error("struct big { complex128 a; complex128 b; complex128 c; complex128 d; complex128 e; }", "{x, x, x, x, x}", "a",
                     "y = real(a.a)", ""),
               Contains("a struct running value of 80 bytes: at most 64"));
    CHECK_THAT(error("span_t", "{x}", "a", "y = a.lo"), Contains("parse reduce_type:1:1 unknown reduce type 'span_t'"));
    CHECK_THAT(error("span_t", "{x}", "a", "y = a.lo", "{0}", "struct span_t { float lo; void f(); };"),
               Contains("parse preamble:1:33") && Contains("fields only, no functions"));
    // A field's placeholder needs a type like any other.
    CHECK_THAT(error_of([] {
                   KernelOptions o;
                   o.reduce_type = "struct { U s; }";
                   ReductionKernel("float32 x", "float32 y", "{x}", "{a.s + b.s}", "y = a.s", "{0}", "bad", o).check({{"T", DType::float32}});
               }),
               Contains("no type given for placeholder 'U' of the reduce type"));
}
