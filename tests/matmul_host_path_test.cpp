// The host side of a warm small matmul, on a pretend driver (no GPU): one launch of kjit's
// small-product kernel, no heap memory but the returned Array's when the output is given, and what a call costs on the
// host is measured ([.][matmul_bench]).
#include "test_support.hpp"

#include <chrono>

#include "allocation_counter.hpp"
#include "fake_driver.hpp"
#include "kjit/matmul.hpp"

using kjit::Array;
using kjit::DType;

namespace {

const kjit::Device gpu = kjit::Device::cuda(0);
int launches() { return kjit::test::fake_state().launches; }

}  // namespace

TEST_CASE("a warm small product with its output given launches once and allocates only the Array it returns", "[matmul][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const Array a = Array::empty({64, 64}, DType::float32, gpu), b = Array::empty({64, 64}, DType::float32, gpu);
    const Array c = Array::empty({64, 64}, DType::float32, gpu);
    const Array v = Array::empty({64}, DType::float32, gpu), w = Array::empty({64}, DType::float32, gpu);
    const Array at = a.transpose();
    kjit::matmul(a, b, c);  // compiles the kernel (NVRTC, here) and loads it (pretend)
    kjit::matmul(at, v, w);
    const int before = launches();
    kjit::test::CountAllocations count;
    for (int k = 0; k < 100; ++k) {
        kjit::matmul(a, b, c);
        kjit::matmul(at, v, w);  // a transposed operand and a 1-D one
    }
    // Only the Array returned (a copy of c: its shape and strides).
    CHECK(count.count() <= 2 * 200);
    CHECK(launches() == before + 200);
}

TEST_CASE("host time of a warm small product on a pretend driver", "[.][matmul_bench]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const Array a = Array::empty({64, 64}, DType::float32, gpu), b = Array::empty({64, 64}, DType::float32, gpu);
    const Array c = Array::empty({64, 64}, DType::float32, gpu);
    kjit::matmul(a, b, c);
    const int calls = 1000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k) kjit::matmul(a, b, c);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
    WARN("warm 64x64 matmul(a, b, out) without the driver's launch: " << ns << " ns per call");
}
