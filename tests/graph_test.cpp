// kjit::Graph and capture-safe calls (issue 33): on the pretend driver, what a call under capture
// does and refuses; on the GPU, captured sequences replayed against their eager results.
#include "test_support.hpp"

#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "kjit/cache.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"
#include "kjit/graph.hpp"
#include "kjit/matmul.hpp"
#include "kjit/reduction_kernel.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/scan_kernel.hpp"
#include "kjit/reductions.hpp"
#include "kjit/segmented.hpp"
#include "runtime/detail/driver.hpp"

// GCC 12 warns about designated initializers that leave out members with default initializers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

using Catch::Matchers::Contains;
using kjit::Array;
using kjit::Device;
using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::Graph;
using kjit::Stream;

namespace {

// The pretend driver that launches (and sets workspaces' memory), over an empty kernel cache of
// the test's own: calls compile for real and load into the fake.
kjit::detail::DriverApi launching_api() {
    kjit::detail::DriverApi api = kjit::test::make_fake_launching_driver();
    api.cuMemsetD8Async = [](CUdeviceptr, unsigned char, std::size_t, CUstream) { return CUDA_SUCCESS; };
    return api;
}
struct FakeGpuWithCache {
    kjit::test::ProcessCacheGuard restore;
    kjit::test::TempDir work;
    kjit::detail::ScopedDriverOverride fake{(kjit::configure_cache(kjit::test::cache_in(work.path() / "cache")), launching_api()), 1};
};

}  // namespace

TEST_CASE("a call under capture loads its module in relaxed mode, makes no synchronisation, and replays",
          "[graph][nvrtc]") {
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel axpb("T x", "T y", "y = 2 * x + 1", "graph_fake_axpb");
    const Array x = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));
    const int loads = state.modules_loaded, syncs = state.synchronize_calls;
    // The kernel's first use is inside the capture: its module is loaded there.
    const Graph g = Graph::capture(s, [&] { axpb.launch({x, y}); });
    CHECK(state.modules_loaded == loads + 1);
    CHECK(state.unsafe_calls_under_capture == 0);
    CHECK(state.synchronize_calls == syncs);
    CHECK(state.captured_nodes == 1);
    CHECK(g.node_count() == 1);
    CHECK(state.thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL);  // the thread's mode given back
    g.launch(s);
    g.launch(s);
    CHECK(state.graph_launches == 2);
    CHECK_THROWS_WITH(Graph().launch(s), Contains("empty Graph"));
}

TEST_CASE("what a capture cannot record fails with an Error saying what to do, and the stream stays usable",
          "[graph][nvrtc]") {
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel axpb("T x", "T y", "y = 2 * x + 1", "graph_fake_refuse");
    const Array x = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));

    // A copy to the host waits for the GPU.
    std::vector<float> host(1000);
    CHECK_THROWS_WITH(Graph::capture(s, [&] { y.copy_to_host(host.data()); }),
                      Contains("Graph::capture failed, and nothing was captured") &&
                          Contains("copying a device array to the host waits for the GPU") &&
                          Contains("after the capture ends"));
    CHECK(state.capturing == nullptr);
    CHECK(state.unsafe_calls_under_capture == 0);  // refused before the driver saw it

    // An output the call makes would be graph memory: held after the calls, it is an Error.
    Array held;
    CHECK_THROWS_WITH(Graph::capture(s, [&] { held = axpb({x})[0]; }),
                      Contains("an array made by a captured call (4000 bytes on cuda:0) is still held") &&
                          Contains("make the outputs before the capture"));
    held = Array();
    // Made and dropped inside: a temporary, which is fine.
    CHECK_NOTHROW(Graph::capture(s, [&] { (void)axpb({x}); }));

    // An exception of the application's own ends the capture too.
    CHECK_THROWS_WITH(Graph::capture(s, [] { throw std::runtime_error("the application's own"); }),
                      Contains("the application's own"));
    CHECK(state.capturing == nullptr);

    // A default stream cannot be captured.
    CHECK_THROWS_WITH(Graph::capture(Stream::legacy_default(Device::cuda(0)), [] {}),
                      Contains("a default stream cannot be captured"));

    // And the stream captures again.
    CHECK(Graph::capture(s, [&] { axpb.launch({x, y}); }).node_count() == 1);
}

TEST_CASE("a capture the driver invalidates says which kind of call did it", "[graph][nvrtc]") {
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const Stream s = Stream::create(Device::cuda(0));
    // A synchronisation of the application's, which the pretend driver refuses and which
    // invalidates the capture as a real one does.
    CHECK_THROWS_WITH(Graph::capture(s, [&] { (void)kjit::detail::driver().cuCtxSynchronize(); }),
                      Contains("cuStreamEndCapture") && Contains("make it before the capture"));
    CHECK(kjit::test::fake_state().capturing == nullptr);
}

TEST_CASE("update with a new capture updates the executable graph in place, or says why it cannot", "[graph][nvrtc]") {
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel axpb("T x, T a", "T y", "y = a * x", "graph_fake_update");
    const Array x = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({1000}, DType::float32, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));
    Graph g = Graph::capture(s, [&] { axpb.launch({x, 2.0f, y}); });
    const int destroyed = state.graphs_destroyed;
    g.update(s, [&] { axpb.launch({x, 3.0f, y}); });
    CHECK(state.exec_updates == 1);
    CHECK(state.graphs_destroyed == destroyed);  // the first graph stays: it names the executable graph's nodes
    CHECK(state.unsafe_calls_under_capture == 0);
    state.exec_update_result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    CHECK_THROWS_WITH(g.update(s, [&] { axpb.launch({x, 3.0f, y}); }),
                      Contains("the graph is unchanged") && Contains("a different number of steps") &&
                          Contains("capture a new Graph instead"));
    CHECK(state.graphs_destroyed == destroyed + 1);  // the capture that did not fit
    CHECK(state.capturing == nullptr);
    CHECK_THROWS_WITH(g.update(s, [] { throw std::runtime_error("the application's own"); }),
                      Contains("Graph::update failed, and nothing was captured") && Contains("the application's own"));
    CHECK_THROWS_WITH(Graph().update(s, [] {}), Contains("empty Graph"));
    CHECK_THROWS_WITH(Graph().update({{x, y}}), Contains("empty Graph"));
    // Replacements that do not fit are refused before the graph is read or changed.
    const Array z = Array::empty({1000}, DType::float32, Device::cuda(0));
    CHECK_THROWS_WITH(g.update({{x, Array::empty({999}, DType::float32, Device::cuda(0))}}),
                      Contains("array 0") && Contains("must have the dtype, shape and strides"));
    CHECK_THROWS_WITH(g.update({{x, z}, {y, z}}), Contains("two replacements overlap in memory"));
    CHECK_THROWS_WITH(g.update({{x, z}, {x, y}}), Contains("arrays 0 and 1 overlap in memory"));
    state.exec_update_result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    g.launch(s);
    CHECK(state.graph_launches == 1);
}

TEST_CASE("prepare loads every variant a call may pick, so calls under capture load nothing", "[graph][nvrtc]") {
    const FakeGpuWithCache gpu;
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel axpb("T x, T a", "T y", "y = a * x + 1", "graph_prepare_axpb");
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "graph_prepare_sumsq");
    const Array x = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array total = Array::empty({}, DType::float32, Device::cuda(0));
    const Array rows = Array::empty({100}, DType::float32, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));

    int loads = state.modules_loaded;
    axpb.prepare({x, 2.0f, y});
    CHECK(state.modules_loaded >= loads + 5);  // small, contiguous and strided (32- and 64-bit), ...
    sumsq.prepare({x, total});
    CHECK(state.modules_loaded >= loads + 5 + 7);  // every strategy, each index width
    loads = state.modules_loaded;
    // Calls of any layout and strategy load nothing more, eager or captured.
    const auto calls = [&] {
        axpb.launch({x, 2.0f, y}, kjit::CallOptions{s});
        axpb.launch({x.transpose(), 3.0f, y.transpose()}, kjit::CallOptions{s});
        axpb.launch({x.slice(1, {0, 1000, 3}), 4.0f, y.slice(1, {0, 1000, 3})}, kjit::CallOptions{s});
        sumsq.launch({x, total}, kjit::ReduceOptions{{s}});
        sumsq.launch({x, rows}, kjit::ReduceOptions{{s}, std::vector<int>{1}});
    };
    calls();  // eager: the reductions' scratch memory is made here
    CHECK(state.modules_loaded == loads);
    const Graph g = Graph::capture(s, calls);
    CHECK(state.modules_loaded == loads);
    CHECK(state.unsafe_calls_under_capture == 0);
    // Arguments a call would refuse are refused the same way.
    CHECK_THROWS_WITH(axpb.prepare({x}), Contains("takes 2 inputs"));
}

TEST_CASE("a prepared scan loads its four entry points, and its calls under capture load nothing", "[graph][scan][nvrtc]") {
    const FakeGpuWithCache gpu;
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const kjit::ScanKernel running("T x", "T y", "a + b", "0", "graph_prepare_scan");
    const Array x = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array flat = Array::empty({100000}, DType::float32, Device::cuda(0));
    const Array offsets = Array::empty({3}, DType::int64, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));
    int loads = state.modules_loaded;
    running.prepare({x, y});
    CHECK(state.modules_loaded == loads + 4);  // scan and scan_segments, 32- and 64-bit
    loads = state.modules_loaded;
    const auto calls = [&] {
        running.launch({x, y}, kjit::ScanOptions{{s}, 1, false});
        running.launch({x, flat}, kjit::ScanOptions{{s}, std::nullopt, true});
        running.scan_segments({x.reshape({100000}), flat}, offsets, kjit::ScanOptions{{s}});
    };
    calls();  // eager: the workspace is made here
    CHECK(state.modules_loaded == loads);
    const Graph g = Graph::capture(s, calls);
    CHECK(state.modules_loaded == loads);
    CHECK(state.unsafe_calls_under_capture == 0);
}

TEST_CASE("kjit::warm loads a manifest's kernels ahead, so that calls and a capture compile and load nothing",
          "[graph][nvrtc]") {
    const FakeGpuWithCache gpu;
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const std::string manifest = (gpu.work.path() / "manifest.json").string();
    {
        std::ofstream out(manifest);
        out << R"({"kernels": [
            {"kind": "elementwise", "name": "warm_axpb", "in": "T x, T a", "out": "T y", "op": "y = a * x + 1",
             "scalars": ["a"], "types": [{"T": "float32"}]},
            {"kind": "reduction", "name": "warm_sumsq", "in": "T x", "out": "T y", "map": "x * x", "reduce": "a + b",
             "post": "y = a", "identity": "0", "types": [{"T": "float32"}]},
            {"kind": "elementwise", "name": "warm_bad", "in": "T x", "out": "T y", "op": "y = x +", "types": [{"T": "float32"}]}]})";
    }
    int loads = state.modules_loaded;
    const kjit::WarmResult warmed = kjit::warm(manifest, Device::cuda(0));
    CHECK(warmed.modules >= 5 + 7);  // the elementwise variants, every reduction strategy
    CHECK(warmed.compiled >= 12);  // nothing in the new cache yet
    CHECK(state.modules_loaded >= loads + 12);
    CHECK(warmed.modules == static_cast<std::size_t>(state.modules_loaded - loads));  // what it says it loaded, it loaded
    REQUIRE(warmed.failures.size() == 1);  // the kernel that does not parse, named
    CHECK_THAT(warmed.failures[0], Contains("warm_bad"));

    // Kernels of the same definitions, made afresh as an application would, called as the
    // manifest says ("a" a scalar): no compile, no load.
    const std::uint64_t compiles = kjit::cache_stats().compiles;
    loads = state.modules_loaded;
    const ElementwiseKernel axpb("T x, T a", "T y", "y = a * x + 1", "warm_axpb");
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "warm_sumsq");
    const Array x = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array y = Array::empty({100, 1000}, DType::float32, Device::cuda(0));
    const Array total = Array::empty({}, DType::float32, Device::cuda(0));
    const Array rows = Array::empty({100}, DType::float32, Device::cuda(0));
    const Stream s = Stream::create(Device::cuda(0));
    const auto calls = [&] {
        axpb.launch({x, 2.0f, y}, kjit::CallOptions{s});
        axpb.launch({x.transpose(), 3.0f, y.transpose()}, kjit::CallOptions{s});
        sumsq.launch({x, total}, kjit::ReduceOptions{{s}});
        sumsq.launch({x, rows}, kjit::ReduceOptions{{s}, std::vector<int>{1}});
    };
    calls();  // eager: the reductions' scratch memory is made here
    const Graph g = Graph::capture(s, calls);
    CHECK(state.modules_loaded == loads);
    CHECK(kjit::cache_stats().compiles == compiles);
    CHECK(state.unsafe_calls_under_capture == 0);
    CHECK_THROWS_AS(kjit::warm((gpu.work.path() / "missing.json").string(), Device::cuda(0)), kjit::IoError);
}

// ---------------------------------------------------------------------------------------------
// On the GPU.
// ---------------------------------------------------------------------------------------------

TEST_CASE("a captured sequence replays to the eager results, and follows new inputs", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "graph_axpb");
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "graph_sumsq");
    const std::int64_t n = 1 << 16;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {n});
    const kjit::test::DeviceData a = kjit::test::random_device(DType::float32, {64, 64});
    const kjit::test::DeviceData b = kjit::test::random_device(DType::float32, {64, 64});
    const Array y = kjit::test::poisoned(DType::float32, {n}, s);
    const Array total = kjit::test::poisoned(DType::float32, kjit::Shape{}, s);
    const Array row_sums = kjit::test::poisoned(DType::float32, {n / 256}, s);
    const Array product = kjit::test::poisoned(DType::float32, {64, 64}, s);
    const Array product_sum = kjit::test::poisoned(DType::float32, kjit::Shape{}, s);
    const auto calls = [&] {
        axpb.launch({x.device, 2.0f, 1.0f, y}, kjit::CallOptions{s});
        sumsq.launch({y, total}, kjit::ReduceOptions{{s}});
        kjit::sum(y.reshape({n / 256, 256}), kjit::ReduceOptions{{s}, std::vector<int>{1}}, row_sums);
        kjit::matmul(a.device, b.device, product, {.stream = s});
        kjit::sum(product, kjit::ReduceOptions{{s}}, product_sum);
    };
    // Eager first: workspaces and handles are made outside the capture.
    calls();
    const auto eager = [&] {
        return std::vector<std::vector<unsigned char>>{kjit::test::to_host(y), kjit::test::to_host(total),
                                                       kjit::test::to_host(row_sums), kjit::test::to_host(product),
                                                       kjit::test::to_host(product_sum)};
    };
    const auto want = eager();
    for (const Array& out : {y, total, row_sums, product, product_sum}) out.copy_from_host(std::vector<unsigned char>(out.nbytes(), 0xff).data(), s);

    const Graph g = Graph::capture(s, calls);
    CHECK(g.node_count() >= 5);
    g.launch(s);
    s.synchronize();
    CHECK(eager() == want);  // the same bits as the eager calls

    // New contents of the same input: the replay follows them.
    const std::vector<unsigned char> fresh = kjit::test::random_elements(DType::float32, n);
    x.device.copy_from_host(fresh.data(), s);
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) {
              return 2.0 * kjit::test::element_value(fresh, DType::float32, k).real() + 1.0;
          }, 1e-6, 1e-6) == 0);
    calls();  // eager again on the new input: the replay wrote what these write
    const auto again = eager();
    g.launch(s);
    s.synchronize();
    CHECK(eager() == again);

    const kjit::test::TempDir dir;
    g.debug_dot((dir.path() / "g.dot").string());
    std::ifstream dot(dir.path() / "g.dot");
    std::stringstream text;
    text << dot.rdbuf();
    CHECK(text.str().find("digraph") != std::string::npos);
}

TEST_CASE("a kernel's first use inside a capture loads its module without breaking the capture", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    // A kernel no other test uses: its module is compiled (or read from the cache) and loaded
    // during the capture.
    const ElementwiseKernel fresh("T x", "T y", "y = x * x - 3", "graph_first_use_in_capture");
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {5000});
    const Array y = kjit::test::poisoned(DType::float64, {5000}, s);
    const Graph g = Graph::capture(s, [&] { fresh.launch({x.device, y}, kjit::CallOptions{s}); });
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) {
              const double v = kjit::test::element_value(x.host, DType::float64, k).real();
              return v * v - 3;
          }, 1e-15, 1e-15) == 0);
}

TEST_CASE("on the GPU: a copy to the host under capture is refused and the stream works after", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {100});
    std::vector<float> host(100);
    CHECK_THROWS_WITH(Graph::capture(s, [&] { x.device.copy_to_host(host.data(), s); }),
                      Contains("copying a device array to the host waits for the GPU"));
    // A first reduction on a new stream under capture would allocate its workspace: refused. (A
    // whole-array sum of more than kSmallReduceElements elements needs one; fewer take one block.)
    const kjit::test::DeviceData big = kjit::test::random_device(DType::float32, {100000});
    const Stream other = Stream::create();
    const Array total = kjit::test::poisoned(DType::float32, kjit::Shape{}, other);
    CHECK_THROWS_WITH(Graph::capture(other, [&] { kjit::sum(big.device, kjit::ReduceOptions{{other}}, total); }),
                      Contains("workspace") && Contains("before the capture"));
    kjit::sum(big.device, kjit::ReduceOptions{{other}}, total);  // eager: works, and makes the workspace
    const Graph g = Graph::capture(other, [&] { kjit::sum(big.device, kjit::ReduceOptions{{other}}, total); });
    g.launch(other);
    other.synchronize();
    double want = 0;
    for (std::size_t k = 0; k < 100000; ++k) want += kjit::test::element_value(big.host, DType::float32, k).real();
    CHECK(kjit::test::mismatches(total, [&](std::size_t) { return want; }, 1e-5, 1e-5) == 0);
}

TEST_CASE("raw kernels, built-in argmax and segmented reductions replay to their eager bits", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::RawKernel twice(R"(
extern "C" __global__ void graph_twice(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
})", "graph_twice");
    const kjit::ReductionKernel seg_sum("T x", "T y", "x", "a + b", "y = a", "0", "graph_seg_sum");
    const int n = 10007;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {n});
    const Array y = kjit::test::poisoned(DType::float32, {n}, s);
    const Array where = kjit::test::poisoned(DType::int64, {}, s);
    const Array sums = kjit::test::poisoned(DType::float32, {3}, s);
    const std::vector<std::int64_t> offsets{0, 5, 5000, n};
    const Array dev_offsets = Array::from_host(offsets.data(), DType::int64, {4}, Device::cuda(0), s);
    const auto calls = [&] {
        twice((n + 255) / 256, 256, {x.device, y, n}, kjit::LaunchConfig{.stream = s});
        kjit::argmax(y, kjit::ReduceOptions{{s}}, where);
        kjit::segmented_reduce(seg_sum, {y, sums}, dev_offsets, kjit::CallOptions{s});
    };
    calls();
    const auto results = [&] {
        return std::vector<std::vector<unsigned char>>{kjit::test::to_host(y), kjit::test::to_host(where),
                                                       kjit::test::to_host(sums)};
    };
    const auto want = results();
    for (const Array& out : {y, where, sums}) out.copy_from_host(std::vector<unsigned char>(out.nbytes(), 0xff).data(), s);
    const Graph g = Graph::capture(s, calls);
    g.launch(s);
    s.synchronize();
    CHECK(results() == want);
}

TEST_CASE("a graph keeps the memory of the arrays its calls used until it goes", "[graph][nvrtc]") {
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    kjit::test::FakeDriverState& state = kjit::test::fake_state();
    const ElementwiseKernel axpb("T x", "T y", "y = 2 * x + 1", "graph_fake_keep");
    const Stream s = Stream::create(Device::cuda(0));
    void* x_memory = nullptr;
    int frees = 0;
    {
        Graph g;
        {
            const Array x = Array::empty({1000}, DType::float32, Device::cuda(0));
            const Array y = Array::empty({1000}, DType::float32, Device::cuda(0));
            x_memory = x.data();
            g = Graph::capture(s, [&] { axpb.launch({x, y}); });
        }
        // The arrays are gone, their memory is not: the graph holds it.
        CHECK(state.live.count(reinterpret_cast<CUdeviceptr>(x_memory)) == 1);
        g.launch(s);
        frees = state.free_calls;
    }
    CHECK(state.free_calls == frees + 2);
    CHECK(state.live.count(reinterpret_cast<CUdeviceptr>(x_memory)) == 0);
}

TEST_CASE("a graph moved to other arrays replays to the eager results on them, and refuses what does not match",
          "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "graph_update_axpb");
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "graph_update_sumsq");
    const kjit::RawKernel twice(R"(
extern "C" __global__ void graph_update_twice(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
})", "graph_update_twice");
    const std::int64_t n = 1 << 16;
    // One set of arrays per binding: inputs random, outputs poisoned.
    struct Set {
        kjit::test::DeviceData x, a, b;
        Array y, doubled, total, row_sums, product, where;
    };
    const auto make_set = [&] {
        return Set{kjit::test::random_device(DType::float32, {n}), kjit::test::random_device(DType::float32, {64, 64}),
                   kjit::test::random_device(DType::float32, {64, 64}), kjit::test::poisoned(DType::float32, {n}, s),
                   kjit::test::poisoned(DType::float32, {n}, s), kjit::test::poisoned(DType::float32, kjit::Shape{}, s),
                   kjit::test::poisoned(DType::float32, {n / 256}, s), kjit::test::poisoned(DType::float32, {64, 64}, s),
                   kjit::test::poisoned(DType::int64, kjit::Shape{}, s)};
    };
    const auto calls_on = [&](const Set& t, float scale) {
        return [&t, &s, &axpb, &sumsq, &twice, scale, n] {
            axpb.launch({t.x.device, scale, 1.0f, t.y}, kjit::CallOptions{s});
            twice(static_cast<unsigned>((n + 255) / 256), 256, {t.y, t.doubled, static_cast<int>(n)}, kjit::LaunchConfig{.stream = s});
            sumsq.launch({t.doubled, t.total}, kjit::ReduceOptions{{s}});
            kjit::sum(t.y.reshape({n / 256, 256}), kjit::ReduceOptions{{s}, std::vector<int>{1}}, t.row_sums);
            kjit::matmul(t.a.device, t.b.device, t.product, {.stream = s});
            kjit::argmax(t.doubled, kjit::ReduceOptions{{s}}, t.where);
        };
    };
    const auto outputs = [](const Set& t) {
        return std::vector<std::vector<unsigned char>>{kjit::test::to_host(t.y), kjit::test::to_host(t.doubled),
                                                       kjit::test::to_host(t.total), kjit::test::to_host(t.row_sums),
                                                       kjit::test::to_host(t.product), kjit::test::to_host(t.where)};
    };
    const auto poison = [&](const Set& t) {
        for (const Array& out : {t.y, t.doubled, t.total, t.row_sums, t.product, t.where})
            out.copy_from_host(std::vector<unsigned char>(out.nbytes(), 0xff).data(), s);
    };
    const Set one = make_set(), two = make_set();
    // The eager results on the second set, then its outputs poisoned again.
    calls_on(two, 2.0f)();
    const auto want_two = outputs(two);
    poison(two);
    const auto poisoned_one = outputs(one);

    Graph g = Graph::capture(s, calls_on(one, 2.0f));
    g.update({{one.x.device, two.x.device}, {one.a.device, two.a.device}, {one.b.device, two.b.device}, {one.y, two.y},
              {one.doubled, two.doubled}, {one.total, two.total}, {one.row_sums, two.row_sums}, {one.product, two.product},
              {one.where, two.where}});
    g.launch(s);
    s.synchronize();
    CHECK(outputs(two) == want_two);      // the same bits as the eager calls on the second set
    CHECK(outputs(one) == poisoned_one);  // and nothing written to the first

    // Back to the first set, named by the arrays the graph uses now.
    calls_on(one, 2.0f)();
    const auto want_one = outputs(one);
    poison(one);
    g.update({{two.x.device, one.x.device}, {two.a.device, one.a.device}, {two.b.device, one.b.device}, {two.y, one.y},
              {two.doubled, one.doubled}, {two.total, one.total}, {two.row_sums, one.row_sums}, {two.product, one.product},
              {two.where, one.where}});
    g.launch(s);
    s.synchronize();
    CHECK(outputs(one) == want_one);

    // Another scale: a new capture updates the executable graph in place.
    calls_on(one, -3.0f)();
    const auto want_scaled = outputs(one);
    poison(one);
    g.update(s, calls_on(one, -3.0f));
    g.launch(s);
    s.synchronize();
    CHECK(outputs(one) == want_scaled);
    // Still movable to arrays after that.
    g.update({{one.x.device, two.x.device}, {one.y, two.y}});
    poison(two);
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::mismatches(two.y, [&](std::size_t k) {
              return -3.0 * kjit::test::element_value(two.x.host, DType::float32, k).real() + 1.0;
          }, 1e-6, 1e-6) == 0);

    // What does not match is refused, and the graph is unchanged.
    const Array other_shape = kjit::test::poisoned(DType::float32, {n / 2}, s);
    CHECK_THROWS_WITH(g.update({{two.y, other_shape}}), Contains("must have the dtype, shape and strides"));
    const Array wide = kjit::test::poisoned(DType::float32, {n + 1}, s);
    CHECK_THROWS_WITH(g.update({{two.y, wide.slice(0, kjit::Slice{1, n + 1})}}), Contains("256-byte boundary"));
    CHECK_THROWS_WITH(g.update({{one.x.device, two.x.device}}), Contains("is not one the graph's kernels use now"));
    CHECK_THROWS_WITH(g.update({{two.y, one.y}, {two.y, one.doubled}}), Contains("overlap in memory"));
    // A new capture that launches other kernels does not fit the graph.
    CHECK_THROWS_WITH(g.update(s, [&] { axpb.launch({one.x.device, 2.0f, 1.0f, one.y}, kjit::CallOptions{s}); }),
                      Contains("the graph is unchanged") && Contains("capture a new Graph instead"));
    poison(two);
    g.launch(s);
    s.synchronize();
    CHECK(kjit::test::mismatches(two.y, [&](std::size_t k) {
              return -3.0 * kjit::test::element_value(two.x.host, DType::float32, k).real() + 1.0;
          }, 1e-6, 1e-6) == 0);
}

TEST_CASE("grouping sorted keys into outputs of the largest size is captured, and a replay follows new keys",
          "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const kjit::ReductionKernel total("T x", "T y", "x", "a + b", "y = a", "0", "graph_group_total");
    const std::int64_t n = 5000;
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {n});
    const Array keys = Array::empty({n}, DType::int32, Device::cuda(0), s);
    const Array offsets = kjit::test::poisoned(DType::int64, {n + 1}, s);
    const Array group_keys = kjit::test::poisoned(DType::int32, {n}, s);
    const Array count = kjit::test::poisoned(DType::int64, kjit::Shape{}, s);
    const Array sums = kjit::test::poisoned(DType::float64, {n}, s);
    // Sorted keys with runs of random lengths (1..100): `groups` runs.
    const auto fill_keys = [&] {
        std::vector<std::int32_t> host(static_cast<std::size_t>(n));
        std::uniform_int_distribution<int> length(1, 100);
        std::int32_t key = 0;
        for (std::size_t i = 0; i < host.size();) {
            const auto run = static_cast<std::size_t>(length(kjit::test::rng()));
            for (std::size_t j = 0; j < run && i < host.size(); ++j) host[i++] = key;
            key += 1 + length(kjit::test::rng()) % 3;
        }
        keys.copy_from_host(host.data(), s);
        return host;
    };
    const auto calls = [&] {
        kjit::group_sorted_keys(keys, offsets, group_keys, count, s);
        kjit::segmented_reduce(total, {x.device, sums}, offsets, kjit::CallOptions{s});
    };
    const auto check = [&](const std::vector<std::int32_t>& host_keys) {
        std::vector<double> want;
        std::vector<std::int32_t> want_keys;
        for (std::size_t i = 0; i < host_keys.size(); ++i) {
            if (i == 0 || host_keys[i] != host_keys[i - 1]) {
                want.push_back(0);
                want_keys.push_back(host_keys[i]);
            }
            want.back() += kjit::test::element_value(x.host, DType::float64, i).real();
        }
        std::int64_t got_count = -1;
        count.copy_to_host(&got_count, s);
        REQUIRE(got_count == static_cast<std::int64_t>(want.size()));
        want.resize(static_cast<std::size_t>(n), 0.0);  // the empty groups past the count: the identity
        CHECK(kjit::test::mismatches(sums, [&](std::size_t k) { return want[k]; }, 1e-12, 1e-12) == 0);
        std::vector<std::int32_t> got_keys(static_cast<std::size_t>(n));
        group_keys.copy_to_host(got_keys.data(), s);
        got_keys.resize(want_keys.size());
        CHECK(got_keys == want_keys);
    };
    (void)fill_keys();
    calls();  // eager first: the reduction's workspace is made outside the capture
    const Graph g = Graph::capture(s, calls);
    for (int replay = 0; replay < 3; ++replay) {
        const std::vector<std::int32_t> host_keys = fill_keys();  // another number of groups each time
        g.launch(s);
        s.synchronize();
        check(host_keys);
    }
}

TEST_CASE("a prepared kernel and reduction capture and replay in any layout on the GPU", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    const ElementwiseKernel axpb("T x, T a", "T y", "y = a * x + 1", "graph_prepared_axpb_gpu");
    const kjit::ReductionKernel sumsq("T x", "T y", "x * x", "a + b", "y = a", "0", "graph_prepared_sumsq_gpu");
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float64, {300, 200});
    const Array y = kjit::test::poisoned(DType::float64, {200, 300}, s);
    const Array rows = kjit::test::poisoned(DType::float64, {300}, s);
    axpb.prepare({x.device, 2.0, y});
    sumsq.prepare({x.device, rows}, kjit::ReduceOptions{{s}});
    sumsq.launch({x.device, rows}, kjit::ReduceOptions{{s}, std::vector<int>{1}});  // its scratch memory
    const Graph g = Graph::capture(s, [&] {
        axpb.launch({x.device.transpose(), 2.0, y}, kjit::CallOptions{s});  // the strided variant, prepared
        sumsq.launch({x.device, rows}, kjit::ReduceOptions{{s}, std::vector<int>{1}});
    });
    for (const Array& out : {y, rows}) out.copy_from_host(std::vector<unsigned char>(out.nbytes(), 0xff).data(), s);
    g.launch(s);
    s.synchronize();
    const auto at = [&](std::size_t r, std::size_t c) { return kjit::test::element_value(x.host, DType::float64, r * 200 + c).real(); };
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 2.0 * at(k % 300, k / 300) + 1; }, 1e-15, 1e-15) == 0);
    CHECK(kjit::test::mismatches(rows, [&](std::size_t r) {
              double sum = 0;
              for (std::size_t c = 0; c < 200; ++c) sum += at(r, c) * at(r, c);
              return sum;
          }, 1e-12, 1e-12) == 0);
}

TEST_CASE("a cuBLAS product and every built-in reduction replay to their eager bits, and move to other arrays",
          "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const Stream s = Stream::create();
    // 256 x 128 @ 128 x 192: above the small-product limit (64^3), so cuBLAS's GEMM.
    struct Set {
        kjit::test::DeviceData a, b, x;
        Array c, sums, prods, mins, maxs, means, argmins, argmax_all;
    };
    const auto make_set = [&] {
        return Set{kjit::test::random_device(DType::float32, {256, 128}), kjit::test::random_device(DType::float32, {128, 192}),
                   kjit::test::random_device(DType::float64, {64, 500}), kjit::test::poisoned(DType::float32, {256, 192}, s),
                   kjit::test::poisoned(DType::float64, {500}, s), kjit::test::poisoned(DType::float64, {64}, s),
                   kjit::test::poisoned(DType::float64, {500}, s), kjit::test::poisoned(DType::float64, {64}, s),
                   kjit::test::poisoned(DType::float64, {500}, s), kjit::test::poisoned(DType::int64, {64}, s),
                   kjit::test::poisoned(DType::int64, kjit::Shape{}, s)};
    };
    const auto calls_on = [&s](const Set& t) {
        return [&t, &s] {
            const kjit::ReduceOptions axis0{{s}, std::vector<int>{0}}, axis1{{s}, std::vector<int>{1}}, all{{s}};
            kjit::matmul(t.a.device, t.b.device, t.c, {.stream = s});
            kjit::sum(t.x.device, axis0, t.sums);
            kjit::prod(t.x.device, axis1, t.prods);
            kjit::min(t.x.device, axis0, t.mins);
            kjit::max(t.x.device, axis1, t.maxs);
            kjit::mean(t.x.device, axis0, t.means);
            kjit::argmin(t.x.device, axis1, t.argmins);
            kjit::argmax(t.x.device, all, t.argmax_all);
        };
    };
    const auto outputs = [](const Set& t) {
        std::vector<std::vector<unsigned char>> out;
        for (const Array& a : {t.c, t.sums, t.prods, t.mins, t.maxs, t.means, t.argmins, t.argmax_all}) out.push_back(kjit::test::to_host(a));
        return out;
    };
    const auto poison = [&](const Set& t) {
        for (const Array& a : {t.c, t.sums, t.prods, t.mins, t.maxs, t.means, t.argmins, t.argmax_all})
            a.copy_from_host(std::vector<unsigned char>(a.nbytes(), 0xff).data(), s);
    };
    const Set one = make_set(), two = make_set();
    calls_on(one)();  // eager first: cuBLAS's handle and workspace, the reductions' scratch memory
    const auto want_one = outputs(one);
    calls_on(two)();
    const auto want_two = outputs(two);
    poison(one);
    poison(two);
    Graph g = Graph::capture(s, calls_on(one));
    g.launch(s);
    s.synchronize();
    CHECK(outputs(one) == want_one);
    g.update({{one.a.device, two.a.device}, {one.b.device, two.b.device}, {one.x.device, two.x.device}, {one.c, two.c},
              {one.sums, two.sums}, {one.prods, two.prods}, {one.mins, two.mins}, {one.maxs, two.maxs}, {one.means, two.means},
              {one.argmins, two.argmins}, {one.argmax_all, two.argmax_all}});
    g.launch(s);
    s.synchronize();
    CHECK(outputs(two) == want_two);
}

TEST_CASE("kjit::warm makes a manifest's kernels ready on the GPU: their calls compile nothing and compute right", "[graph][gpu]") {
    KJIT_REQUIRE_GPU();
    const kjit::test::TempDir work;
    // A constant of this run's seed: a kernel no cache holds yet.
    const std::string constant = std::to_string(kjit::test::seed() % 1000 + 1) + ".0f";
    const std::string op = "y = a * x + " + constant;
    const std::string manifest = (work.path() / "manifest.json").string();
    {
        std::ofstream out(manifest);
        out << R"({"kernels": [{"kind": "elementwise", "name": "warm_gpu", "in": "T x, T a", "out": "T y", "op": ")" << op
            << R"(", "scalars": ["a"], "types": [{"T": "float32"}]}]})";
    }
    const kjit::WarmResult warmed = kjit::warm(manifest, Device::cuda(0));
    CHECK(warmed.failures.empty());
    CHECK(warmed.compiled >= 1);
    const std::uint64_t compiles = kjit::cache_stats().compiles;
    const ElementwiseKernel k("T x, T a", "T y", op, "warm_gpu");
    const kjit::test::DeviceData x = kjit::test::random_device(DType::float32, {5000});
    const Array y = kjit::test::poisoned(DType::float32, {5000});
    k.launch({x.device, 3.0f, y});
    k.launch({x.device.slice(0, {0, 5000, 2}), 3.0f, y.slice(0, {0, 5000, 2})});  // strided: another variant, loaded too
    CHECK(kjit::cache_stats().compiles == compiles);
    const double add = std::stod(constant);
    CHECK(kjit::test::mismatches(y, [&](std::size_t i) { return 3.0 * kjit::test::element_value(x.host, DType::float32, i).real() + add; },
                                 1e-6, 1e-6) == 0);
}
