// RawKernel launches checked on a pretend driver, no GPU needed: argument packing, parameter
// checks against the kernel's declaration, shared memory limits, streams, missing kernels.
#include "test_support.hpp"

#include <cstring>

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
    std::vector<std::string> looked_up;
    struct Launch {
        unsigned grid[3], block[3], shared;
        CUstream stream;
        std::vector<std::vector<unsigned char>> params;
    };
    std::vector<Launch> launches;
};
FakeKernel g_fake;
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
        switch (a) {
            case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = g_fake.max_dynamic_shared; break;
            case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = g_fake.static_shared; break;
            case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
            default: *v = 0;
        }
        return CUDA_SUCCESS;
    };
    api.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute a, int v) {
        if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_ERROR_INVALID_VALUE;
        ++g_fake.set_attribute_calls;
        g_fake.max_dynamic_shared = v;
        return CUDA_SUCCESS;
    };
    api.cuLaunchKernel = [](CUfunction, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream stream, void** params, void**) {
        if (1ull * bx * by * bz > 1024) return CUDA_ERROR_INVALID_VALUE;
        if (shared > static_cast<unsigned>(g_fake.max_dynamic_shared)) return CUDA_ERROR_INVALID_VALUE;
        FakeKernel::Launch l{{gx, gy, gz}, {bx, by, bz}, shared, stream, {}};
        for (std::size_t k = 0; k < g_fake.param_sizes.size(); ++k) {
            const auto* p = static_cast<const unsigned char*>(params[k]);
            l.params.emplace_back(p, p + g_fake.param_sizes[k]);
        }
        g_fake.launches.push_back(std::move(l));
        return CUDA_SUCCESS;
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
