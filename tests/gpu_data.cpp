#include "gpu_data.hpp"

#include <cmath>

#include "test_support.hpp"

namespace kjit::test {

DeviceData random_device(DType t, const Shape& shape) {
    DeviceData d;
    d.host = random_elements(t, shape_size(shape));
    d.device = Array::from_host(d.host.data(), t, shape, Device::cuda(0));
    return d;
}

Array poisoned(DType t, const Shape& shape, const Stream& stream) {
    const std::vector<unsigned char> ff(static_cast<std::size_t>(shape_size(shape)) * t.itemsize(), 0xff);
    return Array::from_host(ff.data(), t, shape, Device::cuda(0), stream);
}

std::vector<unsigned char> to_host(const Array& a) {
    std::vector<unsigned char> out(a.nbytes());
    a.copy_to_host(out.data());
    return out;
}

std::size_t mismatches(const Array& got, const std::function<std::complex<double>(std::size_t)>& want, double rtol, double atol) {
    const std::vector<unsigned char> bytes = to_host(got);
    std::size_t wrong = 0;
    for (std::size_t k = 0; k < static_cast<std::size_t>(got.size()); ++k) {
        const std::complex<double> g = element_value(bytes, got.dtype(), k), w = want(k);
        // Equal values first: an infinity the reference wants (a float16 product past 65504, say)
        // differs from the one got by NaN, which no tolerance admits.
        const bool same = g == w || (std::isnan(w.real()) && std::isnan(g.real())) || std::abs(g - w) <= rtol * std::abs(w) + atol;
        if (!same && ++wrong <= 5) UNSCOPED_INFO("element " << k << ": got " << g << ", want " << w);
    }
    return wrong;
}

}  // namespace kjit::test
