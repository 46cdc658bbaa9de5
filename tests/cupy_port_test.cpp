// CuPy kernels ported unchanged (issue 29): each rule of CuPy's kernel language that kjit accepts,
// run on the host back end ([host]) and on the GPU ([gpu]) on fresh random data against a
// reference computed here in double precision, outputs poisoned first. Rules that need no launch
// (what the checker accepts or refuses) are plain CPU tests.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cupy_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;
using C = std::complex<double>;

namespace {

// Runs `body` once per back end: the host back end as a [host] test, the GPU as a [gpu] test.
#define KJIT_ON_BOTH_BACK_ENDS(title, body_function) KJIT_ON_BOTH_BACK_ENDS_TAGGED("[cupy]", title, body_function)

// --- a reduction accumulates in its first output's type (CuPy's rule) ---

void reduce_in_output_type(Device d) {
    INFO("seed " << seed());
    // int8 values summed into an int64 output: in int8 they would wrap.
    const std::vector<double> x = draw(1000, 90, 127, true);
    const ReductionKernel sum_into("T x", "int64 y", "x", "a + b", "y = a", "0", "port_sum_into");
    const Array y = sum_into({on(d, cast_all<std::int8_t>(x), DType::int8)});
    double want = 0;
    for (double v : x) want += v;
    CHECK(y.dtype() == DType::int64);
    CHECK(mismatches(y, [&](std::size_t) { return C(want); }, 0) == 0);

    // A count of true values into an int32 output (in bool it would saturate at 1).
    const std::vector<double> flags = draw(3000, 0, 1, true);
    const ReductionKernel count("T x", "int32 c", "x ? 1 : 0", "a + b", "c = a", "0", "port_count");
    const Array c = count({on(d, cast_all<std::uint8_t>(flags), DType::bool_, {3, 1000})}, {.axis = std::vector<int>{1}});
    REQUIRE(c.shape() == Shape{3});
    CHECK(mismatches(c, [&](std::size_t r) {
              double s = 0;
              for (std::size_t j = 0; j < 1000; ++j) s += flags[r * 1000 + j];
              return C(s);
          }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("a reduction without a reduce type accumulates in its first output's type", reduce_in_output_type)

// --- a NaN or an infinity for an integer parameter ---

void nan_for_integer_parameter(Device d) {
    const ElementwiseKernel add("T x, T a", "T y", "y = x + a", "port_add_scalar");
    const Array x = on(d, cast_all<std::int32_t>(draw(64, -100, 100, true)), DType::int32);
    for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
        INFO(bad);
        CHECK_THROWS_AS(add({x, bad}), TypeError);
        CHECK_THAT(error_of([&] { add({x, bad}); }), Contains("input 'a'") && Contains("int32"));
    }
    const ElementwiseKernel shift("T x, int64 k", "T y", "y = x + k", "port_add_int64");
    CHECK_THAT(error_of([&] { shift({x, std::numeric_limits<float>::infinity()}); }), Contains("input 'k'") && Contains("int64"));
    // The runtime is still usable, and a finite float converts as C converts it.
    const std::vector<double> xs = draw(64, -100, 100, true);
    const Array y = add({on(d, cast_all<std::int32_t>(xs), DType::int32), 2.75});
    CHECK(mismatches(y, [&](std::size_t k) { return C(xs[k] + 2); }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("a NaN or an infinity for an integer parameter is a TypeError naming it", nan_for_integer_parameter)

}  // namespace

namespace {

// --- CUDA's math constants, the kernel's own macros ---

void cuda_constants(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(1000, -4, 4, false);
    const ElementwiseKernel k("T x", "T y, float64 w", "y = x * CUDART_PI_F + CUDART_SQRT_HALF_F; w = x * CUDART_PI - CUDART_LN2",
                              "port_constants");
    const Array y = poisoned_on(d, DType::float32, {1000}), w = poisoned_on(d, DType::float64, {1000});
    const std::vector<float> xf = cast_all<float>(x);
    k.launch({on(d, xf, DType::float32), y, w});
    CHECK(mismatches(y, [&](std::size_t j) { return C(double(xf[j]) * 3.14159265358979 + 0.70710678118); }, 1e-6, 1e-6) == 0);
    CHECK(mismatches(w, [&](std::size_t j) { return C(double(xf[j]) * M_PI - M_LN2); }, 1e-15, 1e-15) == 0);

    // -CUDART_INF_F, the usual identity of a max: what a row of no elements gives.
    const ReductionKernel max_kernel("T x", "T y", "x", "max(a, b)", "y = a", "-CUDART_INF_F", "port_max");
    const Array empty_rows = on(d, std::vector<float>{}, DType::float32, {3, 0});
    const Array m = max_kernel({empty_rows}, {.axis = std::vector<int>{1}});
    CHECK(mismatches(m, [](std::size_t) { return C(-std::numeric_limits<double>::infinity()); }, 0) == 0);
    const Array full = max_kernel({on(d, xf, DType::float32, {10, 100})}, {.axis = std::vector<int>{1}});
    CHECK(mismatches(full, [&](std::size_t r) { return C(*std::max_element(xf.begin() + long(r) * 100, xf.begin() + long(r + 1) * 100)); }, 0) == 0);
    // CUDART_NAN_F and CUDART_INF are what they say.
    const ElementwiseKernel special("T x", "T y, T z", "y = isnan(CUDART_NAN_F) ? x : 0; z = x < CUDART_INF ? x : 0", "port_special");
    const Outputs s = special({on(d, xf, DType::float32)});
    CHECK(mismatches(s[0], [&](std::size_t j) { return C(xf[j]); }, 0) == 0);
    CHECK(mismatches(s[1], [&](std::size_t j) { return C(xf[j]); }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("CUDA's math constants mean what math_constants.h says, in ops and identities", cuda_constants)

void option_macros(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(500, -100, 100, true);
    KernelOptions options;
    options.nvrtc_options = {"-DFACTOR=3", "-D", "OFFSET=-2.5f", "--define-macro=FLAG"};
    const ElementwiseKernel k("T x", "T y, float32 z", "y = x * FACTOR + FLAG; z = x + OFFSET", "port_option_macros", options);
    const Outputs out = k({on(d, cast_all<std::int64_t>(x), DType::int64)});
    CHECK(out[0].dtype() == DType::int64);
    CHECK(mismatches(out[0], [&](std::size_t j) { return C(x[j] * 3 + 1); }, 0) == 0);
    CHECK(mismatches(out[1], [&](std::size_t j) { return C(x[j] - 2.5); }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("NVRTC's -D options define constants the operation may use", option_macros)

// --- the comma operator, CuPy's post-map with comma-separated assignments ---

void comma_operator(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(40 * 64, -2, 2, false);
    const ReductionKernel sums("T x", "T s, T q", "x", "a + b", "s = a, q = a * a", "0", "port_comma_post");
    const Outputs out = sums({on(d, x, DType::float64, {40, 64})}, {.axis = std::vector<int>{1}});
    auto row_sum = [&](std::size_t r) {
        double t = 0;
        for (std::size_t j = 0; j < 64; ++j) t += x[r * 64 + j];
        return t;
    };
    CHECK(mismatches(out[0], [&](std::size_t r) { return C(row_sum(r)); }, 1e-13, 1e-13) == 0);
    CHECK(mismatches(out[1], [&](std::size_t r) { return C(row_sum(r) * row_sum(r)); }, 1e-12, 1e-12) == 0);
    // In a for header, and as a value: (t = x * 2, t + 1).
    const ElementwiseKernel loop("T x", "T y", "T p = 1; int k; for (k = 0, p = 1; k < 3; ++k, p *= x) {} T t; y = (t = x * 2, t + p)",
                                 "port_comma_loop");
    const Array y = loop({on(d, x, DType::float64)});
    CHECK(mismatches(y, [&](std::size_t j) { return C(x[j] * 2 + x[j] * x[j] * x[j]); }, 1e-14, 1e-14) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("the comma operator and CuPy's comma-separated post-map assignments", comma_operator)

// --- CuPy's parameter modifiers ---

void non_const_raw_input(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(300, -50, 50, true);
    // The kernel writes its raw input in place (CuPy's `_non_const`) and reads its other input.
    const ElementwiseKernel k("raw raw _non_const T table, T x", "T y", "table[i] = x * 2; y = x + 1", "port_non_const");
    const Array table = poisoned_on(d, DType::int32, {300});
    const Array y = k({table, on(d, cast_all<std::int32_t>(x), DType::int32)});
    CHECK(mismatches(table, [&](std::size_t j) { return C(x[j] * 2); }, 0) == 0);
    CHECK(mismatches(y, [&](std::size_t j) { return C(x[j] + 1); }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("a raw _non_const input may be written, as in CuPy", non_const_raw_input)

// --- raw parameters: CuPy's CArray metadata, any strides, index arrays; local arrays ---

void raw_metadata_and_strides(Device d) {
    INFO("seed " << seed());
    // A (2, 3, 4) view whose strides are not C-contiguous: a (4, 3, 2) array with its axes reversed.
    const std::vector<double> values = draw(24, -1000, 1000, true);
    const Array base = on(d, cast_all<std::int32_t>(values), DType::int32, {4, 3, 2});
    const Array x = base.transpose();
    auto element = [&](std::int64_t a, std::int64_t b, std::int64_t c) { return values[static_cast<std::size_t>(c * 6 + b * 2 + a)]; };
    // CuPy's example: an index array, one index per dimension (the kernel, unchanged).
    const ElementwiseKernel by_index("raw T x", "T y", "ptrdiff_t idx[] = {i / 12, i / 4 % 3, i % 4}; y = x[idx];", "port_index_array");
    const Array y = poisoned_on(d, DType::int32, {24});
    by_index.launch({x, y});
    CHECK(mismatches(y, [&](std::size_t j) { return C(element(long(j) / 12, long(j) / 4 % 3, long(j) % 4)); }, 0) == 0);
    // x[k] counts in C order over the view's shape, whatever its strides.
    const ElementwiseKernel flat("raw T x", "T y", "y = x[i]", "port_raw_flat");
    const Array z = poisoned_on(d, DType::int32, {24});
    flat.launch({x, z});
    CHECK(mismatches(z, [&](std::size_t j) { return C(element(long(j) / 12, long(j) / 4 % 3, long(j) % 4)); }, 0) == 0);
    // size(), ndim, shape()[d] and strides()[d] (in bytes, as CuPy's).
    const ElementwiseKernel meta("raw T x", "int64 s, int64 k, int64 e, int64 b",
                                 "s = x.size(); k = x.ndim; e = x.shape()[i % 3]; b = x.strides()[i % 3]", "port_raw_meta");
    const Outputs m = meta({x}, {.size = 3});
    CHECK(mismatches(m[0], [](std::size_t) { return C(24); }, 0) == 0);
    CHECK(mismatches(m[1], [](std::size_t) { return C(3); }, 0) == 0);
    CHECK(mismatches(m[2], [](std::size_t j) { return C(std::vector<double>{2, 3, 4}[j]); }, 0) == 0);
    CHECK(mismatches(m[3], [](std::size_t j) { return C(std::vector<double>{4, 8, 24}[j]); }, 0) == 0);
    // Read through one strided view, written through another: every element lands in place.
    const Array out_base = poisoned_on(d, DType::int32, {4, 3, 2});
    flat.launch({x, out_base.transpose()});
    CHECK(mismatches(out_base, [&](std::size_t j) { return C(values[j]); }, 0) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("raw parameters: CuPy's size(), shape(), strides(), ndim, any strides and index arrays", raw_metadata_and_strides)

void local_arrays(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(1000, -3, 3, false);
    KernelOptions options;
    options.nvrtc_options = {"-DTERMS=4"};
    const ElementwiseKernel powers("T x", "T y",
                                   "T p[TERMS]; p[0] = 1; for (int k = 1; k < TERMS; ++k) p[k] = p[k - 1] * x; "
                                   "const T w[] = {1, -2, 0.5}; y = 0; for (int k = 0; k < 3; ++k) y += w[k] * p[k + 1];",
                                   "port_local_arrays", options);
    const Array y = powers({on(d, x, DType::float64)});
    CHECK(mismatches(y, [&](std::size_t j) { return C(x[j] - 2 * x[j] * x[j] + 0.5 * x[j] * x[j] * x[j]); }, 1e-14, 1e-14) == 0);
}
KJIT_ON_BOTH_BACK_ENDS("fixed-size local arrays, their length a literal or a constant", local_arrays)

// --- CuPy's loop_prep and after_loop ---

void loop_hooks(Device d) {
    INFO("seed " << seed());
    KernelOptions options;
    // Once per thread: a value read from a raw input, a count the operation keeps; after the loop
    // a raw output written by every thread that saw an element (all write the same value).
    options.loop_prep = "T scale = table[0] * 2; long long seen = 0; T last[2] = {0, 0};";
    options.after_loop = "if (seen > 0) flag[0] = scale + last[1] * 0;";
    const ElementwiseKernel k("T x, raw T table", "T y, raw T flag", "y = x * scale + seen * 0; seen += 1; last[1] = y",
                              "port_loop_hooks", options);
    const std::vector<double> t = draw(4, 1, 3, false);
    const Array table = on(d, t, DType::float64);
    for (const Shape& shape : {Shape{1000}, Shape{300000}, Shape{300, 70}}) {
        INFO("shape " << shape.size() << "-d, " << shape_size(shape) << " elements");
        const std::vector<double> x = draw(static_cast<std::size_t>(shape_size(shape)), -4, 4, false);
        Array input = on(d, x, DType::float64, shape);
        const bool transposed = shape.size() == 2;
        if (transposed) input = on(d, x, DType::float64, {shape[1], shape[0]}).transpose();  // a strided input
        const Array y = poisoned_on(d, DType::float64, input.shape()), flag = poisoned_on(d, DType::float64, {1});
        k.launch({input, table, y, flag});
        CHECK(mismatches(y, [&](std::size_t j) {
                  const std::size_t at = transposed ? (j % static_cast<std::size_t>(shape[1])) * static_cast<std::size_t>(shape[0]) +
                                                          j / static_cast<std::size_t>(shape[1])
                                                    : j;
                  return C(x[at] * t[0] * 2);
              }, 1e-15, 1e-15) == 0);
        CHECK(mismatches(flag, [&](std::size_t) { return C(t[0] * 2); }, 1e-15) == 0);
    }
}
KJIT_ON_BOTH_BACK_ENDS("CuPy's loop_prep and after_loop run around each thread's elements", loop_hooks)

}  // namespace

TEST_CASE("CuPy's names and forms the checker accepts, and what it refuses with a position", "[cupy]") {
    auto check = [](const std::string& in, const std::string& out, const std::string& op, KernelOptions options = {}) {
        return error_of([&] { ElementwiseKernel(in, out, op, "k", std::move(options)).check({{"T", DType::float32}}); });
    };
    CHECK(check("T x", "T y", "y = x * CUDART_PI_F + CUDART_TWO_TO_23 + CUDART_REMQUO_BITS_F") == "no error");
    CHECK_THAT(check("T x", "T y", "y = x * CUDART_PIF"), Contains("op:1:9") && Contains("did you mean 'CUDART_PI_F'"));
    CHECK_THAT(check("T x", "T y", "CUDART_PI = x; y = x"), Contains("op:1:1") && Contains("cannot assign to 'CUDART_PI'"));
    KernelOptions preamble;
    preamble.preamble = "#define SCALE 2.5f\n#  define COUNT 0x10u // sixteen\n#define TWICE(v) ((v) * 2)\n#define CALL f(1)\n";
    CHECK(check("T x", "T y", "y = x * SCALE + COUNT", preamble) == "no error");
    CHECK_THAT(check("T x", "T y", "y = x * CALL", preamble),
               Contains("op:1:9") && Contains("the preamble as 'f(1)'") && Contains("not a number literal"));
    CHECK_THAT(check("T x", "T y", "y = TWICE", preamble), Contains("unknown name 'TWICE'"));
    CHECK_THAT(check("T x, T SCALE", "T y", "y = x", preamble), Contains("in:1:8") && Contains("'SCALE' is a macro"));
    CHECK_THAT(check("T x", "T y", "float COUNT = 1; y = x", preamble), Contains("op:1:7") && Contains("'COUNT' is a macro"));
    KernelOptions option;
    option.nvrtc_options = {"-DLIMIT=sqrt(2)"};
    CHECK_THAT(check("T x", "T y", "y = LIMIT", option), Contains("NVRTC option '-DLIMIT=sqrt(2)'"));
    // Modifiers in any order, repeated as CuPy allows; a non-raw _non_const input stays read-only.
    CHECK(check("raw raw _non_const T x, _non_const raw T z", "T y", "x[i] = z[i]; z[0] = 1; y = 0") == "no error");
    CHECK_THAT(check("_non_const T x", "T y", "x = 1; y = x"), Contains("op:1:1") && Contains("only when it is raw"));
    CHECK_THAT(check("raw T x", "T y", "x[i] = 1; y = 0"), Contains("'_non_const'"));
    CHECK_THAT(check("raw _non_const", "T y", "y = 0"), Contains("expected a type after '_non_const'"));
    // Raw metadata and local arrays.
    CHECK(check("raw T x", "T y", "long long idx[2] = {0, i}; y = x[idx] + x.size() + x.shape()[0] + x.ndim") == "no error");
    CHECK_THAT(check("T x", "T y", "y = x.size()"), Contains("op:1:6") && Contains("'x' is not a raw parameter"));
    CHECK_THAT(check("raw T x", "T y", "y = x.length()"), Contains("op:1:7") && Contains("'.length': member access is only for"));
    CHECK_THAT(check("T x", "T y", "y = x.real()"), Contains("op:1:7") && Contains("real(z)"));
    CHECK_THAT(check("raw T x", "T y", "y = x.ndim()"), Contains("ndim is a value"));
    CHECK_THAT(check("raw T x", "T y", "y = x.shape()"), Contains("x.shape() is an array: index it"));
    CHECK_THAT(check("raw T x", "T y", "x.shape()[0] = 1; y = 0"), Contains("cannot assign to x.shape()"));
    CHECK_THAT(check("T x", "T y", "float a[2]; y = a"), Contains("op:1:17") && Contains("'a' is an array of 2"));
    CHECK_THAT(check("raw T x", "T y", "float idx[2]; y = x[idx]"), Contains("an index array must hold integers"));
    CHECK_THAT(check("T x", "T y", "const float a[2]; y = x"), Contains("const array 'a' needs a brace list"));
    CHECK_THAT(check("T x", "T y", "float a[L]; y = x"), Contains("op:1:9") && Contains("integer literal or an integer constant"));
    KernelOptions length;
    length.nvrtc_options = {"-DL=2000"};
    CHECK_THAT(check("T x", "T y", "float a[L]; y = x", length), Contains("1 to 1024 elements, not 2000"));
    // loop_prep and after_loop see raw parameters, n and their own variables.
    auto hooks = [](const std::string& prep, const std::string& after) {
        KernelOptions o;
        o.loop_prep = prep;
        o.after_loop = after;
        return o;
    };
    CHECK(check("T x, raw _non_const T t", "T y", "y = x * s; c += 1", hooks("T s = t[0] + n; int c = 0;", "if (c > 2) t[0] = s;")) ==
          "no error");
    CHECK_THAT(check("T x", "T y", "y = x", hooks("T s = x;", "")), Contains("loop_prep:1:7") && Contains("'x' is one element"));
    CHECK_THAT(check("T x", "T y", "y = x", hooks("", "T s = i;")), Contains("after_loop:1:7") && Contains("'i' is the element index"));
    CHECK_THAT(check("T x", "T y", "y = x + q", hooks("{ T q = 1; }", "")), Contains("op:1:9") && Contains("unknown name 'q'"));
    CHECK_THAT(check("T x", "T y", "y = x", hooks("T s = 1", "s = ")), Contains("parse after_loop:1:"));
}
