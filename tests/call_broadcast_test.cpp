// Issue 29 on the elementwise call path: outputs given take part in the broadcast (an input of
// (3, 1) fills an output of (3, 4), as in NumPy's ufuncs and CuPy's ElementwiseKernel), and a
// call's block size (CallOptions::block_size, CuPy's block_size=). The same checks run on the host
// back end ([host]) and on the GPU ([gpu]); the block-size limits are checked on the pretend driver.
#include "test_support.hpp"
#include "backend_cases.hpp"
#include "fake_driver.hpp"
#include "gpu_data.hpp"

#include <cstring>

#include "kjit/array.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"

using kjit::Array;
using kjit::CallOptions;
using kjit::Device;
using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::Shape;
using Catch::Matchers::Contains;
using kjit::test::mismatches;

namespace {

// Random float64 elements on `device` and their host copy (C order).
struct Data {
    Array array;
    std::vector<unsigned char> host;
    double at(std::size_t k) const { return kjit::test::element_value(host, DType::float64, k).real(); }
};
Data random_on(Device device, const Shape& shape) {
    Data d;
    d.host = kjit::test::random_elements(DType::float64, kjit::shape_size(shape));
    d.array = Array::from_host(d.host.data(), DType::float64, shape, device);
    return d;
}

// An output filled with 0xff bytes (NaN for float64), so that elements left unwritten show.
Array poisoned_on(Device device, const Shape& shape, DType t = DType::float64) {
    const std::vector<unsigned char> ff(static_cast<std::size_t>(kjit::shape_size(shape)) * t.itemsize(), 0xff);
    return Array::from_host(ff.data(), t, shape, device);
}

// The flat C-order index in an array of shape `in` of element `flat` of `out`, `in` broadcast to `out`.
std::size_t broadcast_index(const Shape& out, const Shape& in, std::size_t flat) {
    std::size_t index = 0, stride = 1;
    for (int d = static_cast<int>(out.size()) - 1, e = static_cast<int>(in.size()) - 1; d >= 0; --d, --e) {
        const std::size_t k = flat % static_cast<std::size_t>(out[static_cast<std::size_t>(d)]);
        flat /= static_cast<std::size_t>(out[static_cast<std::size_t>(d)]);
        if (e < 0) continue;
        if (in[static_cast<std::size_t>(e)] != 1) index += k * stride;
        stride *= static_cast<std::size_t>(in[static_cast<std::size_t>(e)]);
    }
    return index;
}

// Inputs of smaller shapes broadcast to the outputs given, on `device`.
void check_outputs_decide_the_shape(Device device) {
    const ElementwiseKernel axpb("T x, T z", "T y", "y = 2 * x + z", "join_axpb");
    struct Case {
        Shape x, z, y;
    };
    const Case cases[] = {
        {{3, 1}, {1}, {3, 4}},        // x (3, 1) fills (3, 4)
        {{3}, {1}, {2, 3}},           // x (3,) fills (2, 3)
        {{1, 4}, {3, 1}, {2, 3, 4}},  // the output adds a leading dimension to the inputs' (3, 4)
        {{1}, {1}, {5, 70}},          // one element everywhere
        {{300, 1}, {1, 257}, {300, 257}},  // the inputs' own broadcast, output given as before
    };
    for (const Case& c : cases) {
        INFO("x " << kjit::shape_to_string(c.x) << ", z " << kjit::shape_to_string(c.z) << ", y " << kjit::shape_to_string(c.y));
        const Data x = random_on(device, c.x), z = random_on(device, c.z);
        const Array y = poisoned_on(device, c.y);
        axpb.launch({x.array, z.array, y});
        CHECK(mismatches(y,
                         [&](std::size_t k) {
                             return 2 * x.at(broadcast_index(c.y, c.x, k)) + z.at(broadcast_index(c.y, c.z, k));
                         },
                         1e-15) == 0);
        // Called (not launched) with the output given: the same, and the output is returned.
        const Array again = poisoned_on(device, c.y);
        const Array got = axpb({x.array, z.array, again});
        CHECK(got.data() == again.data());
        CHECK(mismatches(again, [&](std::size_t k) { return 2 * x.at(broadcast_index(c.y, c.x, k)) + z.at(broadcast_index(c.y, c.z, k)); },
                         1e-15) == 0);
    }

    // Two outputs, and `i` counting in C order over the outputs' shape.
    const ElementwiseKernel both("T x", "T y, T w", "y = x + 1; w = x + 1000.0 * i", "join_two");
    const Data x = random_on(device, {3, 1});
    const Array y = poisoned_on(device, {2, 3, 4}), w = poisoned_on(device, {2, 3, 4});
    both.launch({x.array, y, w});
    CHECK(mismatches(y, [&](std::size_t k) { return x.at(broadcast_index({2, 3, 4}, {3, 1}, k)) + 1; }, 1e-15) == 0);
    CHECK(mismatches(w, [&](std::size_t k) { return x.at(broadcast_index({2, 3, 4}, {3, 1}, k)) + 1000.0 * double(k); }, 1e-15) ==
          0);
}

// Outputs that do not have the broadcast shape themselves, and broadcast views, are refused; the
// kernel works after each refusal.
void check_output_shape_errors(Device device) {
    const ElementwiseKernel axpb("T x, T z", "T y", "y = 2 * x + z", "join_errors");
    const Data x = random_on(device, {3, 4}), one = random_on(device, {1});
    // An output that would itself be broadcast.
    CHECK_THROWS_AS(axpb({x.array, one.array, poisoned_on(device, {3, 1})}), kjit::ShapeError);
    CHECK_THROWS_WITH(axpb({x.array, one.array, poisoned_on(device, {3, 1})}),
                      Contains("output 'y' has shape (3, 1)") && Contains("is (3, 4)") && Contains("not broadcast"));
    CHECK_THROWS_WITH(axpb({x.array, one.array, poisoned_on(device, {4})}),
                      Contains("output 'y' has shape (4,)") && Contains("is (3, 4)"));
    // An output that does not broadcast with the inputs at all.
    CHECK_THROWS_AS(axpb({x.array, one.array, poisoned_on(device, {3, 5})}), kjit::ShapeError);
    CHECK_THROWS_WITH(axpb({x.array, one.array, poisoned_on(device, {3, 5})}),
                      Contains("output 'y' has shape (3, 5), which does not broadcast with the inputs' shape (3, 4)"));
    // Inputs that do not broadcast are still named together.
    CHECK_THROWS_WITH(axpb({x.array, random_on(device, {5}).array, poisoned_on(device, {3, 5})}),
                      Contains("do not broadcast together") && Contains("x (3, 4)") && Contains("z (5,)"));
    // Two outputs that each take the inputs' shape but not each other's.
    const ElementwiseKernel two("T x", "T y, T w", "y = x; w = x", "join_two_errors");
    const Data column = random_on(device, {3, 1});
    CHECK_THROWS_WITH(two({column.array, poisoned_on(device, {3, 4}), poisoned_on(device, {3, 5})}),
                      Contains("do not broadcast together") && Contains("y (3, 4)") && Contains("w (3, 5)"));
    // An output that is a broadcast view of fewer elements.
    const Array row = poisoned_on(device, {4});
    CHECK_THROWS_AS(axpb({column.array, one.array, row.broadcast_to({3, 4})}), kjit::ShapeError);
    CHECK_THROWS_WITH(axpb({column.array, one.array, row.broadcast_to({3, 4})}), Contains("output 'y' is a broadcast view"));

    // Still usable.
    const Array y = poisoned_on(device, {3, 4});
    axpb.launch({column.array, one.array, y});
    CHECK(mismatches(y, [&](std::size_t k) { return 2 * column.at(k / 4) + one.at(0); }, 1e-15) == 0);
}

// block_size: refused below 0 (naming the value and the limit); on `device`, the values given
// compute the same results on every variant. Host arrays ignore a valid block size.
void check_block_sizes(Device device, std::initializer_list<int> sizes) {
    const ElementwiseKernel axpb("T x, T z", "T y", "y = 2 * x + z", "block_axpb");
    const Data x = random_on(device, {3, 4}), one = random_on(device, {1});
    CHECK_THROWS_AS(axpb({x.array, one.array}, CallOptions{std::nullopt, -1, -1}), kjit::Error);
    CHECK_THROWS_WITH(axpb({x.array, one.array}, CallOptions{std::nullopt, -1, -1}),
                      Contains("block_size -1") && Contains("at most 256"));

    struct Case {
        const char* what;
        Shape x, z, y;
        bool transpose_x = false;
    };
    const Case cases[] = {
        {"small, contiguous", {1000}, {1000}, {1000}},
        {"contiguous", {300001}, {300001}, {300001}},
        {"rows: a row broadcast down", {97, 256}, {256}, {97, 256}},
        {"strided: a column broadcast across", {301, 33}, {301, 1}, {301, 33}},
        {"transposed input (tiled at 256 threads)", {130, 70}, {70, 130}, {70, 130}, true},
    };
    for (const int block_size : sizes) {
        for (const Case& c : cases) {
            INFO("block_size " << block_size << ": " << c.what);
            const Data a = random_on(device, c.x), b = random_on(device, c.z);
            const Array in = c.transpose_x ? a.array.transpose() : a.array;
            const Array y = poisoned_on(device, c.y);
            axpb.launch({in, b.array, y}, CallOptions{std::nullopt, -1, block_size});
            CHECK(mismatches(y,
                             [&](std::size_t k) {
                                 const std::size_t xk = c.transpose_x ? (k % static_cast<std::size_t>(c.y[1])) * static_cast<std::size_t>(c.y[0]) +
                                                                            k / static_cast<std::size_t>(c.y[1])
                                                                      : broadcast_index(c.y, c.x, k);
                                 return 2 * a.at(xk) + b.at(broadcast_index(c.y, c.z, k));
                             },
                             1e-15) == 0);
        }
    }
}

}  // namespace

TEST_CASE("host back end: outputs given join the broadcast", "[host][call_broadcast]") {
    KJIT_REQUIRE_HOST_BACKEND();
    check_outputs_decide_the_shape(Device::cpu());
}

TEST_CASE("host back end: outputs that are not the broadcast shape are refused", "[host][call_broadcast]") {
    KJIT_REQUIRE_HOST_BACKEND();
    check_output_shape_errors(Device::cpu());
}

TEST_CASE("host back end: block_size below 0 is refused, any other ignored", "[host][block_size]") {
    KJIT_REQUIRE_HOST_BACKEND();
    check_block_sizes(Device::cpu(), {0, 64, 128, 4096});
}

TEST_CASE("outputs given join the broadcast", "[gpu][elementwise][call_broadcast]") {
    KJIT_REQUIRE_GPU();
    check_outputs_decide_the_shape(Device::cuda(0));
}

TEST_CASE("outputs that are not the broadcast shape are refused", "[gpu][elementwise][call_broadcast]") {
    KJIT_REQUIRE_GPU();
    check_output_shape_errors(Device::cuda(0));
}

TEST_CASE("block_size 64, 128 and 256 give the same results on every variant", "[gpu][elementwise][block_size]") {
    KJIT_REQUIRE_GPU();
    check_block_sizes(Device::cuda(0), {64, 128, 256, 1, 0});
}

TEST_CASE("block_size above the kernel's limit is refused on the GPU", "[gpu][elementwise][block_size]") {
    KJIT_REQUIRE_GPU();
    const ElementwiseKernel axpb("T x, T z", "T y", "y = 2 * x + z", "block_limit_gpu");
    const Data x = random_on(Device::cuda(0), {1000}), z = random_on(Device::cuda(0), {1000});
    CHECK_THROWS_AS(axpb({x.array, z.array}, CallOptions{std::nullopt, -1, 257}), kjit::Error);
    CHECK_THROWS_WITH(axpb({x.array, z.array}, CallOptions{std::nullopt, -1, 1024}),
                      Contains("block_size 1024 is above the limit of 256 threads per block"));
    const Array y = axpb({x.array, z.array}, CallOptions{std::nullopt, -1, 256});
    CHECK(mismatches(y, [&](std::size_t k) { return 2 * x.at(k) + z.at(k); }, 1e-15) == 0);
}

// On the pretend driver: what a call launches with, and the limits' errors.
TEST_CASE("block_size sets the launch's threads and grid, within the kernel's and the device's limits",
          "[call][nvrtc][block_size]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    state.device_max_threads = 512;  // asked for by the first call's plan
    const ElementwiseKernel axpb("T x, T z", "T y", "y = 2 * x + z", "block_fake");
    const Array x = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, Device::cuda(0));
    axpb.launch({x, x, y});
    CHECK(state.last_block_x == 256);
    CHECK(state.last_grid_x == 4);  // small variant: one thread per element
    axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, 128});
    CHECK(state.last_block_x == 128);
    CHECK(state.last_grid_x == 8);

    // Above the function's limit (its launch bounds), or the device's: kjit::Error naming both.
    int before = state.launches;
    CHECK_THROWS_AS(axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, 257}), kjit::Error);
    CHECK_THROWS_WITH(axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, 257}),
                      Contains("kernel 'block_fake': block_size 257 is above the limit of 256 threads per block") &&
                          Contains("the kernel takes 256, the device 512"));
    state.function_max_threads = 1024;
    CHECK_THROWS_WITH(axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, 1024}),
                      Contains("block_size 1024 is above the limit of 512") && Contains("the device 512"));
    CHECK_THROWS_WITH(axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, -5}),
                      Contains("block_size -5 is not a number of threads") && Contains("at most 256"));
    CHECK(state.launches == before);
    // And the next call launches.
    axpb.launch({x, x, y}, CallOptions{std::nullopt, -1, 512});
    CHECK(state.launches == before + 1);
    CHECK(state.last_block_x == 512);
}

TEST_CASE("a block size other than 256 never takes the tiled variant", "[call][nvrtc][block_size]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel add("T x, T z", "T y", "y = x + z", "block_tiled_fake");
    // A transposed input against a C-ordered output: the tiled variant's case, one block of 256
    // threads per 64 x 64 tile (16 of them here; 64 with 32 x 32 tiles); with 128 threads, the
    // strided variant, one thread per element (65536 / 128 blocks).
    const Array x = Array::empty({256, 256}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({256, 256}, DType::float32, Device::cuda(0));
    add.launch({x.transpose(), x, y});
    const unsigned tiled_grid = state.last_grid_x;
    CHECK((tiled_grid == 16 || tiled_grid == 64));
    add.launch({x.transpose(), x, y}, CallOptions{std::nullopt, -1, 256});
    CHECK(state.last_grid_x == tiled_grid);
    add.launch({x.transpose(), x, y}, CallOptions{std::nullopt, -1, 128});
    CHECK(state.last_block_x == 128);
    CHECK(state.last_grid_x == 512);
}

TEST_CASE("outputs given join the broadcast on the pretend driver too", "[call][nvrtc][call_broadcast]") {
    kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel copy("T x", "T y", "y = x", "join_fake");
    const int before = state.launches;
    copy.launch({Array::empty({3, 1}, DType::float32, Device::cuda(0)), Array::empty({3, 4}, DType::float32, Device::cuda(0))});
    CHECK(state.launches == before + 1);
    CHECK_THROWS_WITH(copy.launch({Array::empty({3, 4}, DType::float32, Device::cuda(0)), Array::empty({3, 1}, DType::float32, Device::cuda(0))}),
                      Contains("output 'y' has shape (3, 1)") && Contains("is (3, 4)"));
    CHECK(state.launches == before + 1);
}
