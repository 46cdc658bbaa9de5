// CuPy's documented kernel examples, ported verbatim (issue 29): the kernel strings of CuPy's user
// guide page "User-Defined Kernels" (docs/source/user_guide/kernel.rst, credited section by section
// below) and of the options its API reference documents (ElementwiseKernel, ReductionKernel,
// RawKernel, RawModule), each with its strings exactly as CuPy writes them. Elementwise and
// reduction examples run on the host back end ([host]) and on the GPU ([gpu]) on fresh random data
// against a reference computed here in double precision, outputs poisoned first when given. Raw
// CUDA runs on the GPU only ([gpu]); that it compiles is checked here with NVRTC ([nvrtc]).
//
// Where kjit does not accept a documented example (a difference docs/LANGUAGE.md lists), the test
// checks what kjit says, with its position.
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "cupy_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;
using C = std::complex<double>;

// GCC 12 warns about designated initializers that leave out members with default initializers
// ({.shared_mem_bytes = n}), which is how LaunchConfig is meant to be written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

#define KJIT_GUIDE_ON_BOTH_BACK_ENDS(title, body_function) \
    KJIT_ON_BOTH_BACK_ENDS_TAGGED("[cupy_guide]", title, body_function)

// The float32 value C's float arithmetic gives for (x - y) * (x - y), computed in double from
// float operands: the difference and the product are each rounded to float.
double squared_diff_f32(float x, float y) {
    const float d = x - y;
    return static_cast<double>(d * d);
}

// ============================================================================================
// User guide, "Basics of elementwise kernels": squared_diff with float32 parameters, called on
// arrays with broadcasting, on an array and a scalar, and with its output given.
// ============================================================================================

void guide_squared_diff(Device d) {
    INFO("seed " << seed());
    // From CuPy's user guide (Basics of elementwise kernels), unchanged.
    const ElementwiseKernel squared_diff(
        "float32 x, float32 y",
        "float32 z",
        "z = (x - y) * (x - y)",
        "squared_diff");

    // The guide's call on arange(10).reshape(2, 5) and arange(5), and its printed result.
    {
        std::vector<float> x(10), y(5);
        for (int k = 0; k < 10; ++k) x[k] = float(k);
        for (int k = 0; k < 5; ++k) y[k] = float(k);
        const Array z = squared_diff({on(d, x, DType::float32, {2, 5}), on(d, y, DType::float32)});
        REQUIRE(z.shape() == Shape{2, 5});
        CHECK(z.dtype() == DType::float32);
        CHECK(mismatches(z, [](std::size_t k) { return C(k < 5 ? 0 : 25); }, 0) == 0);
    }

    // Random (rows, cols) and (cols,) arrays: y broadcast along the rows.
    const std::int64_t rows = 37, cols = 129;
    const std::vector<float> x = cast_all<float>(draw(std::size_t(rows * cols), -100, 100, false));
    const std::vector<float> y = cast_all<float>(draw(std::size_t(cols), -100, 100, false));
    const Array xa = on(d, x, DType::float32, {rows, cols}), ya = on(d, y, DType::float32);
    const Array z = squared_diff({xa, ya});
    REQUIRE(z.shape() == Shape{rows, cols});
    CHECK(mismatches(z, [&](std::size_t k) { return C(squared_diff_f32(x[k], y[k % cols])); }, 1e-6) == 0);

    // squared_diff(x, 5): a Python int for a float32 parameter.
    const Array z5 = squared_diff({xa, 5});
    CHECK(z5.dtype() == DType::float32);
    CHECK(mismatches(z5, [&](std::size_t k) { return C(squared_diff_f32(x[k], 5.0f)); }, 1e-6) == 0);

    // squared_diff(x, y, z): the output given (poisoned first), next to the inputs.
    const Array given = poisoned_on(d, DType::float32, {rows, cols});
    squared_diff.launch({xa, ya, given});
    CHECK(mismatches(given, [&](std::size_t k) { return C(squared_diff_f32(x[k], y[k % cols])); }, 1e-6) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: squared_diff on float32 arrays, broadcast, with a scalar, output given", guide_squared_diff)

// ============================================================================================
// User guide, "Type-generic kernels": the same kernel over a placeholder T, with T used in the
// body, and over three placeholders X, Y, Z (the output then has to be given).
// ============================================================================================

void guide_squared_diff_generic(Device d) {
    INFO("seed " << seed());
    // From CuPy's user guide (Type-generic kernels), unchanged.
    const ElementwiseKernel squared_diff_generic(
        "T x, T y",
        "T z",
        "z = (x - y) * (x - y)",
        "squared_diff_generic");
    // From CuPy's user guide (Type-generic kernels): the placeholder used in the loop body; the
    // operation is the guide's triple-quoted string with its newlines and indentation.
    const ElementwiseKernel squared_diff_generic_body(
        "T x, T y",
        "T z",
        "\n"
        "        T diff = x - y;\n"
        "        z = diff * diff;\n"
        "    ",
        "squared_diff_generic");

    const std::size_t count = 2000;
    for (const ElementwiseKernel* k : {&squared_diff_generic, &squared_diff_generic_body}) {
        INFO(k->operation());
        // float64: exact to rounding.
        const std::vector<double> x = draw(count, -1e3, 1e3, false), y = draw(count, -1e3, 1e3, false);
        const Array z64 = (*k)({on(d, x, DType::float64), on(d, y, DType::float64)});
        CHECK(z64.dtype() == DType::float64);
        CHECK(mismatches(z64, [&](std::size_t j) { return C((x[j] - y[j]) * (x[j] - y[j])); }, 1e-15) == 0);
        // int32: exact (|x - y| <= 2000, so the square fits).
        const std::vector<double> xi = draw(count, -1000, 1000, true), yi = draw(count, -1000, 1000, true);
        const Array z32 = (*k)({on(d, cast_all<std::int32_t>(xi), DType::int32), on(d, cast_all<std::int32_t>(yi), DType::int32)});
        CHECK(z32.dtype() == DType::int32);
        CHECK(mismatches(z32, [&](std::size_t j) { return C((xi[j] - yi[j]) * (xi[j] - yi[j])); }, 0) == 0);
        // float32 with a broadcast scalar of the same placeholder (T from the array).
        const std::vector<float> xf = cast_all<float>(x);
        const Array zf = (*k)({on(d, xf, DType::float32), 2.5f});
        CHECK(zf.dtype() == DType::float32);
        CHECK(mismatches(zf, [&](std::size_t j) { return C(squared_diff_f32(xf[j], 2.5f)); }, 1e-6) == 0);
    }
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: squared_diff_generic over T, in the operation and in the loop body", guide_squared_diff_generic)

void guide_squared_diff_super_generic(Device d) {
    INFO("seed " << seed());
    // From CuPy's user guide (Type-generic kernels), unchanged.
    const ElementwiseKernel squared_diff_super_generic(
        "X x, Y y",
        "Z z",
        "z = (x - y) * (x - y)",
        "squared_diff_super_generic");
    const std::size_t count = 1500;
    const std::vector<double> x = draw(count, -1000, 1000, true), y = draw(count, -10, 10, false);
    const Array xa = on(d, cast_all<std::int32_t>(x), DType::int32), ya = on(d, y, DType::float64);

    // As the guide says, Z cannot be found from the inputs: the call needs the output.
    const std::string unbound = error_of([&] { squared_diff_super_generic({xa, ya}); });
    CHECK_THAT(unbound, Contains("'Z'"));
    INFO("without the output: " << unbound);

    // With z given (float32): int32 - float64 is float64 in C, converted to float32 on the store.
    const Array z = poisoned_on(d, DType::float32, {std::int64_t(count)});
    squared_diff_super_generic.launch({xa, ya, z});
    CHECK(mismatches(z, [&](std::size_t j) { return C(double(float((x[j] - y[j]) * (x[j] - y[j])))); }, 0) == 0);
    // Another binding of the same kernel object: X = float32, Y = int64, Z = float64.
    const std::vector<float> xf = cast_all<float>(y);
    const Array z64 = poisoned_on(d, DType::float64, {std::int64_t(count)});
    squared_diff_super_generic.launch({on(d, xf, DType::float32), on(d, cast_all<std::int64_t>(x), DType::int64), z64});
    // float32 - int64 is float32 in C; the product too; then widened to double.
    CHECK(mismatches(z64, [&](std::size_t j) {
              const float diff = xf[j] - float(std::int64_t(x[j]));
              return C(double(diff * diff));
          }, 1e-6) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: squared_diff_super_generic over X, Y, Z with the output given", guide_squared_diff_super_generic)

// The guide's note: n, i and names starting with '_' are reserved (kjit reserves them too).
TEST_CASE("guide: n, i and names starting with '_' are reserved", "[cupy_guide][host]") {
    auto check = [](const std::string& in, const std::string& out, const std::string& op) {
        return error_of([&] { ElementwiseKernel(in, out, op, "reserved").check({{"T", DType::float32}}); });
    };
    CHECK(check("T i", "T y", "y = i") == "parse in:1:3 'i' is reserved: it is the element index");
    CHECK_THAT(check("T n", "T y", "y = n"), Contains("in:1:3") && Contains("'n' is reserved"));
    CHECK_THAT(check("T _x", "T y", "y = _x"), Contains("in:1:3") && Contains("reserved"));
    CHECK(check("T x", "T y", "float _t = 1; y = x") ==
          "op:1:7: error: names starting with '_' are reserved for kjit\n"
          "float _t = 1; y = x\n"
          "      ^");
}

// ============================================================================================
// User guide, "Raw argument specifiers": add_reverse indexes a raw y with _ind.size(), the
// number of elements after the broadcast (kjit's n, which kjit reads _ind.size() as).
// ============================================================================================

void guide_add_reverse(Device d) {
    INFO("seed " << seed());
    // From CuPy's user guide (Raw argument specifiers), unchanged.
    const ElementwiseKernel add_reverse(
        "T x, raw T y", "T z",
        "z = x + y[_ind.size() - i - 1]",
        "add_reverse");
    const std::vector<float> x = cast_all<float>(draw(1000, -50, 50, false)), y = cast_all<float>(draw(1000, -50, 50, false));
    const Array xa = on(d, x, DType::float32), ya = on(d, y, DType::float32);
    const Array reversed = add_reverse({xa, ya});
    CHECK(mismatches(reversed, [&](std::size_t k) { return C(double(x[k] + y[999 - k])); }, 0) == 0);

    // The same kernel with kjit's n for _ind.size() runs, and y may be any strided view, as the
    // guide says of raw arguments: here every other element of a 2000-element array, reversed.
    const ElementwiseKernel add_reverse_n("T x, raw T y", "T z", "z = x + y[n - i - 1]", "add_reverse_n");
    const Array z = add_reverse_n({xa, ya});
    CHECK(mismatches(z, [&](std::size_t k) { return C(double(x[k] + y[999 - k])); }, 0) == 0);
    const std::vector<float> wide = cast_all<float>(draw(2000, -50, 50, false));
    const Array strided = on(d, wide, DType::float32).slice(0, Slice{std::nullopt, std::nullopt, -2});  // wide[1999], wide[1997], ...
    const Array zs = poisoned_on(d, DType::float32, {1000});
    add_reverse_n.launch({xa, strided, zs});
    // strided[m] = wide[1999 - 2m]; z[k] = x[k] + strided[999 - k] = x[k] + wide[2k + 1].
    CHECK(mismatches(zs, [&](std::size_t k) { return C(double(x[k] + wide[2 * k + 1])); }, 0) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: add_reverse with _ind.size(), and with n", guide_add_reverse)

// CuPy's generated code reads each non-raw argument as _raw_x[_ind.get()] (the CIndexer's
// current N-d index), and kernels written for CuPy use the same on raw arrays of the call's shape:
// x[_ind.get()] is the element at this element's position. kjit has no _ind; x[i] on a raw x of
// the call's shape is that element (i counts in C order over the shape, whatever the strides).
void cindexer_get(Device d) {
    INFO("seed " << seed());
    const ElementwiseKernel by_indexer("T x, raw T t", "T y", "y = x + t[_ind.get()]", "by_indexer");
    CHECK_THAT(error_of([&] { by_indexer.check({{"T", DType::float64}}); }),
               Catch::StartsWith("op:1:11: error: CuPy's _ind.get() has no kjit equivalent\ny = x + t[_ind.get()]\n          ^\n") &&
                   Catch::Contains("hint: kjit has i"));
    const std::vector<double> x = draw(6 * 7, -5, 5, false), t = draw(6 * 7, -5, 5, false);
    // t transposed: a (6, 7) view of a (7, 6) array.
    const Array xa = on(d, x, DType::float64, {6, 7}), ta = on(d, t, DType::float64, {7, 6}).transpose();
    const ElementwiseKernel by_i("T x, raw T t", "T y", "y = x + t[i]", "by_i");
    const Array y = by_i({xa, ta});
    CHECK(mismatches(y, [&](std::size_t k) { return C(x[k] + t[(k % 7) * 6 + k / 7]); }, 0) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("api: _ind.get() (refused, a documented difference) and x[i] on a raw array of the call's shape", cindexer_get)

void guide_all_raw_with_size(Device d) {
    INFO("seed " << seed());
    // The guide: with every argument raw, the call gives the size. The kernel is CuPy's own test
    // of it (tests/cupy_tests/core_tests/test_userkernel.py, test_manual_indexing), unchanged.
    const ElementwiseKernel uesr_kernel_1(
        "T x, T y",
        "T z",
        "\n"
        "                z = x + y;\n"
        "            ",
        "uesr_kernel_1");
    const ElementwiseKernel uesr_kernel_2(
        "raw T x, raw T y",
        "raw T z",
        "\n"
        "                z[i] = x[i] + y[i];\n"
        "            ",
        "uesr_kernel_2");
    const std::int64_t n = 100;
    const std::vector<float> in1 = cast_all<float>(draw(std::size_t(n), -1, 1, false)), in2 = cast_all<float>(draw(std::size_t(n), -1, 1, false));
    const Array a = on(d, in1, DType::float32), b = on(d, in2, DType::float32);
    const Array out1 = uesr_kernel_1({a, b});
    const Array out2 = uesr_kernel_2({a, b}, {.size = n});
    REQUIRE(out2.shape() == Shape{n});
    CHECK(mismatches(out1, [&](std::size_t k) { return C(double(in1[k] + in2[k])); }, 0) == 0);
    CHECK(mismatches(out2, [&](std::size_t k) { return C(double(in1[k] + in2[k])); }, 0) == 0);
    // Without the size there is nothing to take it from.
    CHECK_THAT(error_of([&] { uesr_kernel_2({a, b}); }), Contains("size"));
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: every argument raw, the size given (CuPy's test_manual_indexing)", guide_all_raw_with_size)

// ============================================================================================
// User guide, "Reduction kernels": the L2 norm along an axis.
// ============================================================================================

void guide_l2norm(Device d) {
    INFO("seed " << seed());
    // From CuPy's user guide (Reduction kernels), unchanged.
    const ReductionKernel l2norm_kernel(
        "T x",  // input params
        "T y",  // output params
        "x * x",  // map
        "a + b",  // reduce
        "y = sqrt(a)",  // post-reduction map
        "0",  // identity value
        "l2norm"  // kernel name
    );
    // The guide's call: arange(10).reshape(2, 5) in float32 along axis 1 gives 5.477226, 15.9687195.
    {
        std::vector<float> x(10);
        for (int k = 0; k < 10; ++k) x[k] = float(k);
        const Array y = l2norm_kernel({on(d, x, DType::float32, {2, 5})}, {.axis = std::vector<int>{1}});
        REQUIRE(y.shape() == Shape{2});
        CHECK(y.dtype() == DType::float32);
        CHECK(mismatches(y, [](std::size_t k) { return C(k == 0 ? 5.477226 : 15.9687195); }, 1e-7) == 0);
    }
    // Random rows, float32 and float64, along axis 1, axis 0 and every axis.
    const std::int64_t rows = 24, cols = 1000;
    const std::vector<double> x = draw(std::size_t(rows * cols), -3, 3, false);
    auto norm = [&](std::int64_t first, std::int64_t count, std::int64_t step) {
        double s = 0;
        for (std::int64_t k = 0; k < count; ++k) s += x[std::size_t(first + k * step)] * x[std::size_t(first + k * step)];
        return std::sqrt(s);
    };
    for (DType t : {DType::float32, DType::float64}) {
        INFO(t.name());
        const Array xa = t == DType::float32 ? on(d, cast_all<float>(x), t, {rows, cols}) : on(d, x, t, {rows, cols});
        // float32 accumulates 1000 squares in float: a relative error of about 1e-6 at most.
        const double rtol = t == DType::float32 ? 2e-5 : 1e-13;
        const Array by_row = l2norm_kernel({xa}, {.axis = std::vector<int>{1}});
        REQUIRE(by_row.shape() == Shape{rows});
        CHECK(by_row.dtype() == t);
        CHECK(mismatches(by_row, [&](std::size_t r) { return C(norm(std::int64_t(r) * cols, cols, 1)); }, rtol) == 0);
        const Array by_column = l2norm_kernel({xa}, {.axis = std::vector<int>{0}});
        REQUIRE(by_column.shape() == Shape{cols});
        CHECK(mismatches(by_column, [&](std::size_t c) { return C(norm(std::int64_t(c), rows, cols)); }, rtol) == 0);
        const Array all = l2norm_kernel({xa});
        CHECK(all.shape() == Shape{});
        CHECK(mismatches(all, [&](std::size_t) { return C(norm(0, rows * cols, 1)); }, rtol) == 0);
        // The output given, poisoned first.
        const Array given = poisoned_on(d, t, {rows});
        l2norm_kernel.launch({xa, given}, {.axis = std::vector<int>{1}});
        CHECK(mismatches(given, [&](std::size_t r) { return C(norm(std::int64_t(r) * cols, cols, 1)); }, rtol) == 0);
    }
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("guide: the l2norm ReductionKernel along an axis, along every axis, output given", guide_l2norm)

// ============================================================================================
// API reference, ElementwiseKernel: loop_prep and after_loop (code before and after each
// thread's loop) and no_return. CuPy's pages show no example of them; these kernels are the
// smallest uses of what the reference says, written for this test.
// ============================================================================================

void loop_prep_scale(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(3000, -100, 100, false);
    const Array xa = on(d, x, DType::float64);
    KernelOptions options;
    options.loop_prep = "const T scale = 3;";
    const ElementwiseKernel k("T x", "T y", "y = x * scale", "loop_prep_scale", options);
    const Array y = k({xa});
    CHECK(mismatches(y, [&](std::size_t j) { return C(x[j] * 3); }, 0) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("api: ElementwiseKernel loop_prep declares a constant", loop_prep_scale)

// loop_prep computing from _ind.size() once per thread (a common use in CuPy-based code).
void loop_prep_mean_weight(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(1024, -10, 10, false);
    const Array xa = on(d, x, DType::float64);
    KernelOptions options;
    options.loop_prep = "const double inv = 1.0 / _ind.size();";
    const ElementwiseKernel k("T x", "T y", "y = x * inv", "loop_prep_inv", options);
    const Array y = k({xa});
    CHECK(mismatches(y, [&](std::size_t j) { return C(x[j] / 1024); }, 1e-15) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("api: ElementwiseKernel loop_prep reading _ind.size()", loop_prep_mean_weight)

// after_loop runs once per thread after its elements: a per-thread count kept by loop_prep and
// the operation; every thread that saw an element writes the same flag to a raw output.
void after_loop_count(Device d) {
    INFO("seed " << seed());
    const std::vector<float> x = cast_all<float>(draw(5000, -10, 10, false));
    const Array xa = on(d, x, DType::float32);
    KernelOptions options;
    options.loop_prep = "int count = 0;";
    options.after_loop = "if (count > 0) seen[0] = 1;";
    const ElementwiseKernel k("T x", "T y, raw int32 seen", "y = x + 1; ++count;", "after_loop_seen", options);
    const Array y = poisoned_on(d, DType::float32, {5000});
    const Array seen = on(d, std::vector<std::int32_t>{0}, DType::int32);
    k.launch({xa, y, seen});
    CHECK(mismatches(y, [&](std::size_t j) { return C(double(x[j] + 1.0f)); }, 0) == 0);
    CHECK(mismatches(seen, [](std::size_t) { return C(1); }, 0) == 0);
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("api: ElementwiseKernel after_loop writes once per thread", after_loop_count)

// no_return=True: __call__ returns None, the outputs being given. kjit's launch() is that call (it
// returns nothing and needs every output); it has no option for it.
void api_no_return(Device d) {
    INFO("seed " << seed());
    const ElementwiseKernel squared_diff("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff");
    const std::vector<float> x = cast_all<float>(draw(777, -9, 9, false)), y = cast_all<float>(draw(777, -9, 9, false));
    const Array z = poisoned_on(d, DType::float32, {777});
    squared_diff.launch({on(d, x, DType::float32), on(d, y, DType::float32), z});
    CHECK(mismatches(z, [&](std::size_t k) { return C(squared_diff_f32(x[k], y[k])); }, 1e-6) == 0);
    // launch() without the output is an error.
    CHECK(error_of([&] { squared_diff.launch({on(d, x, DType::float32), on(d, y, DType::float32)}); }) ==
          "kernel 'squared_diff': launch() needs every output; call the kernel to have them allocated");
}
KJIT_GUIDE_ON_BOTH_BACK_ENDS("api: no_return is launch() with the outputs given", api_no_return)

// CuPy's type specifiers are NumPy's dtype names: CuPy refuses 'float x' ("Wrong type float",
// since numpy.dtype('float') is float64). kjit also reads C names there, with C's meaning.
TEST_CASE("api: C type names in parameter lists are C's types in kjit", "[cupy_guide][host]") {
    const ElementwiseKernel c_names("float x, double y", "float z", "z = x + y", "c_names");
    CHECK_NOTHROW(c_names.check());
    KJIT_REQUIRE_HOST_BACKEND();
    const Array z = c_names({host_array(std::vector<float>{1.5f}, DType::float32), host_array(std::vector<double>{2.25}, DType::float64)});
    CHECK(z.dtype() == DType::float32);  // CuPy: 'float' is refused; NumPy's 'float' would be float64
    CHECK(values_of<float>(z) == std::vector<float>{3.75f});
}

// ============================================================================================
// User guide, "Raw kernels" and "Raw modules": CUDA source, unchanged. Compiled here with NVRTC
// ([nvrtc]); launched on the GPU ([gpu]).
// ============================================================================================

// From CuPy's user guide (Raw kernels), unchanged.
const char* const kAddKernelSource = R"(
extern "C" __global__
void my_add(const float* x1, const float* x2, float* y) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + x2[tid];
}
)";

// From CuPy's user guide (Raw kernels: complex-valued arrays), unchanged.
const char* const kComplexKernelSource = R"(
#include <cupy/complex.cuh>
extern "C" __global__
void my_func(const complex<float>* x1, const complex<float>* x2,
             complex<float>* y, float a) {
    int tid = blockDim.x * blockIdx.x + threadIdx.x;
    y[tid] = x1[tid] + a * x2[tid];
}
)";

// From CuPy's user guide (Raw modules), unchanged: a Python raw string, so the backslashes before
// the newlines stay (a line splice for the C preprocessor).
const char* const kLoadedFromSource = R"(
extern "C"{

__global__ void test_sum(const float* x1, const float* x2, float* y, \
                         unsigned int N)
{
    unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < N)
    {
        y[tid] = x1[tid] + x2[tid];
    }
}

__global__ void test_multiply(const float* x1, const float* x2, float* y, \
                              unsigned int N)
{
    unsigned int tid = blockDim.x * blockIdx.x + threadIdx.x;
    if (tid < N)
    {
        y[tid] = x1[tid] * x2[tid];
    }
}

})";

// From CuPy's user guide (Raw modules: C++ template kernels), unchanged.
const char* const kTemplateCode = R"(
template<typename T>
__global__ void fx3(T* arr, int N) {
    unsigned int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < N) {
        arr[tid] = arr[tid] * 3;
    }
}
)";

// From CuPy's API reference (RawModule.get_function), unchanged.
const char* const kGetFunctionCode = R"(
                template<typename T>
                __global__ void func(T* in_arr) { /* do something */ }
                )";

TEST_CASE("guide: the raw kernels and modules compile with NVRTC", "[cupy_guide][nvrtc]") {
    CHECK_NOTHROW(RawKernel(kAddKernelSource, "my_add").module().compile("sm_90"));
    CHECK_NOTHROW(RawModule(kLoadedFromSource).compile("sm_90"));
    // fx3 with the guide's options=('-std=c++11',) and name expressions.
    RawModuleOptions fx3_options;
    fx3_options.nvrtc_options = {"-std=c++11"};
    fx3_options.name_expressions = {"fx3<float>", "fx3<double>"};
    const Binary fx3 = RawModule(kTemplateCode, fx3_options).compile("sm_90");
    REQUIRE(fx3.entry_points.size() == 2);
    CHECK(fx3.entry_points.count("fx3<float>") == 1);
    CHECK(fx3.entry_points.count("fx3<double>") == 1);
    // get_function's note, with options=('--std=c++14',) and three name expressions.
    RawModuleOptions func_options;
    func_options.nvrtc_options = {"--std=c++14"};
    func_options.name_expressions = {"func<int>", "func<float>", "func<double>"};
    CHECK(RawModule(kGetFunctionCode, func_options).compile("sm_90").entry_points.size() == 3);

    // The complex kernel includes CuPy's own header <cupy/complex.cuh>, which kjit does not ship:
    // NVRTC cannot open it. (CuPy's complex<float> is thrust's; the CUDA toolkit has
    // <cuda/std/complex>, which the kernel would have to include instead.)
    const std::string complex_error = error_of([&] { RawKernel(kComplexKernelSource, "my_func").module().compile("sm_90"); });
    CHECK_THAT(complex_error, Contains("cupy/complex.cuh"));
    INFO(complex_error);
}

TEST_CASE("gpu: guide: RawKernel my_add on 5 x 5 floats, grid 5, block 5", "[cupy_guide][gpu]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << seed());
    const RawKernel add_kernel(kAddKernelSource, "my_add");
    // The guide's data: arange(25) twice, y zeros, and its printed result 0, 2, ..., 48.
    std::vector<float> ar(25);
    for (int k = 0; k < 25; ++k) ar[k] = float(k);
    const Device d = Device::cuda(0);
    const Array x1 = on(d, ar, DType::float32, {5, 5}), x2 = on(d, ar, DType::float32, {5, 5});
    const Array y = on(d, std::vector<float>(25, 0.0f), DType::float32, {5, 5});
    add_kernel(5, 5, {x1, x2, y});  // grid, block and arguments
    CHECK(mismatches(y, [](std::size_t k) { return C(2.0 * double(k)); }, 0) == 0);
    // Random data, y poisoned.
    const std::vector<float> a = cast_all<float>(draw(25, -100, 100, false)), b = cast_all<float>(draw(25, -100, 100, false));
    const Array yp = poisoned_on(d, DType::float32, {5, 5});
    add_kernel(5, 5, {on(d, a, DType::float32, {5, 5}), on(d, b, DType::float32, {5, 5}), yp});
    CHECK(mismatches(yp, [&](std::size_t k) { return C(double(a[k] + b[k])); }, 0) == 0);

    // The guide's attributes: max_threads_per_block 1024 for this kernel; the dynamic shared
    // memory limit raised past 48 KiB (CuPy sets max_dynamic_shared_size_bytes = 50000; kjit
    // raises it itself when a launch asks for more).
    const RawKernelAttributes attributes = add_kernel.attributes(d);
    CHECK(attributes.max_threads_per_block == 1024);
    CHECK(attributes.num_regs > 0);
    CHECK(attributes.static_shared_bytes == 0);
    CHECK(attributes.local_bytes == 0);
    CHECK(attributes.parameter_sizes == std::vector<std::size_t>{8, 8, 8});
    const Array y50 = poisoned_on(d, DType::float32, {5, 5});
    add_kernel(5, 5, {on(d, a, DType::float32, {5, 5}), on(d, b, DType::float32, {5, 5}), y50}, {.shared_mem_bytes = 50000});
    CHECK(mismatches(y50, [&](std::size_t k) { return C(double(a[k] + b[k])); }, 0) == 0);
}

TEST_CASE("gpu: guide: RawKernel my_func on complex64 (CuPy's header is missing)", "[cupy_guide][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawKernel complex_kernel(kComplexKernelSource, "my_func");
    const Device d = Device::cuda(0);
    const Array x = poisoned_on(d, DType::complex64, {5, 5});
    CHECK_THROWS_AS(complex_kernel(5, 5, {x, x, x, 2.0f}), CompileError);
    CHECK_THAT(error_of([&] { complex_kernel(5, 5, {x, x, x, 2.0f}); }), Contains("cupy/complex.cuh"));
}

TEST_CASE("gpu: guide: RawModule test_sum and test_multiply on 10 x 10 floats", "[cupy_guide][gpu]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << seed());
    const RawModule module(kLoadedFromSource);
    const RawKernel ker_sum = module.get_function("test_sum");
    const RawKernel ker_times = module.get_function("test_multiply");
    const int N = 10;
    const Device d = Device::cuda(0);
    const std::vector<float> x1 = cast_all<float>(draw(N * N, -100, 100, false)), x2 = cast_all<float>(draw(N * N, -100, 100, false));
    const Array a = on(d, x1, DType::float32, {N, N}), b = on(d, x2, DType::float32, {N, N});
    const Array y = poisoned_on(d, DType::float32, {N, N});
    ker_sum(N, N, {a, b, y, N * N});  // y = x1 + x2 (N * N is an int: 4 bytes, as unsigned int N)
    CHECK(mismatches(y, [&](std::size_t k) { return C(double(x1[k] + x2[k])); }, 0) == 0);
    ker_times(N, N, {a, b, y, N * N});  // y = x1 * x2
    CHECK(mismatches(y, [&](std::size_t k) { return C(double(x1[k] * x2[k])); }, 0) == 0);
    // CuPy passes the Python int N**2 as a long long (8 bytes) into the 4-byte unsigned int and
    // does not check; kjit checks each argument's size against the kernel's parameter.
    CHECK_THROWS_AS(ker_sum(N, N, {a, b, y, std::int64_t{N * N}}), TypeError);
}

TEST_CASE("gpu: guide: RawModule template fx3 by name expressions", "[cupy_guide][gpu]") {
    KJIT_REQUIRE_GPU();
    INFO("seed " << seed());
    RawModuleOptions options;
    options.nvrtc_options = {"-std=c++11"};
    const std::vector<std::string> name_exp = {"fx3<float>", "fx3<double>"};
    options.name_expressions = name_exp;
    const RawModule mod(kTemplateCode, options);
    const RawKernel ker_float = mod.get_function(name_exp[0]);
    const int N = 10;
    const Device d = Device::cuda(0);
    const std::vector<double> v = draw(N, -100, 100, false);
    const std::vector<float> vf = cast_all<float>(v);
    const Array a = on(d, vf, DType::float32);
    ker_float(1, N, {a, N});
    CHECK(mismatches(a, [&](std::size_t k) { return C(double(vf[k] * 3.0f)); }, 0) == 0);
    const RawKernel ker_double = mod.get_function(name_exp[1]);
    const Array b = on(d, v, DType::float64);
    ker_double(1, N, {b, N});
    CHECK(mismatches(b, [&](std::size_t k) { return C(v[k] * 3); }, 0) == 0);
}

}  // namespace
