// RawKernel launches checked on a pretend driver, no GPU needed: argument packing, parameter
// checks against the kernel's declaration, shared memory limits, streams, missing kernels, launch
// attributes (clusters, cooperative grids, the carveout), function attributes, module globals.
#include "test_support.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "fake_driver.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/driver.hpp"

using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;
using kjit::Array;
using kjit::DType;
using kjit::RawKernel;
using kjit::RawModule;
using kjit::RawModuleOptions;
using Catch::Matchers::Contains;

// GCC 12 warns about designated initializers that leave out members with default initializers
// ({.stream = s}), which is how LaunchConfig is meant to be written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

// What the pretend kernel declares and what launches it saw.
struct FakeKernel {
    std::vector<std::size_t> param_sizes{4, 8, 8, 8};  // (float, const float*, double, long long)
    int max_dynamic_shared = 48 * 1024;
    int static_shared = 1024;
    int set_attribute_calls = 0;
    // Other attributes the kernel reports, and those the driver does not know (INVALID_VALUE).
    std::map<CUfunction_attribute, int> attributes;
    std::vector<CUfunction_attribute> unknown;
    // What cuFuncSetAttribute set besides the dynamic shared memory limit, in order.
    std::vector<std::pair<CUfunction_attribute, int>> set;
    std::vector<std::string> looked_up;
    struct Launch {
        unsigned grid[3], block[3], shared;
        CUstream stream;
        std::vector<std::vector<unsigned char>> params;
    };
    std::vector<Launch> launches;     // by cuLaunchKernel
    std::vector<Launch> ex_launches;  // by cuLaunchKernelEx (its attributes: fake_state().last_ex_attributes)
};
FakeKernel g_fake;
decltype(kjit::detail::DriverApi::cuLaunchKernelEx) g_recording_ex = nullptr;  // the fake driver's

FakeKernel::Launch launch_of(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shared, CUstream stream, void** params) {
    FakeKernel::Launch l{{gx, gy, gz}, {bx, by, bz}, shared, stream, {}};
    for (std::size_t k = 0; k < g_fake.param_sizes.size(); ++k) {
        const auto* p = static_cast<const unsigned char*>(params[k]);
        l.params.emplace_back(p, p + g_fake.param_sizes[k]);
    }
    return l;
}
const CUfunction kFakeFunction = reinterpret_cast<CUfunction>(std::uintptr_t{0x7000});

// The fake driver plus what loading and launching a kernel needs, for an sm_90 GPU with 1024
// threads per block and 227 KiB of shared memory per block.
kjit::detail::DriverApi fake_driver_with_kernels() {
    kjit::detail::DriverApi api = kjit::test::make_fake_sm90_driver();
    g_fake = FakeKernel{};
    api.cuModuleGetFunction = [](CUfunction* f, CUmodule, const char* name) {
        g_fake.looked_up.emplace_back(name);
        if (std::string(name) != "fake_target") return CUDA_ERROR_NOT_FOUND;
        *f = kFakeFunction;
        return CUDA_SUCCESS;
    };
    api.cuFuncGetParamInfo = [](CUfunction, std::size_t index, std::size_t* offset, std::size_t* size) {
        if (index >= g_fake.param_sizes.size()) return CUDA_ERROR_INVALID_VALUE;
        *offset = 0;
        *size = g_fake.param_sizes[index];
        return CUDA_SUCCESS;
    };
    api.cuFuncGetAttribute = [](int* v, CUfunction_attribute a, CUfunction) {
        if (std::find(g_fake.unknown.begin(), g_fake.unknown.end(), a) != g_fake.unknown.end())
            return CUDA_ERROR_INVALID_VALUE;
        switch (a) {
            case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = g_fake.max_dynamic_shared; break;
            case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = g_fake.static_shared; break;
            case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
            default: *v = g_fake.attributes.count(a) != 0 ? g_fake.attributes[a] : 0;
        }
        return CUDA_SUCCESS;
    };
    api.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute a, int v) {
        if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
            ++g_fake.set_attribute_calls;
            g_fake.max_dynamic_shared = v;
            return CUDA_SUCCESS;
        }
        if (a != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT &&
            a != CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)
            return CUDA_ERROR_INVALID_VALUE;
        g_fake.set.emplace_back(a, v);
        g_fake.attributes[a] = v;
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream stream, void** params, void**) {
        if (1ull * bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
        if (shared > static_cast<unsigned>(g_fake.max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
        g_fake.launches.push_back(launch_of(gx, gy, gz, bx, by, bz, shared, stream, params));
        return CUDA_SUCCESS;
    };
    g_recording_ex = api.cuLaunchKernelEx;
    api.cuLaunchKernelEx = [](const CUlaunchConfig* c, CUfunction f, void** params, void** extra) {
        g_fake.ex_launches.push_back(launch_of(c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                                               c->blockDimZ, c->sharedMemBytes, c->hStream, params));
        return g_recording_ex(c, f, params, extra);
    };
    return api;
}

template <class T>
std::vector<unsigned char> bytes_of(T v) {
    std::vector<unsigned char> b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
}

// Compiled for real (NVRTC), loaded and launched on the pretend driver. The source is used by no
// GPU test: the module registry keeps the pretend module under its key for the process.
const char* const kFakeTarget =
    "// compiled for the pretend driver of raw_kernel_test.cpp\n"
    "extern \"C\" __global__ void fake_target(float a, const float* x, double b, long long n) {}\n";

}  // namespace

TEST_CASE("a launch packs arrays as device pointers and scalars as their bytes", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({100}, DType::float32, kjit::Device::cuda(0));
    const Array view = x.slice(0, {10, std::nullopt, 2});  // starts at element 10

    k({3, 2, 1}, 128, {2.5f, view, 1.25, std::int64_t{-7}});
    REQUIRE(g_fake.launches.size() == 1);
    const FakeKernel::Launch& l = g_fake.launches[0];
    CHECK(l.grid[0] == 3);
    CHECK(l.grid[1] == 2);
    CHECK(l.grid[2] == 1);
    CHECK(l.block[0] == 128);
    CHECK(l.block[1] == 1);
    CHECK(l.shared == 0);
    CHECK(l.stream == nullptr);  // the thread's current stream: legacy default
    CHECK(l.params[0] == bytes_of(2.5f));
    CHECK(l.params[1] == bytes_of(static_cast<const char*>(x.data()) + 10 * 4));
    CHECK(l.params[2] == bytes_of(1.25));
    CHECK(l.params[3] == bytes_of(std::int64_t{-7}));
    CHECK(g_fake.looked_up == std::vector<std::string>{"fake_target"});
    k({3, 2, 1}, 128, {2.5f, view, 1.25, std::int64_t{-7}});
    CHECK(g_fake.looked_up.size() == 1);  // the warm path asks the driver nothing but the launch
    CHECK(k.attributes().parameter_sizes == std::vector<std::size_t>{4, 8, 8, 8});

    // A scalar of another size than the parameter, an array for a scalar, a wrong count: TypeError
    // naming the argument, before anything runs.
    const std::size_t launched = g_fake.launches.size();
    CHECK_THROWS_AS(k(1, 1, {2.5, x, 1.25, std::int64_t{1}}), kjit::TypeError);
    CHECK_THROWS_WITH(k(1, 1, {2.5, x, 1.25, std::int64_t{1}}),
                      Contains("argument 0 is 2.5 (float64), 8 bytes") && Contains("parameter 0 takes 4 bytes"));
    CHECK_THROWS_WITH(k(1, 1, {2.5f, x, 1.25, 1}), Contains("argument 3 is 1 (int32), 4 bytes"));
    CHECK_THROWS_WITH(k(1, 1, {x, x, 1.25, std::int64_t{1}}), Contains("argument 0 is an array"));
    CHECK_THROWS_WITH(k(1, 1, {2.5f, x, 1.25}), Contains("takes 4 arguments, but 3 were given"));
    CHECK(g_fake.launches.size() == launched);

    // A grid with an extent 0 is no work.
    CHECK_NOTHROW(k({0, 1, 1}, 128, {2.5f, x, 1.25, std::int64_t{1}}));
    CHECK(g_fake.launches.size() == launched);
    // A block the kernel cannot take: the driver's error, with the reason.
    CHECK_THROWS_AS(k(1, 2048, {2.5f, x, 1.25, std::int64_t{1}}), kjit::CudaError);
    CHECK_THROWS_WITH(k(1, 2048, {2.5f, x, 1.25, std::int64_t{1}}),
                      Contains("block (2048, 1, 1)") && Contains("at most 1024 per block"));
}

TEST_CASE("a launch on a stream records it on pool buffers", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const kjit::Stream s = kjit::Stream::create();
    const Array x = Array::empty({100}, DType::float32, kjit::Device::cuda(0));  // on the default stream
    CHECK(x.buffer()->last_stream() == kjit::Stream());
    k(1, 32, {1.0f, x, 2.0, std::int64_t{100}}, {.stream = s});
    CHECK(g_fake.launches.back().stream == s.handle());
    CHECK(x.buffer()->last_stream() == s);
    // Borrowed memory is not kjit's to free: nothing recorded.
    float dummy = 0;
    const Array borrowed = Array::wrap(&dummy, DType::float32, {1}, kjit::Device::cuda(0));
    k(1, 32, {1.0f, borrowed, 2.0, std::int64_t{1}}, {.stream = s});
    CHECK(borrowed.buffer()->last_stream() == kjit::Stream());
}

TEST_CASE("dynamic shared memory above the default raises the kernel's limit, once", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({1}, DType::float32, kjit::Device::cuda(0));
    k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 40 * 1024});
    CHECK(g_fake.set_attribute_calls == 0);
    k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 96 * 1024});
    CHECK(g_fake.set_attribute_calls == 1);
    CHECK(g_fake.max_dynamic_shared == 96 * 1024);
    CHECK(g_fake.launches.back().shared == 96 * 1024);
    k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 96 * 1024});
    k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 64 * 1024});
    CHECK(g_fake.set_attribute_calls == 1);
    CHECK(k.attributes().max_dynamic_shared_bytes == 96 * 1024);
    // Another kernel object sharing the CUfunction never lowers the limit.
    const RawKernel same = k.module().get_function("fake_target");
    same(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 64 * 1024});
    CHECK(g_fake.set_attribute_calls == 1);
    CHECK(g_fake.max_dynamic_shared == 96 * 1024);
    // More than the device has (227 KiB, less the kernel's static 1 KiB): an Error with the numbers.
    CHECK_THROWS_WITH(k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 232448}),
                      Contains("asks for 232448 bytes of dynamic shared memory") && Contains("has 232448 per block") &&
                          Contains("static shared memory takes 1024"));
    k(1, 32, {1.0f, x, 2.0, std::int64_t{1}}, {.shared_mem_bytes = 232448 - 1024});
    CHECK(g_fake.max_dynamic_shared == 232448 - 1024);
}

TEST_CASE("a kernel the module lacks is an Error naming the name expressions", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawModule m(kFakeTarget, {.name_expressions = {"fake_target"}, .name = "fake_module"});
    const RawKernel absent = m.get_function("absent");
    const Array x = Array::empty({1}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(absent(1, 1, {1.0f, x, 2.0, std::int64_t{1}}),
                      Contains("raw module 'fake_module' has no kernel 'absent'") && Contains("extern \"C\"") &&
                          Contains("name expressions: \"fake_target\""));
    CHECK_THROWS_WITH(absent.attributes(), Contains("no kernel 'absent'"));
    CHECK(g_fake.launches.empty());
    // The module itself loaded; a kernel it has still works.
    m.get_function("fake_target")(1, 1, {1.0f, x, 2.0, std::int64_t{1}});
    CHECK(g_fake.launches.size() == 1);
}

// ---------------------------------------------------------------------------------------------
// Launch attributes: clusters, cooperative grids, the carveout.
// ---------------------------------------------------------------------------------------------

namespace {

using kjit::test::fake_state;

// The attribute of `id` the last cuLaunchKernelEx passed, or null.
const CUlaunchAttribute* ex_attribute(CUlaunchAttributeID id) {
    for (const CUlaunchAttribute& a : fake_state().last_ex_attributes)
        if (a.id == id) return &a;
    return nullptr;
}

}  // namespace

TEST_CASE("plain launches use cuLaunchKernel; clusters and cooperative grids cuLaunchKernelEx", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    const kjit::Stream s = kjit::Stream::create();

    k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.stream = s});
    k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.stream = s, .cluster = {1, 1, 1}});  // {1, 1, 1}: no cluster
    CHECK(g_fake.launches.size() == 2);
    CHECK(fake_state().ex_launches == 0);
    CHECK(fake_state().occupancy_queries == 0);

    // A cluster: one attribute, the launch's grid, block, stream and arguments as a plain launch's.
    k({4, 2, 1}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.stream = s, .cluster = {2, 1, 1}});
    CHECK(g_fake.launches.size() == 2);
    REQUIRE(g_fake.ex_launches.size() == 1);
    const FakeKernel::Launch& l = g_fake.ex_launches[0];
    CHECK((l.grid[0] == 4 && l.grid[1] == 2 && l.grid[2] == 1));
    CHECK(l.block[0] == 128);
    CHECK(l.stream == s.handle());
    CHECK(l.params == g_fake.launches[0].params);
    REQUIRE(fake_state().last_ex_attributes.size() == 1);
    const CUlaunchAttribute* cluster = ex_attribute(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    REQUIRE(cluster != nullptr);
    CHECK((cluster->value.clusterDim.x == 2 && cluster->value.clusterDim.y == 1 && cluster->value.clusterDim.z == 1));
    CHECK(fake_state().occupancy_queries == 1);  // the device checked once for this shape ...
    k({8, 2, 1}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.stream = s, .cluster = {2, 1, 1}});
    CHECK(fake_state().ex_launches == 2);
    CHECK(fake_state().occupancy_queries == 1);  // ... whatever the grid
    k({8, 2, 1}, 64, {2.5f, x, 1.25, std::int64_t{8}}, {.stream = s, .cluster = {2, 1, 1}});
    CHECK(fake_state().occupancy_queries == 2);  // another block: another shape

    // A cooperative grid: the attribute, and a grid up to 2 blocks per SM x 132 SMs.
    k(264, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true});
    REQUIRE(fake_state().last_ex_attributes.size() == 1);
    const CUlaunchAttribute* cooperative = ex_attribute(CU_LAUNCH_ATTRIBUTE_COOPERATIVE);
    REQUIRE(cooperative != nullptr);
    CHECK(cooperative->value.cooperative == 1);
    CHECK(g_fake.ex_launches.back().grid[0] == 264);

    // Both at once.
    k(8, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}, .cooperative = true});
    CHECK(fake_state().last_ex_attributes.size() == 2);
    CHECK(ex_attribute(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) != nullptr);
    CHECK(ex_attribute(CU_LAUNCH_ATTRIBUTE_COOPERATIVE) != nullptr);
    CHECK(g_fake.launches.size() == 2);

    // A grid with an extent 0 is no work, clusters or not.
    const int before = fake_state().ex_launches;
    k({0, 2, 1}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}});
    CHECK(fake_state().ex_launches == before);

    // A failed launch names the kernel, grid, block and cluster.
    fake_state().ex_result = CUDA_ERROR_LAUNCH_FAILED;
    CHECK_THROWS_AS(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}), kjit::CudaError);
    CHECK_THROWS_WITH(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}),
                      Contains("cuLaunchKernelEx(fake_target, grid (4, 1, 1), block (128, 1, 1), cluster (2, 1, 1)") &&
                          Contains("CUDA_ERROR_LAUNCH_FAILED"));
    CHECK_THROWS_WITH(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true}),
                      Contains("grid (4, 1, 1), block (128, 1, 1), cooperative"));
    // One compiled for a cluster (__cluster_dims__) says so.
    g_fake.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = 4;
    g_fake.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT] = 1;
    g_fake.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH] = 1;
    CHECK_THROWS_WITH(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}),
                      Contains("compiled for clusters of (4, 1, 1)"));
}

TEST_CASE("a cluster that does not divide the grid or that the device cannot run is an Error", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));

    CHECK_THROWS_WITH(k({3, 2, 1}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}),
                      Contains("raw kernel 'fake_target'") &&
                          Contains("grid (3, 2, 1) is not a multiple of the cluster (2, 1, 1)"));
    CHECK_THROWS_WITH(k({4, 3, 1}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 2, 1}}),
                      Contains("grid (4, 3, 1) is not a multiple of the cluster (2, 2, 1)"));
    CHECK_THROWS_WITH(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {0, 1, 1}}),
                      Contains("cluster (0, 1, 1) has an extent 0"));

    // No cluster of this shape fits: the numbers, the device, the portable size.
    fake_state().max_active_clusters = 0;
    CHECK_THROWS_AS(k(16, 1024, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {16, 1, 1}}), kjit::Error);
    CHECK_THROWS_WITH(k(16, 1024, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {16, 1, 1}}),
                      Contains("a cluster of 16 blocks (16, 1, 1) of 1024 threads (1024, 1, 1)") &&
                          Contains("Fake GPU (cuda:0, compute capability 9.0)") &&
                          Contains("cuOccupancyMaxActiveClusters says 0 such clusters fit") &&
                          Contains("up to 8 blocks are portable"));
    // Above 8 blocks, the kernel was allowed non-portable sizes first (once).
    CHECK(g_fake.set == std::vector<std::pair<CUfunction_attribute, int>>{
                            {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1}});
    // The driver refusing the size is said too.
    fake_state().max_active_clusters_result = CUDA_ERROR_INVALID_CLUSTER_SIZE;
    CHECK_THROWS_WITH(k(32, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {32, 1, 1}}),
                      Contains("a cluster of 32 blocks") && Contains("CUDA_ERROR_INVALID_CLUSTER_SIZE"));
    CHECK(fake_state().ex_launches == 0);
    // A refused shape is not remembered as checked: once it fits, it launches.
    fake_state().max_active_clusters_result = CUDA_SUCCESS;
    fake_state().max_active_clusters = 1;
    CHECK_NOTHROW(k(16, 1024, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {16, 1, 1}}));
    CHECK(fake_state().ex_launches == 1);
    // A portable cluster sets nothing.
    k({4, 2, 2}, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 2, 2}});
    CHECK(g_fake.set.size() == 1);
}

TEST_CASE("a cluster on a device below compute capability 9.0 is an Error saying the device's", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    fake_state().cc_major = 8;  // before the first device query
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}),
                      Contains("raw kernel 'fake_target': a cluster (2, 1, 1) needs compute capability 9.0") &&
                          Contains("but Fake GPU (cuda:0) has compute capability 8.0"));
    CHECK(fake_state().ex_launches == 0);
    CHECK(fake_state().occupancy_queries == 0);
    // Without a cluster it runs there, cooperative grids included.
    k(4, 128, {2.5f, x, 1.25, std::int64_t{8}});
    k(4, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true});
    CHECK(g_fake.launches.size() == 1);
    CHECK(fake_state().ex_launches == 1);
    CHECK(k.attributes().arch == "sm_80");
}

TEST_CASE("a cooperative grid larger than the device keeps resident is an Error giving both", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    // 2 blocks per SM x 132 SMs: 264 at most.
    CHECK_NOTHROW(k(264, 256, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true}));
    CHECK_THROWS_WITH(k({5, 53, 1}, 256, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true}),
                      Contains("raw kernel 'fake_target': a cooperative grid of 265 blocks (5, 53, 1)") &&
                          Contains("Fake GPU (cuda:0, compute capability 9.0)") &&
                          Contains("2 blocks of 256 threads (256, 1, 1) and 0 bytes of dynamic shared memory per SM") &&
                          Contains("x 132 SMs = 264 blocks"));
    CHECK(fake_state().ex_launches == 1);
    // With more shared memory per block, another shape: asked again.
    const int queries = fake_state().occupancy_queries;
    fake_state().max_blocks_per_sm = 1;
    CHECK_THROWS_WITH(k(264, 256, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_mem_bytes = 100000, .cooperative = true}),
                      Contains("1 blocks of 256 threads (256, 1, 1) and 100000 bytes") && Contains("= 132 blocks"));
    CHECK(fake_state().occupancy_queries > queries);
}

TEST_CASE("a cooperative launch on a device without them is an Error", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    fake_state().cooperative_launch = 0;
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(k(2, 128, {2.5f, x, 1.25, std::int64_t{8}}, {.cooperative = true}),
                      Contains("raw kernel 'fake_target': a cooperative launch, but Fake GPU (cuda:0") &&
                          Contains("CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0"));
    CHECK(fake_state().ex_launches == 0);
    k(2, 128, {2.5f, x, 1.25, std::int64_t{8}});
    CHECK(g_fake.launches.size() == 1);
}

TEST_CASE("the shared memory carveout is set when it changes, on plain launches too", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    using Set = std::vector<std::pair<CUfunction_attribute, int>>;
    constexpr CUfunction_attribute carveout = CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
    k(1, 32, {2.5f, x, 1.25, std::int64_t{8}});
    CHECK(g_fake.set.empty());
    k(1, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_carveout = 50});
    k(1, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_carveout = 50});
    k(1, 32, {2.5f, x, 1.25, std::int64_t{8}});  // empty: left as it is
    CHECK(g_fake.set == Set{{carveout, 50}});
    k(1, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_carveout = kjit::kCarveoutMaxShared});
    k(2, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}, .shared_carveout = kjit::kCarveoutDefault});
    CHECK(g_fake.set == Set{{carveout, 50}, {carveout, 100}, {carveout, -1}});
    CHECK(g_fake.launches.size() == 5);
    CHECK(fake_state().ex_launches == 1);
    CHECK(k.attributes().preferred_shared_memory_carveout == -1);
    CHECK_THROWS_WITH(k(1, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_carveout = 101}),
                      Contains("raw kernel 'fake_target': shared_carveout 101 is neither a percent (0-100)"));
    CHECK_THROWS_WITH(k(1, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.shared_carveout = -2}), Contains("-2"));
    CHECK(g_fake.launches.size() == 5);
}

TEST_CASE("function attributes: what the driver reports, defaults for what it does not know", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    const RawKernel k(kFakeTarget, "fake_target");
    g_fake.attributes = {{CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, 2048},
                         {CU_FUNC_ATTRIBUTE_NUM_REGS, 40},
                         {CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, 1},
                         {CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 25},
                         {CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, 1},
                         {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, 2},
                         {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, 1},
                         {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, 1},
                         {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1},
                         {CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 2}};
    const kjit::RawKernelAttributes a = k.attributes();
    CHECK(a.const_size_bytes == 2048);
    CHECK(a.num_regs == 40);
    CHECK(a.static_shared_bytes == 1024);
    CHECK(a.cache_mode_ca);
    CHECK(a.preferred_shared_memory_carveout == 25);
    CHECK(a.cluster_size_must_be_set);
    CHECK((a.required_cluster.x == 2 && a.required_cluster.y == 1 && a.required_cluster.z == 1));
    CHECK(a.non_portable_cluster_size_allowed);
    CHECK(a.cluster_scheduling_policy_preference == 2);

    // A driver that does not know the newer attributes: their documented defaults, no error.
    g_fake.unknown = {CU_FUNC_ATTRIBUTE_CACHE_MODE_CA,
                      CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                      CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET,
                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH,
                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT,
                      CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH,
                      CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                      CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE};
    const kjit::RawKernelAttributes old = k.attributes();
    CHECK(old.const_size_bytes == 2048);
    CHECK_FALSE(old.cache_mode_ca);
    CHECK(old.preferred_shared_memory_carveout == kjit::kCarveoutDefault);
    CHECK_FALSE(old.cluster_size_must_be_set);
    CHECK((old.required_cluster.x == 0 && old.required_cluster.y == 0 && old.required_cluster.z == 0));
    CHECK_FALSE(old.non_portable_cluster_size_allowed);
    CHECK(old.cluster_scheduling_policy_preference == 0);
    // Launching such a kernel with a cluster still says what the launch asked when it fails.
    fake_state().ex_result = CUDA_ERROR_INVALID_VALUE;
    const Array x = Array::empty({8}, DType::float32, kjit::Device::cuda(0));
    CHECK_THROWS_WITH(k(2, 32, {2.5f, x, 1.25, std::int64_t{8}}, {.cluster = {2, 1, 1}}),
                      Contains("cluster (2, 1, 1)"));
}

// ---------------------------------------------------------------------------------------------
// Module globals.
// ---------------------------------------------------------------------------------------------

namespace {

const char* const kFakeGlobals =
    "// compiled for the pretend driver of raw_launch_host_test.cpp\n"
    "__constant__ float coefficients[16];\n"
    "namespace ns { __device__ int counters[3]; }\n"
    "extern \"C\" __global__ void fake_target(float a, const float* x, double b, long long n) {}\n";

}  // namespace

TEST_CASE("module globals: address and size, an Array view, wrong names and sizes", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::detail::ScopedDriverOverride fake(fake_driver_with_kernels(), 1);
    fake_state().globals = {{"coefficients", {0x9000, 64}}, {"_ZN2ns8countersE", {0xa000, 12}}};
    const RawModule m(kFakeGlobals, {.name_expressions = {"&ns::counters"}, .name = "globals"});

    // At global scope: by its name.
    const kjit::RawGlobal g = m.global("coefficients");
    CHECK(g.address == reinterpret_cast<void*>(std::uintptr_t{0x9000}));
    CHECK(g.bytes == 64);
    CHECK(g.device == kjit::Device::cuda(0));
    CHECK(g.keep_alive != nullptr);
    // In a namespace: through its name expression, with or without the '&'.
    CHECK(m.global("ns::counters").address == reinterpret_cast<void*>(std::uintptr_t{0xa000}));
    CHECK(m.global("&ns::counters", kjit::Device::cuda(0)).bytes == 12);

    // As an Array of a dtype: a borrowed view of the variable.
    const Array table = m.global("coefficients", DType::float32);
    CHECK(table.shape() == kjit::Shape{16});
    CHECK(table.dtype() == DType::float32);
    CHECK(table.data() == g.address);
    CHECK(table.device() == kjit::Device::cuda(0));
    CHECK(table.buffer()->kind() == kjit::Buffer::Kind::borrowed);
    CHECK(m.global("coefficients", DType::float64).shape() == kjit::Shape{8});
    CHECK(m.global("ns::counters", DType::int32).shape() == kjit::Shape{3});
    // Filled from the host in place.
    const std::vector<float> host(16, 0.5f);
    table.copy_from_host(host.data());
    CHECK(fake_state().last_copy_to == 0x9000);
    CHECK(fake_state().last_copy_bytes == 64);
    // The module stays loaded as long as the view: the view passes to a kernel like any array.
    const RawKernel k = m.get_function("fake_target");
    k(1, 1, {1.0f, table, 2.0, std::int64_t{16}});
    CHECK(g_fake.launches.back().params[1] == bytes_of(table.data()));

    // Errors: the module and the symbol; the size and the dtype's.
    CHECK_THROWS_AS(m.global("missing"), kjit::Error);
    CHECK_THROWS_WITH(m.global("missing"), Contains("raw module 'globals' has no global 'missing'") &&
                                               Contains("__device__ or __constant__") &&
                                               Contains("name expressions: \"&ns::counters\""));
    CHECK_THROWS_WITH(m.global("ns::other", DType::float32),
                      Contains("no global 'ns::other'") && Contains("add \"&ns::other\""));
    CHECK_THROWS_WITH(m.global("ns::counters", DType::float64),
                      Contains("raw module 'globals': global 'ns::counters' has 12 bytes") &&
                          Contains("not a multiple of float64's 8"));
    CHECK_THROWS_WITH(m.global("coefficients", kjit::Device::cpu()), Contains("asked of cpu"));
}
