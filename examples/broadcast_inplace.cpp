// Broadcasting, views and in-place updates: subtract each column's mean from a matrix in place,
// through a transposed view, with the means as a broadcast row.
#include <cstdio>
#include <vector>

#include <kjit/kjit.hpp>

int main() {
    if (kjit::Device::count() == 0) {
        std::printf("no GPU: %s\n", kjit::no_device_reason().c_str());
        return 0;
    }
    const std::int64_t rows = 4, cols = 3;
    std::vector<double> host = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    std::vector<double> means = {5.5, 6.5, 7.5};
    const kjit::Array m = kjit::Array::from_host(host.data(), kjit::DType::float64, {rows, cols});
    const kjit::Array mu = kjit::Array::from_host(means.data(), kjit::DType::float64, {cols});
    const kjit::ElementwiseKernel center("T x, T mean", "T y", "y = x - mean", "center");
    center.launch({m, mu, m});  // (4, 3) - (3,) broadcast, written in place
    // The same through the transpose: (3, 4) - (3, 1).
    const kjit::ElementwiseKernel twice("T x", "T y", "y = 2 * x", "twice");
    const kjit::Array mt = m.transpose();
    twice.launch({mt, mt});
    std::vector<double> out(host.size());
    m.copy_to_host(out.data());
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c) std::printf("%6.1f", out[r * cols + c]);
        std::printf("\n");
    }
    return 0;
}
