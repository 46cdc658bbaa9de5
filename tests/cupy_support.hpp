// Helpers shared by the tests that port CuPy's kernels (cupy_port_test.cpp, cupy_guide_test.cpp):
// one test body run on both back ends, arrays from host values on a device, poisoned outputs,
// random values, and the message of the error a call throws.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend_cases.hpp"
#include "gpu_data.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

// Runs `body_function(Device)` once per back end: the host back end as a [host] test, the GPU as a
// [gpu] test; `tag` is the file's own tag ("[cupy]").
#define KJIT_ON_BOTH_BACK_ENDS_TAGGED(tag, title, body_function)                      \
    TEST_CASE("host: " title, tag "[host]") {                                          \
        KJIT_REQUIRE_HOST_BACKEND();                                                    \
        body_function(::kjit::Device::cpu());                                           \
    }                                                                                   \
    TEST_CASE("gpu: " title, tag "[gpu]") {                                            \
        KJIT_REQUIRE_GPU();                                                             \
        body_function(::kjit::Device::cuda(0));                                         \
    }

namespace kjit::test {

// `bytes` (C order) as an array of `shape` on `device`.
inline Array on(Device device, const std::vector<unsigned char>& bytes, DType t, const Shape& shape) {
    return Array::from_host(bytes.data(), t, shape, device);
}
template <class T>
Array on(Device device, const std::vector<T>& values, DType t, Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<std::int64_t>(values.size())};
    return Array::from_host(values.data(), t, shape, device);
}

// An output filled with 0xff bytes (NaN for floats, -1 or the maximum for integers), so that an
// element the kernel does not write shows.
inline Array poisoned_on(Device device, DType t, const Shape& shape) {
    const std::vector<unsigned char> ff(static_cast<std::size_t>(shape_size(shape)) * t.itemsize(), 0xff);
    return Array::from_host(ff.data(), t, shape, device);
}

// Random doubles in [lo, hi) from the test's fresh engine (rounded for integer dtypes).
inline std::vector<double> draw(std::size_t count, double lo, double hi, bool integral) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(count);
    for (double& x : v) x = integral ? std::round(u(rng())) : u(rng());
    return v;
}
template <class T>
std::vector<T> cast_all(const std::vector<double>& v) {
    return std::vector<T>(v.begin(), v.end());
}

// The elements of `a` (host or GPU, any layout) in C order, as T.
template <class T>
std::vector<T> elements_of(const Array& a) {
    const std::vector<unsigned char> bytes = a.is_host() ? host_bytes_c_order(a) : to_host(a);
    std::vector<T> v(bytes.size() / sizeof(T));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
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

}  // namespace kjit::test
