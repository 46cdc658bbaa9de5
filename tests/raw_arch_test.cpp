// Raw modules with a target of their own: architecture-specific (sm_90a: setmaxnreg, wgmma) and
// family-specific (sm_100f) targets, keyed like any target, refused where they cannot run.
#include "test_support.hpp"

#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/driver.hpp"

using Catch::Matchers::Contains;
using kjit::RawModule;
using kjit::RawModuleOptions;
using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

// Two warpgroups hand registers from one to the other (setmaxnreg, sm_90a only), then each thread
// writes 2 x + its warpgroup: the kernel ran past the instruction on every thread.
const char* const kSetmaxnreg = R"(
extern "C" __global__ void __launch_bounds__(256, 1) regs_moved(const float* x, float* y, int n) {
    const int warpgroup = threadIdx.x / 128;
    if (warpgroup == 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 64;\n" ::: "memory");
    else asm volatile("setmaxnreg.inc.sync.aligned.u32 192;\n" ::: "memory");
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + warpgroup;
}
)";

const RawModuleOptions kSm90a{.nvrtc_options = {"--maxrregcount=128"}, .arch = "sm_90a", .name = "regs_moved"};

}  // namespace

TEST_CASE("an -arch option is the module's target, and a malformed or second one is refused", "[raw][arch]") {
    const RawModule m(kSetmaxnreg, {.nvrtc_options = {"-DX=1", "-arch=sm_90a", "-lineinfo"}});
    CHECK(m.options().arch == "sm_90a");
    CHECK(m.options().nvrtc_options == std::vector<std::string>{"-DX=1", "-lineinfo"});
    CHECK(RawModule(kSetmaxnreg, {.nvrtc_options = {"--gpu-architecture", "sm_100f"}}).options().arch == "sm_100f");
    CHECK(RawModule(kSetmaxnreg, {.nvrtc_options = {"--gpu-architecture=sm_90a"}, .arch = "sm_90a"}).options().arch == "sm_90a");
    CHECK_THROWS_WITH(RawModule(kSetmaxnreg, {.nvrtc_options = {"-arch=sm_100a"}, .arch = "sm_90a"}),
                      Contains("-arch=sm_100a") && Contains("sm_90a"));
    CHECK_THROWS_WITH(RawModule(kSetmaxnreg, {.arch = "sm_90b"}), Contains("RawModuleOptions::arch='sm_90b'"));
    // Kept in the manifest entry.
    const nlohmann::json e = {{"kind", "raw"}, {"name", "regs_moved"}, {"source", kSetmaxnreg}, {"arch", "sm_90a"}};
    CHECK(kjit::jit::kernels::raw_module_from_manifest_entry(e).options().arch == "sm_90a");
}

TEST_CASE("sm_90a code compiles for sm_90a only, under a key of its own", "[raw][arch][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const kjit::Binary b = RawModule(kSetmaxnreg, kSm90a).compile();
    CHECK(b.arch == "sm_90a");
    CHECK_FALSE(b.cubin.empty());
    CHECK(b.ptx.find(".target sm_90a") != std::string::npos);
    CHECK(RawModule(kSetmaxnreg, kSm90a).compile("sm_90a").compile_ms == 0);  // the same key
    CHECK_THROWS_WITH(RawModule(kSetmaxnreg, kSm90a).compile("sm_90"), Contains("targets sm_90a") && Contains("sm_90"));
    // The plain target has no setmaxnreg: NVRTC's error, not a silent sm_90 build.
    RawModuleOptions plain = kSm90a;
    plain.arch.clear();
    CHECK_THROWS_AS(RawModule(kSetmaxnreg, plain).compile("sm_90"), kjit::CompileError);
    // The KJIT_ARCH form reaches every kind of program.
    CHECK(RawModule("extern \"C\" __global__ void k() {}").compile("sm_100f").arch == "sm_100f");
}

TEST_CASE("kjit precompile builds a module with its own target for that target alone", "[raw][arch][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const nlohmann::json manifest = {
        {"kernels", {{{"kind", "raw"}, {"name", "regs_moved"}, {"source", kSetmaxnreg}, {"options", {"--maxrregcount=128"}},
                      {"arch", "sm_90a"}}}}};
    const kjit::jit::kernels::PrecompileResult r = kjit::jit::kernels::precompile(manifest, {"sm_80", "sm_90"}, 1);
    CHECK(r.failures.empty());
    CHECK(r.jobs == 1);
    CHECK(r.compiled == 1);
    CHECK(RawModule(kSetmaxnreg, kSm90a).compile().compile_ms == 0);  // what the application will look up
}

TEST_CASE("an sm_90a module loads on a 9.0 GPU and is refused on a 10.0 one, saying where it runs", "[raw][arch][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    (void)RawModule(kSetmaxnreg, kSm90a).compile();  // with NVRTC, before a pretend driver is in place
    {
        const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
        CHECK(RawModule(kSetmaxnreg, kSm90a).get_function("regs_moved").attributes(kjit::Device::cuda(0)).arch == "sm_90a");
    }
    kjit::detail::DriverApi blackwell = kjit::test::make_fake_launching_driver();
    static decltype(blackwell.cuDeviceGetAttribute) sm90_attribute = blackwell.cuDeviceGetAttribute;
    blackwell.cuDeviceGetAttribute = [](int* v, CUdevice_attribute a, CUdevice d) {
        if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) return *v = 10, CUDA_SUCCESS;
        if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) return *v = 0, CUDA_SUCCESS;
        return sm90_attribute(v, a, d);
    };
    const kjit::detail::ScopedDriverOverride fake(blackwell, 1);
    CHECK_THROWS_WITH(RawModule(kSetmaxnreg, kSm90a).get_function("regs_moved").attributes(kjit::Device::cuda(0)),
                      Contains("raw module 'regs_moved' targets sm_90a") &&
                          Contains("GPUs of compute capability 9.0 only") && Contains("cuda:0 is compute capability 10.0"));
}

TEST_CASE("an sm_90a kernel runs setmaxnreg", "[raw][arch][gpu]") {
    KJIT_REQUIRE_GPU();
    if (kjit::Device::current().properties().arch() != "sm_90") {
        WARN("SKIPPED: sm_90a code runs on compute capability 9.0 only");
        return;
    }
    const int n = 256 * 300 + 17;
    const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
    const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
    const kjit::RawKernel k = RawModule(kSetmaxnreg, kSm90a).get_function("regs_moved");
    CHECK(k.attributes().arch == "sm_90a");
    k((n + 255) / 256, 256, {x.device, y, n});
    CHECK(kjit::test::mismatches(y, [&](std::size_t i) {
              return 2.0 * kjit::test::element_value(x.host, kjit::DType::float32, i).real() + double(i % 256 / 128);
          }, 1e-6, 1e-6) == 0);
}
