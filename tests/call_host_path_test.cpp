// The host side of a warm elementwise call, on a pretend driver (no GPU): it allocates no heap
// memory when every output is given, and what it costs per call is measured ([.][call_bench]).
#include "test_support.hpp"

#include <chrono>

#include "allocation_counter.hpp"
#include "fake_driver.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/call_layout.hpp"

using kjit::Array;
using kjit::DType;
using Catch::Matchers::Contains;

namespace {

int launches() { return kjit::test::fake_state().launches; }

}  // namespace

TEST_CASE("a warm call with every output given allocates nothing on the host", "[call][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb_host");
    const Array x = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const Array m = Array::empty({64, 128}, DType::float32, kjit::Device::cuda(0));
    const Array row = Array::empty({128}, DType::float32, kjit::Device::cuda(0));
    const Array out = Array::empty({64, 128}, DType::float32, kjit::Device::cuda(0));
    axpb.launch({x, 2.0f, 1.0f, y});  // compiles (NVRTC, here) and loads (pretend)
    axpb.launch({m, row, 1.0, out});
    const int before = launches();
    kjit::test::CountAllocations count;
    for (int k = 0; k < 100; ++k) {
        axpb.launch({x, 2.0f, 1.0f, y});
        axpb.launch({m, row, 1.0, out});
    }
    CHECK(count.count() == 0);
    CHECK(launches() == before + 200);
}

TEST_CASE("a call's shape comes from the inputs, else the outputs, else the size", "[call][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const Array y = Array::empty({2, 3}, DType::float32, kjit::Device::cuda(0));
    // Only scalars in: the given output decides the shape; without it, a size is needed.
    const kjit::ElementwiseKernel fill("T v", "T y", "y = v", "fill_shape");
    int before = launches();
    fill.launch({2.5f, y});
    CHECK(launches() == before + 1);
    CHECK_THROWS_WITH(fill({2.5f}), Contains("needs a size"));
    const Array made = fill({2.5f}, {std::nullopt, 7});
    CHECK(made.shape() == kjit::Shape{7});
    CHECK_THROWS_WITH(fill.launch({2.5f, y}, {std::nullopt, 5}), Contains("size 5 was given but the arrays have 6"));
    // A raw output and a plain one: the plain one decides (the raw one is indexed as it is).
    const kjit::ElementwiseKernel both("T v", "raw T r, T y", "y = v; r[i] = v", "raw_and_plain");
    const Array r = Array::empty({10}, DType::float32, kjit::Device::cuda(0));
    before = launches();
    both.launch({2.5f, r, Array::empty({4}, DType::float32, kjit::Device::cuda(0))}, {std::nullopt, 4});
    CHECK(launches() == before + 1);
    // Without the outputs, the size decides their shape.
    const kjit::Outputs o = both({2.5f}, {std::nullopt, 4});
    CHECK(o[0].shape() == kjit::Shape{4});
    CHECK(o[1].shape() == kjit::Shape{4});
    // Size 0 launches nothing.
    before = launches();
    (void)fill({2.5f}, {std::nullopt, 0});
    CHECK(launches() == before);
}

TEST_CASE("overlap handling and device errors, decided on the host", "[call][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 2);
    const kjit::ElementwiseKernel copy("T x", "T y", "y = x", "copy_overlap");
    const Array x = Array::empty({100}, DType::float32, kjit::Device::cuda(0));
    // The same elements in place: one launch. A shifted view of the output: the input is copied
    // first (a second launch, of kjit's copy kernel).
    copy.launch({x, x});
    int before = launches();
    copy.launch({x, x});
    CHECK(launches() == before + 1);
    before = launches();
    copy.launch({x.slice(0, {0, 99}), x.slice(0, {1, 100})});
    CHECK(launches() == before + 2);
    // Disjoint halves of one buffer: no copy.
    before = launches();
    copy.launch({x.slice(0, {0, 50}), x.slice(0, {50, 100})});
    CHECK(launches() == before + 1);
    // Arrays on two devices, and outputs that overlap each other.
    const Array other = Array::empty({100}, DType::float32, kjit::Device::cuda(1));
    CHECK_THROWS_WITH(copy.launch({x, other}), Contains("output 'y' is on cuda:1 but earlier arguments are on cuda:0"));
    const kjit::ElementwiseKernel two("T x", "T y, T z", "y = x; z = x", "two_outputs");
    const Array out = Array::empty({100}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(two.launch({x, out, out}), Contains("output 'y' and output 'z' overlap in memory"));
    CHECK_THROWS_AS(two.launch({x, out, out.slice(0, {std::nullopt, std::nullopt, -1})}), kjit::ShapeError);
    // Still usable after the errors.
    before = launches();
    two.launch({x, out, Array::empty({100}, DType::float32, kjit::Device::cuda(0))});
    CHECK(launches() == before + 1);
}

TEST_CASE("few contiguous elements launch one thread each, more launch vector steps", "[call][nvrtc]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb_host");
    for (const std::int64_t n : {std::int64_t{1000}, kjit::detail::kSmallCallElements}) {
        const Array x = Array::empty({n}, DType::float32, kjit::Device::cuda(0));
        axpb.launch({x, 2.0f, 1.0f, x});
        CHECK(kjit::test::fake_state().last_grid_x == (n + 255) / 256);  // the small variant
    }
    // Past the limit: one 4-float vector per thread (the contiguous variant's default step).
    const std::int64_t n = kjit::detail::kSmallCallElements * 4;
    const Array x = Array::empty({n}, DType::float32, kjit::Device::cuda(0));
    axpb.launch({x, 2.0f, 1.0f, x});
    CHECK(kjit::test::fake_state().last_grid_x == n / 4 / 256);
}

TEST_CASE("host time of a warm call on a pretend driver", "[.][call_bench]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const kjit::ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb_host");
    const Array x = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, kjit::Device::cuda(0));
    axpb.launch({x, 2.0f, 1.0f, y});
    // KJIT_BENCH_CALLS=N: another count (callgrind's instructions per call are the difference of
    // two counts over the difference of their calls).
    const char* count = std::getenv("KJIT_BENCH_CALLS");
    const int calls = count != nullptr && std::atoi(count) > 0 ? std::atoi(count) : 1000000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k) axpb.launch({x, 2.0f, 1.0f, y});
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
    WARN("warm launch() without the driver's launch: " << ns << " ns per call");
}
