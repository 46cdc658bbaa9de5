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

#include "backend_cases.hpp"
#include "gpu_data.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;
using C = std::complex<double>;

namespace {

// Runs `body` once per back end: the host back end as a [host] test, the GPU as a [gpu] test.
#define KJIT_ON_BOTH_BACK_ENDS(title, body_function)                                   \
    TEST_CASE("host: " title, "[cupy][host]") {                                        \
        KJIT_REQUIRE_HOST_BACKEND();                                                    \
        body_function(Device::cpu());                                                   \
    }                                                                                   \
    TEST_CASE("gpu: " title, "[cupy][gpu]") {                                          \
        KJIT_REQUIRE_GPU();                                                             \
        body_function(Device::cuda(0));                                                 \
    }

// `bytes` (C order) as an array of `shape` on `device`.
Array on(Device device, const std::vector<unsigned char>& bytes, DType t, const Shape& shape) {
    return Array::from_host(bytes.data(), t, shape, device);
}
template <class T>
Array on(Device device, const std::vector<T>& values, DType t, Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
    return Array::from_host(values.data(), t, shape, device);
}

// An output filled with 0xff bytes (NaN for floats, -1 or the maximum for integers), so that an
// element the kernel does not write shows.
Array poisoned_on(Device device, DType t, const Shape& shape) {
    const std::vector<unsigned char> ff(static_cast<std::size_t>(shape_size(shape)) * t.itemsize(), 0xff);
    return Array::from_host(ff.data(), t, shape, device);
}

// Random doubles in [lo, hi) from the test's fresh engine (rounded for integer dtypes).
std::vector<double> draw(std::size_t count, double lo, double hi, bool integral) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(count);
    for (double& x : v) x = integral ? std::round(u(rng())) : u(rng());
    return v;
}
template <class T>
std::vector<T> cast_all(const std::vector<double>& v) {
    return std::vector<T>(v.begin(), v.end());
}

// The message of the kjit::Error `f` throws, with the position of a ParseError or TypeError
// first ("parse op:1:5: ..."); "no error" when it throws none.
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const ParseError& e) {
        return "parse " + e.where() + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) + " " + e.message();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

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
