// Device arrays for [gpu] tests: random data with its host copy, outputs poisoned so that
// unwritten elements show, results read back, compared against a host reference.
#pragma once

#include <complex>
#include <cstdint>
#include <functional>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/stream.hpp"

namespace kjit::test {

// A device array of random elements (random_elements) and its host bytes, C order.
struct DeviceData {
    Array device;
    std::vector<unsigned char> host;
};
DeviceData random_device(DType t, const Shape& shape);

// A device array filled with 0xff bytes (NaN for every float type, -1 or the maximum for integers).
Array poisoned(DType t, const Shape& shape, const Stream& stream = Stream::current());

// The array's bytes in C order (synchronises).
std::vector<unsigned char> to_host(const Array& a);

// How many elements of `got` differ from `want(k)` beyond rtol * |want| + atol (NaN matches NaN);
// the first few are logged with UNSCOPED_INFO.
std::size_t mismatches(const Array& got, const std::function<std::complex<double>(std::size_t)>& want, double rtol,
                       double atol = 0);

}  // namespace kjit::test
