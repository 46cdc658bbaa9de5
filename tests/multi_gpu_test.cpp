// Two real GPUs ([gpu][gpu2], skipped with fewer; issue 38): one kernel object called from two
// threads on two devices, copies between them both ways, split and gather, each checked against
// a host reference on fresh random data, with the memory a result lands in poisoned first.
#include <cmath>
#include <cstring>
#include <thread>

#include "test_support.hpp"

#include "kjit/elementwise_kernel.hpp"
#include "kjit/split.hpp"

using kjit::Array;
using kjit::Device;
using kjit::DType;

namespace {

// Fills `bytes` of fresh pool memory on `device` with 0xFF and frees it, so that the next
// allocation of that size there most likely reuses it: elements a copy does not write show.
void poison_pool(Device device, std::size_t bytes) {
    const std::vector<unsigned char> ff(bytes, 0xFF);
    const Array junk = Array::from_host(ff.data(), DType::uint8, {static_cast<std::int64_t>(bytes)}, device);
    kjit::Stream::legacy_default(device).synchronize();
}

std::vector<unsigned char> bytes_of(const Array& a) { return kjit::test::host_bytes_c_order(a.to_host()); }

}  // namespace

TEST_CASE("gpu: one kernel object from two threads on two devices", "[gpu][gpu2][devices]") {
    KJIT_REQUIRE_GPUS(2);
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "two_gpu_axpb");
    const Array host_x = kjit::test::random_array(DType::float32, {3, 100003});
    const std::vector<float> x = kjit::test::values_of<float>(host_x);
    std::vector<std::string> problems(2);
    std::vector<std::thread> threads;
    for (int dev = 0; dev < 2; ++dev)
        threads.emplace_back([&, dev] {
            try {
                kjit::Device::set_current(dev);
                const float a = 1.5f + static_cast<float>(dev), b = -0.25f;
                for (int round = 0; round < 20; ++round) {
                    poison_pool(Device::cuda(dev), host_x.nbytes());
                    const Array xd = host_x.to(Device::cuda(dev));
                    const Array y = axpb({xd, a, b})[0];
                    if (y.device() != Device::cuda(dev)) problems[dev] = "result on " + y.device().to_string();
                    const std::vector<float> got = kjit::test::values_of<float>(y.to_host());
                    for (std::size_t i = 0; i < x.size(); ++i) {
                        const double want = static_cast<double>(a) * x[i] + b;
                        if (std::abs(got[i] - want) > 1e-6 * (1 + std::abs(want))) {
                            problems[dev] = "cuda:" + std::to_string(dev) + " element " + std::to_string(i) + ": " +
                                            std::to_string(got[i]) + " != " + std::to_string(want);
                            return;
                        }
                    }
                }
            } catch (const std::exception& e) {
                problems[dev] = e.what();
            }
        });
    for (std::thread& t : threads) t.join();
    CHECK(problems[0] == "");
    CHECK(problems[1] == "");
}

TEST_CASE("gpu: copies between two devices, both ways, any layout and dtype", "[gpu][gpu2][devices]") {
    KJIT_REQUIRE_GPUS(2);
    for (const DType t : {DType::float32, DType::int8, DType::complex128, DType::float16}) {
        for (const kjit::Shape& shape : {kjit::Shape{1}, kjit::Shape{1000003}, kjit::Shape{517, 33}}) {
            INFO(t.name() << " " << kjit::shape_to_string(shape));
            const Array host = kjit::test::random_array(t, shape);
            const std::vector<unsigned char> want = kjit::test::host_bytes_c_order(host);
            const Array on0 = host.to(Device::cuda(0));
            poison_pool(Device::cuda(1), host.nbytes());
            const Array on1 = on0.to(Device::cuda(1));
            CHECK(on1.device() == Device::cuda(1));
            CHECK(bytes_of(on1) == want);
            poison_pool(Device::cuda(0), host.nbytes());
            const kjit::Stream s0 = kjit::Stream::create(Device::cuda(0)), s1 = kjit::Stream::create(Device::cuda(1));
            const Array back = on1.to(Device::cuda(0), s1, s0);
            s0.synchronize();
            CHECK(bytes_of(back) == want);
            if (shape.size() == 2) {  // a transposed view: packed on its device, then copied
                const Array t1 = on0.transpose().to(Device::cuda(1));
                CHECK(bytes_of(t1) == kjit::test::host_bytes_c_order(host.transpose()));
            }
        }
    }
}

TEST_CASE("gpu: split over two devices, a kernel on each part, gathered back", "[gpu][gpu2][devices]") {
    KJIT_REQUIRE_GPUS(2);
    const kjit::ElementwiseKernel twice_plus("T x", "T y", "y = 2 * x + 1", "two_gpu_twice_plus");
    const Array host = kjit::test::random_array(DType::float64, {1001, 37});
    const std::vector<double> x = kjit::test::values_of<double>(host);
    const Array on0 = host.to(Device::cuda(0));
    for (int axis : {0, 1, -1}) {
        for (int onto : {0, 1}) {
            INFO("axis " << axis << ", gathered on cuda:" << onto);
            const std::vector<Array> parts = kjit::split(on0, {Device::cuda(0), Device::cuda(1)}, axis);
            REQUIRE(parts.size() == 2);
            CHECK(parts[1].device() == Device::cuda(1));
            std::vector<Array> results;
            for (const Array& p : parts) results.push_back(twice_plus({p})[0]);  // on the part's device
            poison_pool(Device::cuda(onto), host.nbytes());
            const Array y = kjit::gather(results, Device::cuda(onto), axis);
            CHECK(y.shape() == kjit::Shape{1001, 37});
            const std::vector<double> got = kjit::test::values_of<double>(y.to_host());
            std::size_t wrong = 0;
            for (std::size_t i = 0; i < x.size(); ++i) wrong += got[i] != 2 * x[i] + 1;
            CHECK(wrong == 0);
        }
    }
}
