// Relocatable raw modules and LTO-IR, linked by nvJitLink (loaded at run time): dynamic parallelism
// with the device runtime, __device__ functions from other inputs, cache keys that cover every
// input, the errors when nvJitLink is missing or a symbol is undefined, and the launches.
#include "test_support.hpp"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/manifest.hpp"
#include "fake_driver.hpp"
#include "gpu_data.hpp"
#include "jit/compile/device_runtime.hpp"
#include "jit/compile/linker.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "jit/kernels/raw/link_inputs.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvjitlink.hpp"

using Catch::Matchers::Contains;
using kjit::ImageKind;
using kjit::LinkInput;
using kjit::RawModule;
using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

// CuPy's dynamic-parallelism example in kjit's words: one thread of the parent launches 13
// children of 32 threads, child c writing y[32c + t] = 2 x[32c + t] + c.
const char* const kParentAndChildren = R"(
extern "C" __global__ void child(const float* x, float* y, int base, float add) {
    const int i = base + threadIdx.x;
    y[i] = 2.0f * x[i] + add;
}

extern "C" __global__ void parent(const float* x, float* y, int children) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
        for (int c = 0; c < children; ++c) child<<<1, 32>>>(x, y, 32 * c, float(c));
}
)";
constexpr int kChildren = 13;

// Calls a __device__ function that another input defines (tests/data/raw_link_helper.cu).
const char* const kCallsHelper = R"(
extern "C" __device__ float link_helper(float x);

extern "C" __global__ void apply_helper(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = link_helper(x[i]);
}
)";

// The folder of nvcc's binaries beside kjit_tests, or empty (with a warning) when the build had
// no nvcc.
std::filesystem::path binaries() {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "binaries";
    if (std::filesystem::exists(dir / "raw_link_helper_90.ltoir", ec)) return dir;
    WARN("SKIPPED: no nvcc-built binaries in " << dir.string() << " (the build found no nvcc)");
    return {};
}

// link_helper(x) = scale x + 0.5 as a relocatable sm_90 cubin, compiled by NVRTC with -rdc=true.
std::vector<unsigned char> nvrtc_helper(float scale) {
    kjit::jit::compile::CompileRequest r;
    r.source = fmt::format("extern \"C\" __device__ float link_helper(float x) {{ return {:.1f}f * x + 0.5f; }}\n", scale);
    r.program_name = "nvrtc_helper.cu";
    r.target.requested = r.target.compiled = 90;
    r.options = {"-rdc=true"};
    return kjit::jit::compile::compile_cuda(r).cubin;
}

void write_bytes(const std::filesystem::path& path, const std::vector<unsigned char>& bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// Launches apply_helper of `m` and checks y = 2.5 x + 0.5 on the host.
void check_helper_applied(const RawModule& m) {
    const int n = 50001;
    const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
    const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
    m.get_function("apply_helper")((n + 255) / 256, 256, {x.device, y, n});
    const auto xs = [&](std::size_t k) { return kjit::test::element_value(x.host, kjit::DType::float32, k).real(); };
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 2.5 * xs(k) + 0.5; }, 1e-6, 1e-6) == 0);
}

}  // namespace

// Without a GPU: loading, options, errors, compiling and linking, cache keys.

TEST_CASE("relocatable options are recognised as CuPy users write them", "[raw][link]") {
    using kjit::jit::kernels::is_relocatable;
    for (const std::vector<std::string>& o : {std::vector<std::string>{"-dc"}, {"--device-c"}, {"-rdc=true"},
                                             {"--relocatable-device-code=true"}, {"-rdc", "true"}, {"-O3", "-dc"}})
        CHECK(is_relocatable(o));
    for (const std::vector<std::string>& o : {std::vector<std::string>{}, {"-rdc=false"}, {"-rdc=true", "-rdc=false"},
                                             {"-DDC=1"}, {"-lineinfo"}})
        CHECK_FALSE(is_relocatable(o));
    // Link inputs need relocatable code, and each is a file or bytes.
    CHECK_THROWS_WITH(RawModule(kCallsHelper, {.link = {LinkInput::file("h.ltoir")}, .name = "plain"}),
                      Contains("raw module 'plain' has link inputs") && Contains("-rdc=true"));
    CHECK_THROWS_WITH(RawModule(kCallsHelper, {.nvrtc_options = {"-dc"}, .link = {LinkInput{}}}),
                      Contains("link input 1 must name a file or hold bytes (it has neither)"));
    LinkInput both = LinkInput::image({1, 2}, ImageKind::cubin);
    both.path = "x.cubin";
    CHECK_THROWS_WITH(RawModule(kCallsHelper, {.nvrtc_options = {"-dc"}, .link = {both}}), Contains("(it has both)"));
}

TEST_CASE("nvJitLink is loaded at run time: missing, it is a NoDeviceError saying what needs it", "[raw][link][nvrtc]") {
    {
        const kjit::test::ScopedEnv env("KJIT_NVJITLINK_LIBRARY", "/nonexistent/libnvJitLink.so");
        const std::vector<std::string> c = kjit::detail::nvjitlink_candidates();
        REQUIRE(c.size() >= 4);
        CHECK(c[0] == "/nonexistent/libnvJitLink.so");
        CHECK(c[1] == "libnvJitLink.so.13");
    }
    {
        const kjit::test::ScopedEnv env("KJIT_CUDADEVRT", "/nonexistent/libcudadevrt.a");
        CHECK(kjit::jit::compile::cudadevrt_candidates().at(0) == "/nonexistent/libcudadevrt.a");
    }
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::detail::ScopedNvJitLinkOverride none(nullptr);
    std::string why;
    CHECK(kjit::detail::try_nvjitlink(&why) == nullptr);
    CHECK_THAT(why, Contains("nvJitLink") && Contains("relocatable device code"));
    const RawModule m(kParentAndChildren, {.nvrtc_options = {"-rdc=true"}, .name = "no_linker"});
    CHECK_THROWS_AS(m.compile("sm_90"), kjit::NoDeviceError);
    CHECK_THROWS_WITH(m.compile("sm_90"), Contains("raw module 'no_linker'") && Contains("nvJitLink not available"));
    const std::filesystem::path bin = binaries();
    if (bin.empty()) return;
    CHECK_THROWS_AS(RawModule::from_file((bin / "raw_image_90.ltoir").string()).compile("sm_90"), kjit::NoDeviceError);
}

TEST_CASE("an undefined extern __device__ function is a LinkError with nvJitLink's log", "[raw][link][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const RawModule m(kCallsHelper, {.nvrtc_options = {"-rdc=true"}, .name = "unlinked"});
    try {
        m.compile("sm_90");
        FAIL("linked with link_helper undefined");
    } catch (const kjit::LinkError& e) {
        CHECK_THAT(e.what(), Contains("cannot link raw module 'unlinked' for sm_90") && Contains("unlinked.cu (cubin)") &&
                                 Contains("libcudadevrt.a (library)") && Contains("nvJitLink log:"));
        CHECK_THAT(e.log(), Contains("link_helper"));
    }
    // A LinkError is a CompileError: one catch covers every failure to build a module.
    CHECK_THROWS_AS(m.compile("sm_90"), kjit::CompileError);
    CHECK(kjit::cache_stats().compiles == 0);
}

TEST_CASE("a relocatable module compiles and links with the device runtime, and is cached", "[raw][link][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::RawModuleOptions options{.nvrtc_options = {"-rdc=true"}, .name = "dynamic_parallelism"};
    const kjit::Binary first = RawModule(kParentAndChildren, options).compile("sm_90");
    CHECK(first.arch == "sm_90");
    CHECK(first.cubin.size() > 64);
    CHECK(first.ptx.empty());  // relocatable PTX cannot be loaded alone: none is kept
    CHECK(first.compile_ms > 0);
    // A second module of the same source and options: a hit, even from a fresh process cache.
    CHECK(RawModule(kParentAndChildren, options).compile("sm_90").compile_ms == 0);
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::Binary again = RawModule(kParentAndChildren, options).compile("sm_90");
    CHECK(again.compile_ms == 0);
    CHECK(again.cubin == first.cubin);
    // CuPy's spelling, -dc: the same program for NVRTC, another key (the options differ).
    CHECK(RawModule(kParentAndChildren, {.nvrtc_options = {"-dc"}, .name = "dynamic_parallelism"}).compile("sm_90").compile_ms > 0);
}

TEST_CASE("link inputs are keyed by content: an edited input is a miss", "[raw][link][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const std::filesystem::path helper = dir.path() / "helper.cubin";
    write_bytes(helper, nvrtc_helper(2.5f));
    const kjit::RawModuleOptions options{.nvrtc_options = {"-rdc=true"}, .link = {LinkInput::file(helper.string())},
                                         .name = "calls_helper"};
    const kjit::Binary first = RawModule(kCallsHelper, options).compile("sm_90");
    CHECK(first.compile_ms > 0);
    CHECK_FALSE(first.cubin.empty());
    CHECK(RawModule(kCallsHelper, options).compile("sm_90").compile_ms == 0);
    // The helper rebuilt with another constant: a miss; back as it was: a hit.
    write_bytes(helper, nvrtc_helper(3.5f));
    const kjit::Binary edited = RawModule(kCallsHelper, options).compile("sm_90");
    CHECK(edited.compile_ms > 0);
    CHECK(edited.cubin != first.cubin);
    write_bytes(helper, nvrtc_helper(2.5f));
    CHECK(RawModule(kCallsHelper, options).compile("sm_90").compile_ms == 0);
    // The same helper given as bytes links too.
    const kjit::RawModuleOptions in_memory{.nvrtc_options = {"-rdc=true"},
                                           .link = {LinkInput::image(nvrtc_helper(2.5f), ImageKind::cubin, "helper")},
                                           .name = "calls_helper"};
    CHECK_FALSE(RawModule(kCallsHelper, in_memory).compile("sm_90").cubin.empty());
    // A missing input is an IoError naming it.
    const kjit::RawModuleOptions missing{.nvrtc_options = {"-rdc=true"},
                                         .link = {LinkInput::file((dir.path() / "gone.ltoir").string())}};
    CHECK_THROWS_AS(RawModule(kCallsHelper, missing).compile("sm_90"), kjit::IoError);
    CHECK_THROWS_WITH(RawModule(kCallsHelper, missing).compile("sm_90"), Contains("gone.ltoir"));
}

TEST_CASE("LTO-IR and relocatable cubins built by nvcc link for sm_90", "[raw][link][nvrtc]") {
    const std::filesystem::path bin = binaries();
    if (bin.empty()) return;
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    // A module from LTO-IR: compile() is the link.
    const RawModule lto = RawModule::from_file((bin / "raw_image_90.ltoir").string());
    const kjit::Binary linked = lto.compile("sm_90");
    CHECK(linked.arch == "sm_90");
    CHECK(linked.cubin.size() > 64);
    CHECK_THROWS_AS(lto.compile("sm_80"), kjit::LinkError);  // LTO-IR for 9.0 does not link for 8.0
    CHECK_THROWS_WITH(lto.compile("sm_80"), Contains("raw_image_90.ltoir") && Contains("sm_80"));
    // Source that calls a function of the LTO-IR helper (an LTO link, -lto) or of the cubin helper.
    for (const char* file : {"raw_link_helper_90.ltoir", "raw_link_helper_sm90.cubin"}) {
        INFO(file);
        const RawModule m(kCallsHelper, {.nvrtc_options = {"-rdc=true"}, .link = {LinkInput::file((bin / file).string())}});
        CHECK_FALSE(m.compile("sm_90").cubin.empty());
    }
    const std::vector<kjit::jit::compile::LinkData> inputs{kjit::jit::compile::read_link_file((bin / "raw_link_helper_90.ltoir").string())};
    CHECK(inputs[0].kind == kjit::jit::compile::LinkKind::ltoir);
    CHECK(kjit::jit::compile::link_options(inputs, "sm_90") == std::vector<std::string>{"-arch=sm_90", "-lto"});
}

TEST_CASE("relocatable modules in manifests: link inputs recorded and read back", "[raw][link][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    const std::filesystem::path helper = dir.path() / "helper.cubin";
    write_bytes(helper, nvrtc_helper(2.5f));
    const auto manifest = dir.path() / "manifest.json";
    kjit::CacheSettings app = cache_in(dir.path() / "app");
    app.record = manifest.string();
    kjit::configure_cache(app);
    const RawModule m(kCallsHelper, {.nvrtc_options = {"-rdc=true"}, .link = {LinkInput::file(helper.string())},
                                     .name = "recorded_rdc"});
    m.compile("sm_90");
    const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 1);
    nlohmann::json e = recorded["kernels"][0];
    CHECK(e["options"] == nlohmann::json({"-rdc=true"}));
    CHECK(e["link"] == nlohmann::json({helper.string()}));
    // Read back, it is the same module: precompiling it into the same cache is a hit.
    const RawModule back = kjit::jit::kernels::raw_module_from_manifest_entry(e);
    REQUIRE(back.options().link.size() == 1);
    CHECK(back.options().link[0].path == helper.string());
    CHECK(back.compile("sm_90").compile_ms == 0);
    const kjit::jit::kernels::PrecompileResult pre = kjit::jit::kernels::precompile(recorded, {"sm_90"}, 1);
    CHECK(pre.failures.empty());
    CHECK(pre.compiled == 0);
    // An input given in memory cannot be rebuilt from a manifest.
    e["link"] = {{{"name", "helper"}, {"kind", "cubin"}}};
    CHECK_THROWS_WITH(kjit::jit::kernels::raw_module_from_manifest_entry(e), Contains("given in memory"));
    e["link"] = "helper.cubin";
    CHECK_THROWS_AS(kjit::jit::kernels::raw_module_from_manifest_entry(e), kjit::CacheError);
}

TEST_CASE("a relocatable module and LTO-IR load on a pretend GPU after a real link", "[raw][link][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::detail::ScopedDriverOverride fake(kjit::test::make_fake_launching_driver(), 1);
    const int loads = kjit::test::fake_state().modules_loaded;
    const RawModule m(kParentAndChildren, {.nvrtc_options = {"-rdc=true"}, .name = "pretend_dp"});
    const kjit::RawKernelAttributes a = m.get_function("parent").attributes(kjit::Device::cuda(0));
    CHECK(a.arch == "sm_90");
    CHECK_FALSE(a.compiled_from_ptx);
    CHECK(kjit::test::fake_state().modules_loaded == loads + 1);
    const std::filesystem::path bin = binaries();
    if (bin.empty()) return;
    const RawModule lto = RawModule::from_file((bin / "raw_image_90.ltoir").string());
    // Linked once per process and device (raw_image_test.cpp may have loaded it already).
    CHECK(lto.get_function("affine").attributes(kjit::Device::cuda(0)).arch == "sm_90");
}

// On a GPU: the launches.

TEST_CASE("a parent kernel launches its 13 children (dynamic parallelism)", "[raw][link][gpu]") {
    KJIT_REQUIRE_GPU();
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const int n = 32 * kChildren;
    for (const char* option : {"-rdc=true", "-dc"}) {
        INFO(option);
        const RawModule m(kParentAndChildren, {.nvrtc_options = {option}});
        const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
        const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
        m.get_function("parent")(1, 1, {x.device, y, kChildren});
        const auto xs = [&](std::size_t k) { return kjit::test::element_value(x.host, kjit::DType::float32, k).real(); };
        CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 2.0 * xs(k) + static_cast<double>(k / 32); }, 1e-6, 1e-6) == 0);
    }
}

TEST_CASE("a relocatable module calls a __device__ function of LTO-IR or of another cubin", "[raw][link][gpu]") {
    KJIT_REQUIRE_GPU();
    if (kjit::Device::current().properties().arch() != "sm_90") {
        WARN("SKIPPED: the helpers are built for sm_90; this GPU is " << kjit::Device::current().properties().arch());
        return;
    }
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    {
        INFO("a relocatable cubin compiled by NVRTC, given as bytes");
        check_helper_applied(RawModule(kCallsHelper, {.nvrtc_options = {"-rdc=true"},
                                                      .link = {LinkInput::image(nvrtc_helper(2.5f), ImageKind::cubin)}}));
    }
    const std::filesystem::path bin = binaries();
    if (bin.empty()) return;
    for (const char* file : {"raw_link_helper_90.ltoir", "raw_link_helper_sm90.cubin"}) {
        INFO(file);
        check_helper_applied(
            RawModule(kCallsHelper, {.nvrtc_options = {"-dc"}, .link = {LinkInput::file((bin / file).string())}}));
    }
}

TEST_CASE("LTO-IR built by nvcc is linked at load and runs", "[raw][link][gpu]") {
    KJIT_REQUIRE_GPU();
    const std::filesystem::path bin = binaries();
    if (bin.empty()) return;
    if (kjit::Device::current().properties().arch() != "sm_90") {
        WARN("SKIPPED: the LTO-IR is built for sm_90");
        return;
    }
    const RawModule lto = RawModule::from_file((bin / "raw_image_90.ltoir").string());
    const int n = 70001;
    const kjit::test::DeviceData x = kjit::test::random_device(kjit::DType::float32, {n});
    const kjit::Array y = kjit::test::poisoned(kjit::DType::float32, {n});
    lto.get_function("affine")((n + 255) / 256, 256, {x.device, y, n});
    const auto xs = [&](std::size_t k) { return kjit::test::element_value(x.host, kjit::DType::float32, k).real(); };
    CHECK(kjit::test::mismatches(y, [&](std::size_t k) { return 3.0 * xs(k) + 1.0; }, 1e-6, 1e-6) == 0);
    CHECK(lto.get_function("affine").attributes().arch == "sm_90");
}
