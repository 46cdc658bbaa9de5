// RawModule and RawKernel: compiling user CUDA (errors, cache hits, name expressions, manifests and
// precompiling), the checks made before any launch, and launches on the GPU against host
// references on fresh random data. Launching on a pretend driver: raw_launch_host_test.cpp.
#include "test_support.hpp"

#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <thread>

#include "cache/manifest.hpp"
#include "fake_driver.hpp"
#include "jit/kernels/elementwise/manifest.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/cache.hpp"
#include "kjit/error.hpp"
#include "kjit/raw_kernel.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::test::cache_in;
using kjit::test::ProcessCacheGuard;
using kjit::Array;
using kjit::DType;
using kjit::RawKernel;
using kjit::RawModule;
using kjit::RawModuleOptions;
using Catch::Matchers::Contains;

// GCC 12 warns about designated initializers that leave out members with default initializers
// ({.name = "m"}), which is how RawModuleOptions and LaunchConfig are meant to be written.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace {

// --- the GPU tests' sources (also compiled by a CPU test, so that a typo shows up anywhere) ---

const char* const kSaxpy = R"(
extern "C" __global__ void saxpy_f32(float a, const float* x, const float* y, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy_f64(double a, const double* x, const double* y, double* out, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy_i64(long long a, const long long* x, const long long* y, long long* out, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
)";

// Writes the bytes of every scalar parameter, one after the other: what the kernel received.
const char* const kEcho = R"(
template <class T>
__device__ void put(unsigned char* out, int& at, T v) {
    memcpy(out + at, &v, sizeof v);
    at += sizeof v;
}
extern "C" __global__ void echo(bool b, signed char i8, unsigned char u8, short i16, unsigned short u16, int i32,
                                unsigned u32, long long i64, unsigned long long u64, float f32, double f64,
                                unsigned short f16_bits, unsigned short bf16_bits, float2 c64, double2 c128,
                                unsigned char* out) {
    int at = 0;
    put(out, at, b); put(out, at, i8); put(out, at, u8); put(out, at, i16); put(out, at, u16);
    put(out, at, i32); put(out, at, u32); put(out, at, i64); put(out, at, u64); put(out, at, f32);
    put(out, at, f64); put(out, at, f16_bits); put(out, at, bf16_bits); put(out, at, c64); put(out, at, c128);
}
)";

const char* const kTemplate = R"(
template <class T, int N>
__global__ void scale_add(const T* x, T* y, T s, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s + T(N);
}
)";

// One block reverses n floats through dynamic shared memory.
const char* const kReverse = R"(
extern "C" __global__ void reverse_in_shared(const float* x, float* y, int n) {
    extern __shared__ float tile[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = x[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) y[i] = tile[n - 1 - i];
}
)";

// A toolkit header, found because of the angle-bracket include.
const char* const kHalf = R"(
#include <cuda_fp16.h>
extern "C" __global__ void half_axpy(__half a, const __half* x, __half* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);
}
)";

// A __constant__ table and a __device__ array in a namespace, both filled from the host through
// RawModule::global before the launch.
const char* const kConstantTable = R"(
__constant__ double taps[256];
namespace lookup { __device__ float offsets[4]; }
extern "C" __global__ void apply_taps(const double* x, double* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * taps[i % 256] + lookup::offsets[i % 4];
}
)";
const RawModuleOptions kConstantTableOptions{.name_expressions = {"&lookup::offsets"}, .name = "constant_table"};

// Clusters of two blocks: each block stages its slice of x in shared memory, then reads its
// partner's slice, reversed, through distributed shared memory.
const char* const kPartnerReverse = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void partner_reverse(const float* x, float* y, int per_block) {
    extern __shared__ float slice[];
    cg::cluster_group cluster = cg::this_cluster();
    const float* mine = x + (size_t)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) slice[i] = mine[i];
    cluster.sync();
    const float* partner = cluster.map_shared_rank(slice, cluster.block_rank() ^ 1u);
    float* out = y + (size_t)blockIdx.x * per_block;
    for (int i = threadIdx.x; i < per_block; i += blockDim.x) out[i] = 2.0f * partner[per_block - 1 - i] + slice[i];
    cluster.sync();  // a block's shared memory must outlive its partner's reads
}
)";

// A cluster fixed when compiled (__cluster_dims__): a plain launch runs it; each block writes its
// rank in the cluster.
const char* const kClusterRanks = R"(
#include <cooperative_groups.h>
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_ranks(unsigned* rank) {
    if (threadIdx.x == 0) rank[blockIdx.x] = cooperative_groups::this_cluster().block_rank();
}
)";

// Two phases around a grid-wide sync: each block sums its share of x into partials[block], then
// block 0 adds the partials (every block must be resident at once: a cooperative launch).
const char* const kGridSum = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void grid_sum(const double* x, double* partials, double* total, long long n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ double sums[256];
    double s = 0;
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n; i += grid.size()) s += x[i];
    sums[threadIdx.x] = s;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) sums[threadIdx.x] += sums[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
    grid.sync();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        double t = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partials[b];
        *total = t;
    }
}
)";

template <class T>
std::vector<T> random_values(DType t, std::int64_t n) {
    const std::vector<unsigned char> bytes = kjit::test::random_elements(t, n);
    std::vector<T> v(static_cast<std::size_t>(n));
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
}

template <class T>
Array device_array(const std::vector<T>& v, DType t, const kjit::Stream& s = kjit::Stream::current()) {
    return Array::from_host(v.data(), t, {static_cast<std::int64_t>(v.size())}, kjit::Device::cuda(0), s);
}

// An output whose every byte is 0xff (NaN for floats): an element the kernel missed shows.
Array poisoned(DType t, std::int64_t n, const kjit::Stream& s = kjit::Stream::current()) {
    const std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * t.itemsize(), 0xff);
    return Array::from_host(bytes.data(), t, {n}, kjit::Device::cuda(0), s);
}

template <class T>
std::vector<T> host_values(const Array& a, const kjit::Stream& s = kjit::Stream::current()) {
    std::vector<T> v(static_cast<std::size_t>(a.size()));
    a.copy_to_host(v.data(), s);
    return v;
}

// The value of dtype `t` whose bytes are `b`, as a Scalar of that dtype.
kjit::Scalar scalar_of(DType t, const std::vector<unsigned char>& b) {
    auto as = [&](auto v) {
        std::memcpy(&v, b.data(), sizeof v);
        return kjit::Scalar(v);
    };
    switch (t.id()) {
        case DType::bool_: return kjit::Scalar(b[0] != 0);
        case DType::int8: return as(std::int8_t{});
        case DType::int16: return as(std::int16_t{});
        case DType::int32: return as(std::int32_t{});
        case DType::int64: return as(std::int64_t{});
        case DType::uint8: return as(std::uint8_t{});
        case DType::uint16: return as(std::uint16_t{});
        case DType::uint32: return as(std::uint32_t{});
        case DType::uint64: return as(std::uint64_t{});
        case DType::float16: return as(kjit::half{});
        case DType::bfloat16: return as(kjit::bfloat16{});
        case DType::float32: return as(float{});
        case DType::float64: return as(double{});
        case DType::complex64: return as(std::complex<float>{});
        case DType::complex128: return as(std::complex<double>{});
    }
    FAIL("unknown dtype");
    return {};
}

unsigned blocks_for(std::int64_t n, unsigned block) { return static_cast<unsigned>((n + block - 1) / block); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Compiling, caching, manifests: no GPU needed.
// ---------------------------------------------------------------------------------------------

TEST_CASE("a raw module that does not compile is a CompileError with NVRTC's log", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const RawModule broken("extern \"C\" __global__ void k(float* x) {\n    x[0] = undeclared_thing;\n}\n",
                           RawModuleOptions{.name = "broken"});
    try {
        broken.compile("sm_90");
        FAIL("compiled");
    } catch (const kjit::CompileError& e) {
        CHECK_THAT(e.log(), Contains("undeclared_thing"));
        CHECK_THAT(e.log(), Contains("broken.cu(2)"));
        CHECK_THAT(e.source_excerpt(), Contains("> 2 |"));
        CHECK_THAT(std::string(e.what()), Contains("broken.cu"));
    }
    CHECK(kjit::cache_stats().compiles == 0);  // a failure is not an entry
    // A RawKernel names its kernel as a name expression: one the source lacks fails to compile.
    const RawKernel missing(kSaxpy, "saxpy_f16");
    CHECK_THROWS_AS(missing.module().compile("sm_90"), kjit::CompileError);
    CHECK_THROWS_WITH(missing.module().compile("sm_90"), Contains("saxpy_f16"));
    // An option NVRTC does not know.
    const RawModule bad_option(kSaxpy, RawModuleOptions{.nvrtc_options = {"--no-such-option"}});
    CHECK_THROWS_WITH(bad_option.compile("sm_90"), Contains("--no-such-option"));
}

TEST_CASE("raw modules are found in the kernel cache: memory, disk, and without NVRTC", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    const RawModuleOptions options{.name_expressions = {"scale_add<float, 4>"}, .name = "cached"};
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    const kjit::Binary first = RawModule(kTemplate, options).compile("sm_90");
    CHECK(first.compile_ms > 0);
    CHECK_FALSE(first.cubin.empty());
    CHECK_FALSE(first.ptx.empty());
    CHECK(kjit::cache_stats().compiles == 1);

    // Another object with the same source and options: the same key, from memory.
    const std::uint64_t hits = kjit::cache_stats().memory_hits;
    const kjit::Binary second = RawModule(kTemplate, options).compile("sm_90");
    CHECK(second.compile_ms == 0);
    CHECK(second.cubin == first.cubin);
    CHECK(second.entry_points == first.entry_points);
    CHECK(kjit::cache_stats().compiles == 1);
    CHECK(kjit::cache_stats().memory_hits == hits + 1);

    // A new process (empty memory): from the disk.
    kjit::configure_cache(cache_in(dir.path() / "cache"));
    CHECK(RawModule(kTemplate, options).compile("sm_90").compile_ms == 0);
    CHECK(kjit::cache_stats().compiles == 0);
    CHECK(kjit::cache_stats().layers[0].hits == 1);

    // A process without NVRTC, the folder shipped read-only: the lowered names come from the entry.
    kjit::CacheSettings shipped = cache_in(dir.path() / "empty");
    shipped.read_only = {(dir.path() / "cache").string()};
    kjit::configure_cache(shipped);
    {
        const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
        const kjit::Binary third = RawModule(kTemplate, options).compile("sm_90");
        CHECK(third.cubin == first.cubin);
        CHECK(third.entry_points == first.entry_points);
        CHECK(kjit::cache_stats().compiles == 0);
        // Not in the cache (another architecture), and no NVRTC: says so.
        CHECK_THROWS_AS(RawModule(kTemplate, options).compile("sm_80"), kjit::NoDeviceError);
        CHECK_THROWS_WITH(RawModule(kTemplate, options).compile("sm_80"), Contains("raw module 'cached'"));
    }

    // What changes the bytes changes the key: options, name expressions, the label, the source.
    kjit::configure_cache(cache_in(dir.path() / "keys"));
    RawModule(kTemplate, options).compile("sm_90");
    RawModule(kTemplate,
              {.nvrtc_options = {"-DUNUSED=1"}, .name_expressions = {"scale_add<float, 4>"}, .name = "cached"})
        .compile("sm_90");
    RawModule(kTemplate, {.name_expressions = {"scale_add<double, 4>"}, .name = "cached"}).compile("sm_90");
    RawModule(kTemplate, {.name_expressions = {"scale_add<float, 4>"}, .name = "other"}).compile("sm_90");
    RawModule(std::string(kTemplate) + "\n", options).compile("sm_90");
    CHECK(kjit::cache_stats().compiles == 5);
}

TEST_CASE("name expressions are lowered to the kernels' mangled names", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    const std::string source = std::string(kTemplate) + "extern \"C\" __global__ void plain(int* x) { x[0] = 1; }\n" +
                               "namespace ns { __global__ void cpp_linkage(int* x) { x[0] = 2; } }\n";
    const RawModule m(source, {.name_expressions = {"scale_add<float, 4>", "scale_add<double, -2>", "plain",
                                                    "ns::cpp_linkage"}});
    const kjit::Binary b = m.compile("sm_90");
    REQUIRE(b.entry_points.size() == 4);
    CHECK(b.entry_point("scale_add<float, 4>") == "_Z9scale_addIfLi4EEvPKT_PS0_S0_i");
    CHECK(b.entry_point("scale_add<double, -2>").rfind("_Z9scale_addIdLin2EE", 0) == 0);
    CHECK(b.entry_point("plain") == "plain");  // extern "C": itself
    CHECK(b.entry_point("ns::cpp_linkage").rfind("_ZN2ns11cpp_linkage", 0) == 0);
    CHECK_THROWS_WITH(b.entry_point("scale_add<int, 1>"), Contains("no entry point 'scale_add<int, 1>'") && Contains("plain"));
    // The mangled names are in the cubin, which is what the driver looks up.
    for (const auto& [expression, lowered] : b.entry_points) {
        INFO(expression);
        const std::string cubin(b.cubin.begin(), b.cubin.end());
        CHECK(cubin.find(lowered) != std::string::npos);
    }

    // get_function: a name expression, or a C identifier (checked on the device); anything else
    // is refused at once, listing the expressions (NVRTC matches them as written).
    CHECK(m.get_function("scale_add<float, 4>").name() == "scale_add<float, 4>");
    CHECK(m.get_function("not_checked_until_used").name() == "not_checked_until_used");
    CHECK_THROWS_AS(m.get_function("scale_add<float,4>"), kjit::Error);
    CHECK_THROWS_WITH(m.get_function("scale_add<int, 1>"),
                      Contains("scale_add<int, 1>") && Contains("\"scale_add<float, 4>\", \"scale_add<double, -2>\""));
    // A RawKernel adds its name to the expressions; a template kernel needs nothing else.
    const RawKernel k(kTemplate, "scale_add<double, 3>");
    CHECK(k.module().options().name_expressions == std::vector<std::string>{"scale_add<double, 3>"});
    CHECK(k.module().name() == "scale_add<double, 3>");
    CHECK(k.module().compile("sm_90").entry_point("scale_add<double, 3>").rfind("_Z9scale_addIdLi3EE", 0) == 0);
}

TEST_CASE("toolkit headers: an include by name finds the toolkit and its CCCL headers", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    CHECK_FALSE(RawModule(kHalf).compile("sm_90").cubin.empty());
    const std::string quoted = "#include \"cuda_fp16.h\"\n__global__ void k(__half* x) { x[0] = __float2half(1.f); }\n";
    CHECK_FALSE(RawModule(quoted).compile("sm_90").cubin.empty());
    CHECK_FALSE(RawModule(quoted, {.toolkit_headers = true}).compile("sm_90").cubin.empty());
    // CUDA 13 keeps CCCL under include/cccl: CuPy users include it as <cuda/std/...> and <cub/...>.
    const std::string cccl =
        "#include <cuda/std/limits>\n#include <cub/warp/warp_reduce.cuh>\n"
        "extern \"C\" __global__ void k(float* x) {\n"
        "    using Reduce = cub::WarpReduce<float>;\n"
        "    __shared__ Reduce::TempStorage temp;\n"
        "    const float s = Reduce(temp).Sum(x[threadIdx.x]);\n"
        "    if (threadIdx.x == 0) x[0] = s + cuda::std::numeric_limits<float>::epsilon();\n"
        "}\n";
    CHECK_FALSE(RawModule(cccl).compile("sm_90").cubin.empty());
    // A preamble of an elementwise kernel too.
    const kjit::ElementwiseKernel k("T x", "T y", "y = x + smallest()", "with_cccl",
                              {.preamble = "#include <cuda/std/limits>\nfloat smallest() { return cuda::std::numeric_limits<float>::min(); }\n"});
    CHECK_FALSE(k.compile({{"T", kjit::DType::float32}}, "sm_90").cubin.empty());
}

TEST_CASE("the GPU tests' sources compile", "[raw][nvrtc]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir dir;
    kjit::configure_cache(cache_in(dir.path()));
    for (const char* source : {kSaxpy, kEcho, kReverse, kHalf, kPartnerReverse, kClusterRanks, kGridSum})
        CHECK_NOTHROW(RawModule(source).compile("sm_90"));
    CHECK_NOTHROW(RawModule(kTemplate, {.name_expressions = {"scale_add<float, 4>", "scale_add<double, -2>"}})
                      .compile("sm_90"));
    // A variable's address as a name expression lowers to its mangled name, which global() asks for.
    const kjit::Binary table = RawModule(kConstantTable, kConstantTableOptions).compile("sm_90");
    CHECK(table.entry_point("&lookup::offsets") == "_ZN6lookup7offsetsE");
    const std::string cubin(table.cubin.begin(), table.cubin.end());
    CHECK(cubin.find("_ZN6lookup7offsetsE") != std::string::npos);
    CHECK(cubin.find("taps") != std::string::npos);
}

TEST_CASE("raw modules are recorded in the manifest and precompiled from it", "[raw][nvrtc][kernel_cache]") {
    const ProcessCacheGuard restore;
    const kjit::test::TempDir work;
    const auto manifest = work.path() / "manifest.json";
    const RawModule with_options(kTemplate, {.nvrtc_options = {"-DTILE=32"},
                                             .name_expressions = {"scale_add<float, 4>"},
                                             .name = "recorded"});
    const RawKernel plain(kSaxpy, "saxpy_f32");

    // 1. An application records what it compiles.
    kjit::CacheSettings app = cache_in(work.path() / "app");
    app.record = manifest.string();
    kjit::configure_cache(app);
    with_options.compile("sm_90");
    plain.module().compile("sm_90");
    plain.module().compile("sm_90");  // once in the manifest
    const nlohmann::json recorded = kjit::cache::read_manifest(manifest);
    REQUIRE(recorded["kernels"].size() == 2);
    const nlohmann::json& e = recorded["kernels"][0];
    CHECK(e["kind"] == "raw");
    CHECK(e["name"] == "recorded");
    CHECK(e["source"] == kTemplate);
    CHECK(e["options"] == nlohmann::json({"-DTILE=32"}));
    CHECK(e["name_expressions"] == nlohmann::json({"scale_add<float, 4>"}));
    CHECK_FALSE(e.contains("types"));
    CHECK(recorded["kernels"][1]["name"] == "saxpy_f32");
    CHECK_FALSE(recorded["kernels"][1].contains("options"));

    // 2. A build machine precompiles it, plus an entry written by hand in DESIGN.md's form.
    nlohmann::json m = recorded;
    m["kernels"].push_back(
        {{"kind", "raw"}, {"name", "scan"}, {"source", "extern \"C\" __global__ void k(int* x) { x[0] = 3; }"}});
    m["kernels"].push_back({{"kind", "raw"}, {"name", "bad"}, {"source", 42}});
    kjit::configure_cache(cache_in(work.path() / "shipped"));
    const kjit::jit::kernels::PrecompileResult first = kjit::jit::kernels::precompile(m, {"sm_80", "sm_90"}, 2);
    CHECK(first.jobs == 6);
    CHECK(first.compiled == 6);
    REQUIRE(first.failures.size() == 1);
    CHECK_THAT(first.failures[0], Contains("'bad'") && Contains("\"source\" must be a string"));
    kjit::configure_cache(cache_in(work.path() / "shipped"));
    CHECK(kjit::jit::kernels::precompile(m, {"sm_80", "sm_90"}, 2).compiled == 0);

    // 3. The application ships it and has no NVRTC: every module is found, with its lowered names.
    kjit::CacheSettings shipped = cache_in(work.path() / "empty");
    shipped.read_only = {(work.path() / "shipped").string()};
    kjit::configure_cache(shipped);
    const kjit::detail::ScopedNvrtcOverride no_nvrtc(nullptr);
    for (const char* arch : {"sm_80", "sm_90"}) {
        INFO(arch);
        const kjit::Binary b = with_options.compile(arch);
        CHECK(b.arch == arch);
        REQUIRE(b.entry_points.size() == 1);
        CHECK(b.entry_point("scale_add<float, 4>").rfind("_Z9scale_addIfLi4EE", 0) == 0);
        CHECK_NOTHROW(plain.module().compile(arch));
    }
    CHECK(kjit::cache_stats().compiles == 0);
}

TEST_CASE("raw manifest entries: what is read, and what is refused", "[raw]") {
    using kjit::jit::kernels::raw_module_from_manifest_entry;
    const nlohmann::json full = {{"kind", "raw"},
                                 {"name", "m"},
                                 {"source", "src"},
                                 {"options", {"-lineinfo"}},
                                 {"name_expressions", {"k<int>"}},
                                 {"toolkit_headers", true}};
    const RawModule m = raw_module_from_manifest_entry(full);
    CHECK(m.name() == "m");
    CHECK(m.source() == "src");
    CHECK(m.options().nvrtc_options == std::vector<std::string>{"-lineinfo"});
    CHECK(m.options().name_expressions == std::vector<std::string>{"k<int>"});
    CHECK(m.options().toolkit_headers);
    CHECK(raw_module_from_manifest_entry({{"kind", "raw"}, {"source", "s"}}).name() == "raw_module");

    auto refused = [&](nlohmann::json e, const std::string& message) {
        INFO(e.dump());
        CHECK_THROWS_AS(raw_module_from_manifest_entry(e), kjit::CacheError);
        CHECK_THROWS_WITH(raw_module_from_manifest_entry(e), Contains(message));
    };
    refused({{"kind", "raw"}}, "missing \"source\"");
    refused({{"kind", "raw"}, {"source", "s"}, {"name_expressions", "k<int>"}}, "\"name_expressions\" must be a list");
    refused({{"kind", "raw"}, {"source", "s"}, {"options", {1}}}, "\"options\" must be a list");
    refused({{"kind", "raw"}, {"source", "s"}, {"toolkit_headers", "yes"}}, "\"toolkit_headers\"");
    refused({{"kind", "raw"}, {"source", "s"}, {"name_expressions", {""}}}, "empty name expression");
    refused({{"kind", "elementwise"}, {"op", "y = x"}}, "not a raw entry");
    // The elementwise reader (kjit compile --spec) says what a raw entry is.
    CHECK_THROWS_WITH(kjit::jit::kernels::kernel_from_manifest_entry({{"kind", "raw"}, {"source", "s"}}),
                      Contains("raw CUDA entry"));
}

TEST_CASE("raw modules refuse what they cannot compile faithfully", "[raw]") {
    CHECK_THROWS_WITH(RawModule(std::string("ok\0hidden", 9)), Contains("NUL"));
    CHECK_THROWS_WITH(RawKernel(kSaxpy, ""), Contains("needs a name"));
    CHECK_THROWS_WITH(RawModule(kSaxpy, {.name_expressions = {""}}), Contains("empty name expression"));
}

// ---------------------------------------------------------------------------------------------
// Launch checks that come before any driver call.
// ---------------------------------------------------------------------------------------------

TEST_CASE("host arrays, arrays on another device and too many arguments are refused", "[raw]") {
    const RawKernel k(kSaxpy, "saxpy_f32");
    const Array host = Array::empty({4}, DType::float32, kjit::Device::cpu());
    float dummy = 0;
    // Borrowed memory said to be on cuda:1: nothing touches it before the check.
    const Array elsewhere = Array::wrap(&dummy, DType::float32, {1}, kjit::Device::cuda(1));
    const kjit::Stream on_0 = kjit::Stream::legacy_default(kjit::Device::cuda(0));
    CHECK_THROWS_WITH(k(1, 32, {2.0f, host, host, host, 4}, {.stream = on_0}),
                      Contains("argument 1 is a host array") && Contains("saxpy_f32"));
    CHECK_THROWS_WITH(k(1, 32, {2.0f, elsewhere, elsewhere, elsewhere, 1}, {.stream = on_0}),
                      Contains("argument 1 is on cuda:1 but the launch runs on cuda:0"));
    CHECK_THROWS_WITH(k(1, 32, {2.0f, Array(), Array(), Array(), 1}, {.stream = on_0}),
                      Contains("argument 1 is an Array with no buffer"));
    std::vector<kjit::KernelArg> many(kjit::kMaxRawKernelArgs + 1, kjit::KernelArg(1));
    CHECK_THROWS_WITH(k.launch(1, 1, many), Contains("at most 64"));
}

// ---------------------------------------------------------------------------------------------
// On the GPU.
// ---------------------------------------------------------------------------------------------

TEST_CASE("saxpy raw kernels with float32, float64 and int64 scalars", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawModule m(kSaxpy);
    const std::int64_t n = 1000003;  // not a multiple of the block
    SECTION("float32, int n") {
        const auto x = random_values<float>(DType::float32, n), y = random_values<float>(DType::float32, n);
        const float a = random_values<float>(DType::float32, 1)[0];
        const Array out = poisoned(DType::float32, n);
        m.get_function("saxpy_f32")(blocks_for(n, 256), 256,
                                    {a, device_array(x, DType::float32), device_array(y, DType::float32), out, int(n)});
        const std::vector<float> got = host_values<float>(out);
        std::size_t wrong = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            const double ref = double(a) * double(x[k]) + double(y[k]);
            if (!(std::fabs(got[k] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
        }
        CHECK(wrong == 0);
    }
    SECTION("float64, long long n") {
        const auto x = random_values<double>(DType::float64, n), y = random_values<double>(DType::float64, n);
        const double a = random_values<double>(DType::float64, 1)[0];
        const Array out = poisoned(DType::float64, n);
        m.get_function("saxpy_f64")(blocks_for(n, 128), 128,
                                    {a, device_array(x, DType::float64), device_array(y, DType::float64), out, n});
        const std::vector<double> got = host_values<double>(out);
        std::size_t wrong = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            const double ref = a * x[k] + y[k];
            if (!(std::fabs(got[k] - ref) <= 1e-12 * (std::fabs(ref) + 1))) ++wrong;
        }
        CHECK(wrong == 0);
    }
    SECTION("int64, unsigned n") {
        // Values of int16's range, so that a * x + y stays exact in int64 and in double.
        const auto x16 = random_values<std::int16_t>(DType::int16, n);
        const auto y16 = random_values<std::int16_t>(DType::int16, n);
        const std::vector<std::int64_t> x(x16.begin(), x16.end()), y(y16.begin(), y16.end());
        const std::int64_t a = random_values<std::int16_t>(DType::int16, 1)[0];
        const Array out = poisoned(DType::int64, n);
        const Array dx = device_array(x, DType::int64), dy = device_array(y, DType::int64);
        m.get_function("saxpy_i64")(blocks_for(n, 512), 512, {a, dx, dy, out, unsigned(n)});
        const std::vector<std::int64_t> got = host_values<std::int64_t>(out);
        std::size_t wrong = 0;
        for (std::int64_t k = 0; k < n; ++k)
            if (static_cast<double>(got[k]) != double(a) * double(x[k]) + double(y[k])) ++wrong;
        CHECK(wrong == 0);
    }
    SECTION("a scalar of the wrong size or a wrong count is refused") {
        const Array x = poisoned(DType::float32, 4);
        const RawKernel k = m.get_function("saxpy_f32");
        CHECK_THROWS_AS(k(1, 4, {2.5, x, x, x, 4}), kjit::TypeError);  // 2.5 is a double
        CHECK_THROWS_WITH(k(1, 4, {2.5, x, x, x, 4}), Contains("argument 0 is 2.5 (float64)"));
        CHECK_THROWS_WITH(k(1, 4, {2.5f, x, x, x, std::int64_t{4}}), Contains("argument 4"));
        CHECK_THROWS_WITH(k(1, 4, {2.5f, x, x, x}), Contains("takes 5 arguments, but 4 were given"));
        CHECK(k.attributes().parameter_sizes == std::vector<std::size_t>{4, 8, 8, 8, 4});
    }
}

TEST_CASE("every scalar dtype reaches the kernel as its bytes", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawKernel echo(kEcho, "echo");
    std::vector<kjit::KernelArg> args;
    std::vector<unsigned char> expected;
    // One fresh random value of each dtype, in the kernel's parameter order.
    const std::vector<DType> order = {DType::bool_, DType::int8, DType::uint8, DType::int16, DType::uint16,
                                      DType::int32, DType::uint32, DType::int64, DType::uint64, DType::float32,
                                      DType::float64, DType::float16, DType::bfloat16, DType::complex64,
                                      DType::complex128};
    for (DType t : order) {
        const std::vector<unsigned char> b = kjit::test::random_elements(t, 1);
        args.emplace_back(scalar_of(t, b));
        expected.insert(expected.end(), b.begin(), b.end());
    }
    const Array out = poisoned(DType::uint8, 128);
    args.emplace_back(out);
    echo.launch(1, 1, args);
    const std::vector<std::uint8_t> got = host_values<std::uint8_t>(out);
    REQUIRE(expected.size() == 71);
    for (std::size_t k = 0; k < order.size(); ++k) CHECK(args[k].scalar().dtype() == order[k]);
    CHECK(std::vector<unsigned char>(got.begin(), got.begin() + 71) == expected);
    CHECK(got[71] == 0xff);  // nothing written past them
}

TEST_CASE("template kernels by name expression", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = 70001;
    const RawModule m(kTemplate, {.name_expressions = {"scale_add<float, 4>", "scale_add<double, -2>"}});
    {
        const auto x = random_values<float>(DType::float32, n);
        const float s = random_values<float>(DType::float32, 1)[0];
        const Array y = poisoned(DType::float32, n);
        m.get_function("scale_add<float, 4>")(blocks_for(n, 256), 256, {device_array(x, DType::float32), y, s, int(n)});
        const std::vector<float> got = host_values<float>(y);
        std::size_t wrong = 0;
        for (std::int64_t k = 0; k < n; ++k) {
            const double ref = double(x[k]) * double(s) + 4.0;
            if (!(std::fabs(got[k] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
        }
        CHECK(wrong == 0);
    }
    {
        const auto x = random_values<double>(DType::float64, n);
        const double s = random_values<double>(DType::float64, 1)[0];
        const Array y = poisoned(DType::float64, n);
        // A RawKernel of the template directly.
        const RawKernel k(kTemplate, "scale_add<double, -2>");
        k(blocks_for(n, 256), 256, {device_array(x, DType::float64), y, s, int(n)});
        const std::vector<double> got = host_values<double>(y);
        std::size_t wrong = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double ref = x[i] * s - 2.0;
            if (!(std::fabs(got[i] - ref) <= 1e-12 * (std::fabs(ref) + 1))) ++wrong;
        }
        CHECK(wrong == 0);
    }
}

TEST_CASE("half arithmetic through a toolkit header", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = 4099;
    const auto x = random_values<kjit::half>(DType::float16, n), y = random_values<kjit::half>(DType::float16, n);
    const kjit::half a = random_values<kjit::half>(DType::float16, 1)[0];
    const Array dy = device_array(y, DType::float16);
    RawKernel(kHalf, "half_axpy")(blocks_for(n, 128), 128, {a, device_array(x, DType::float16), dy, int(n)});
    const std::vector<kjit::half> got = host_values<kjit::half>(dy);
    std::size_t wrong = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        // __hmul then __hadd, each rounded to half (at most 2^-11 of its result): twice that bound.
        const double product = double(float(a)) * double(float(x[k]));
        const double ref = product + double(float(y[k]));
        if (!(std::fabs(double(float(got[k])) - ref) <= std::ldexp(std::fabs(product) + std::fabs(ref), -10))) ++wrong;
    }
    CHECK(wrong == 0);
}

TEST_CASE("dynamic shared memory above 48 KiB", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const std::int64_t n = 24576;  // 96 KiB of floats in one block's shared memory
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    const auto x = random_values<float>(DType::float32, n);
    const Array y = poisoned(DType::float32, n);
    const RawKernel k(kReverse, "reverse_in_shared");
    k(1, 1024, {device_array(x, DType::float32), y, int(n)}, {.shared_mem_bytes = bytes});
    const std::vector<float> got = host_values<float>(y);
    std::size_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i)
        if (got[i] != x[n - 1 - i]) ++wrong;
    CHECK(wrong == 0);
    CHECK(k.attributes().max_dynamic_shared_bytes >= bytes);
    // More than any block can have: an Error saying how much there is.
    const std::size_t too_much = kjit::Device::cuda(0).properties().shared_memory_per_block + 1;
    CHECK_THROWS_WITH(k(1, 1024, {device_array(x, DType::float32), y, int(n)}, {.shared_mem_bytes = too_much}),
                      Contains("dynamic shared memory per block"));
}

TEST_CASE("launching on a created stream", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const kjit::Stream s = kjit::Stream::create();
    const std::int64_t n = 300007;
    const auto x = random_values<float>(DType::float32, n), y = random_values<float>(DType::float32, n);
    const Array dx = device_array(x, DType::float32, s), dy = device_array(y, DType::float32, s);
    const Array out = poisoned(DType::float32, n, s);
    const RawKernel k(kSaxpy, "saxpy_f32");
    k(blocks_for(n, 256), 256, {-1.5f, dx, dy, out, int(n)}, {.stream = s});
    const std::vector<float> got = host_values<float>(out, s);
    std::size_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        const double ref = -1.5 * double(x[i]) + double(y[i]);
        if (!(std::fabs(got[i] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++wrong;
    }
    CHECK(wrong == 0);
    // An array made on the default stream now belongs, for freeing, to the stream that used it.
    const Array z = poisoned(DType::float32, n);
    kjit::Device::cuda(0).synchronize();
    k(blocks_for(n, 256), 256, {2.0f, dx, dy, z, int(n)}, {.stream = s});
    CHECK(z.buffer()->last_stream() == s);
    s.synchronize();
}

TEST_CASE("eight threads launch one kernel for the first time at once", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    // A source no other test compiles, so that the first use races here.
    const RawKernel k(std::string(kSaxpy) + "// eight threads\n", "saxpy_f32");
    const std::int64_t n = 100000;
    const auto x = random_values<float>(DType::float32, n), y = random_values<float>(DType::float32, n);
    // Each thread on its own stream, with its own a; the count of wrong elements.
    auto run = [&](int t) {
        const kjit::Stream s = kjit::Stream::create(kjit::Device::cuda(0));
        const Array dx = device_array(x, DType::float32, s), dy = device_array(y, DType::float32, s);
        const Array out = poisoned(DType::float32, n, s);
        const float a = float(t + 1);
        k(blocks_for(n, 256), 256, {a, dx, dy, out, int(n)}, {.stream = s});
        const std::vector<float> got = host_values<float>(out, s);
        std::size_t bad = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double ref = double(a) * double(x[i]) + double(y[i]);
            if (!(std::fabs(got[i] - ref) <= 1e-5 * (std::fabs(ref) + 1))) ++bad;
        }
        return bad;
    };
    std::vector<std::size_t> wrong(8, 1);
    std::vector<std::string> errors(8);  // an exception must not leave a thread (nor may Catch's checks run there)
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            try {
                wrong[t] = run(t);
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < 8; ++t) {
        INFO("thread " << t << ": " << errors[t]);
        CHECK(errors[t].empty());
        CHECK(wrong[t] == 0);
    }
}

TEST_CASE("on the GPU: an unknown kernel, an array of the host", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawModule m(kSaxpy, {.name = "saxpy_module"});
    const Array x = poisoned(DType::float32, 4);
    CHECK_THROWS_WITH(m.get_function("saxpy_f16")(1, 4, {2.0f, x, x, x, 4}),
                      Contains("raw module 'saxpy_module' has no kernel 'saxpy_f16'") &&
                          Contains("name expressions: none"));
    const Array host = Array::empty({4}, DType::float32, kjit::Device::cpu());
    CHECK_THROWS_WITH(m.get_function("saxpy_f32")(1, 4, {2.0f, x, host, x, 4}), Contains("argument 2 is a host array"));
    // Still usable after both.
    m.get_function("saxpy_f32")(1, 4, {2.0f, x, x, x, 4});
    CHECK_NOTHROW(kjit::Device::cuda(0).synchronize());
}

TEST_CASE("a __constant__ table filled through RawModule::global is read by a kernel", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawModule m(kConstantTable, kConstantTableOptions);
    const Array taps = m.global("taps", DType::float64);
    const Array offsets = m.global("lookup::offsets", DType::float32);
    REQUIRE(taps.shape() == kjit::Shape{256});
    REQUIRE(offsets.shape() == kjit::Shape{4});
    CHECK(m.global("taps").bytes == 256 * sizeof(double));
    const std::int64_t n = 100003;
    const RawKernel k = m.get_function("apply_taps");
    // Twice, with fresh tables: the second launch must see the second fill.
    for (int round = 0; round < 2; ++round) {
        INFO("round " << round);
        const auto t = random_values<double>(DType::float64, 256);
        const auto o = random_values<float>(DType::float32, 4);
        taps.copy_from_host(t.data());
        offsets.copy_from_host(o.data());
        CHECK(host_values<double>(taps) == t);  // read back as written
        CHECK(host_values<float>(offsets) == o);
        const auto x = random_values<double>(DType::float64, n);
        const Array y = poisoned(DType::float64, n);
        k(blocks_for(n, 256), 256, {device_array(x, DType::float64), y, int(n)});
        const std::vector<double> got = host_values<double>(y);
        std::size_t wrong = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const long double product = static_cast<long double>(x[i]) * t[i % 256];
            const long double ref = product + o[i % 4];
            // One fused multiply-add or a rounded product and sum: within two roundings.
            const long double error = std::fabs(static_cast<long double>(got[i]) - ref);
            if (!(error <= 0x1p-51L * (std::fabs(product) + std::fabs(ref)))) ++wrong;
        }
        CHECK(wrong == 0);
    }
}

TEST_CASE("a cluster of two blocks reads its partner's shared memory", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawKernel k(kPartnerReverse, "partner_reverse");
    const int per_block = 1000;  // not a multiple of the block
    const unsigned grid = 2 * 37;
    const std::int64_t n = std::int64_t{grid} * per_block;
    const auto x = random_values<float>(DType::float32, n);
    const Array dx = device_array(x, DType::float32);
    const Array y = poisoned(DType::float32, n);
    const kjit::LaunchConfig config{.shared_mem_bytes = per_block * sizeof(float), .cluster = {2, 1, 1}};
    if (kjit::Device::cuda(0).properties().cc_major < 9) {
        CHECK_THROWS_WITH(k(grid, 128, {dx, y, per_block}, config), Contains("needs compute capability 9.0"));
        WARN("clusters need compute capability 9.0: only the refusal was checked");
        return;
    }
    k(grid, 128, {dx, y, per_block}, config);
    const std::vector<float> got = host_values<float>(y);
    std::size_t wrong = 0;
    for (unsigned b = 0; b < grid; ++b)
        for (int i = 0; i < per_block; ++i) {
            const std::size_t at = std::size_t{b} * per_block + i;
            const std::size_t partner = std::size_t{b ^ 1u} * per_block + (per_block - 1 - i);
            const double ref = 2.0 * double(x[partner]) + double(x[at]);
            if (!(std::fabs(double(got[at]) - ref) <= 0x1p-23 * std::fabs(ref))) ++wrong;
        }
    CHECK(wrong == 0);
    // A grid of whole clusters only.
    CHECK_THROWS_WITH(k(grid - 1, 128, {dx, y, per_block}, config),
                      Contains("grid (73, 1, 1) is not a multiple of the cluster (2, 1, 1)"));

    // A cluster fixed at compile time runs from a plain launch; the attributes say it.
    const RawKernel ranks(kClusterRanks, "cluster_ranks");
    const Array r = poisoned(DType::uint32, 64);
    ranks(64, 32, {r});
    const std::vector<std::uint32_t> got_ranks = host_values<std::uint32_t>(r);
    for (std::uint32_t b = 0; b < 64; ++b) CHECK(got_ranks[b] == b % 2);
    const kjit::RawKernelAttributes a = ranks.attributes();
    CHECK((a.required_cluster.x == 2 && a.required_cluster.y == 1 && a.required_cluster.z == 1));
}

TEST_CASE("a cooperative kernel syncs its whole grid", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawKernel k(kGridSum, "grid_sum");
    const int sms = kjit::Device::cuda(0).properties().sm_count;
    const unsigned grid = 2 * static_cast<unsigned>(sms), block = 256;
    const std::int64_t n = (std::int64_t{1} << 22) + 3;
    const auto x = random_values<double>(DType::float64, n);
    const Array partials = poisoned(DType::float64, grid), total = poisoned(DType::float64, 1);
    k(grid, block, {device_array(x, DType::float64), partials, total, n}, {.cooperative = true});
    // What each block and the grid sum, in long double, with the same split of x.
    std::vector<long double> want(grid, 0.0L);
    long double sum = 0, magnitude = 0;
    const std::int64_t threads = std::int64_t{grid} * block;
    for (std::int64_t i = 0; i < n; ++i) {
        want[static_cast<std::size_t>(i % threads / block)] += x[i];
        sum += x[i];
        magnitude += std::fabs(x[i]);
    }
    const std::vector<double> got = host_values<double>(partials);
    std::size_t wrong = 0;
    for (unsigned b = 0; b < grid; ++b)
        if (!(std::fabs(got[b] - want[b]) <= 1e-12L * magnitude)) ++wrong;
    CHECK(wrong == 0);
    const double got_total = host_values<double>(total)[0];
    INFO("total " << got_total << ", reference " << static_cast<double>(sum));
    CHECK(std::fabs(got_total - sum) <= 1e-12L * magnitude);
    // More blocks than can be resident at once: refused with the device's numbers.
    CHECK_THROWS_WITH(k(64 * grid, block, {device_array(x, DType::float64), partials, total, n}, {.cooperative = true}),
                      Contains("keeps resident at once") && Contains(std::to_string(sms) + " SMs"));
}

TEST_CASE("function attributes read on the GPU", "[raw][gpu]") {
    KJIT_REQUIRE_GPU();
    const RawModule m(kConstantTable, kConstantTableOptions);
    const RawKernel k = m.get_function("apply_taps");
    const kjit::RawKernelAttributes a = k.attributes();
    CHECK(a.const_size_bytes >= 256 * sizeof(double));  // the __constant__ table
    CHECK(a.max_threads_per_block > 0);
    CHECK(a.num_regs > 0);
    CHECK(a.binary_version >= 80);
    CHECK(a.ptx_version >= 80);
    CHECK_FALSE(a.cluster_size_must_be_set);
    CHECK((a.required_cluster.x == 0 && a.required_cluster.y == 0 && a.required_cluster.z == 0));
    CHECK(a.parameter_sizes == std::vector<std::size_t>{8, 8, 4});
    // A carveout set by a launch is what the driver then reports.
    const Array x = poisoned(DType::float64, 4), y = poisoned(DType::float64, 4);
    k(1, 32, {x, y, 4}, {.shared_carveout = 25});
    CHECK(k.attributes().preferred_shared_memory_carveout == 25);
    k(1, 32, {x, y, 4}, {.shared_carveout = kjit::kCarveoutMaxShared});
    CHECK(k.attributes().preferred_shared_memory_carveout == 100);
    CHECK_NOTHROW(kjit::Device::cuda(0).synchronize());
}

// Not a test: what a warm launch costs on the host, beside a bare cuLaunchKernel of the same
// kernel; run by hand on a GPU machine with `kjit_tests "[raw_bench]"`.
TEST_CASE("host time of a warm raw kernel launch", "[.][raw_bench]") {
    KJIT_REQUIRE_GPU();
    using clock = std::chrono::steady_clock;
    const RawKernel k(kSaxpy, "saxpy_f32");
    const int n = 1000;
    const Array x = poisoned(DType::float32, n), out = poisoned(DType::float32, n);
    k(4, 256, {2.0f, x, x, out, n});  // compiled and loaded here
    const kjit::Binary bin = k.module().compile();
    auto& d = kjit::detail::driver_on(0);
    CUmodule module = nullptr;
    REQUIRE(d.cuModuleLoadData(&module, bin.cubin.data()) == CUDA_SUCCESS);
    CUfunction bare = nullptr;
    REQUIRE(d.cuModuleGetFunction(&bare, module, "saxpy_f32") == CUDA_SUCCESS);
    float a = 2.0f;
    void *px = x.data(), *pout = out.data();
    int count = n;
    void* params[] = {&a, &px, &px, &pout, &count};
    // Batches short enough that the launch queue never fills: only the host's enqueue is timed.
    const int batches = 50, per_batch = 200;
    double kjit_us = 0, bare_us = 0;
    for (int b = 0; b < batches; ++b) {
        auto t = clock::now();
        for (int i = 0; i < per_batch; ++i) k(4, 256, {2.0f, x, x, out, n});
        kjit_us += std::chrono::duration<double, std::micro>(clock::now() - t).count();
        kjit::Device::cuda(0).synchronize();
        t = clock::now();
        for (int i = 0; i < per_batch; ++i)
            REQUIRE(d.cuLaunchKernel(bare, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS);
        bare_us += std::chrono::duration<double, std::micro>(clock::now() - t).count();
        kjit::Device::cuda(0).synchronize();
    }
    d.cuModuleUnload(module);
    const double launches = double(batches) * per_batch;
    WARN("warm RawKernel launch: " << kjit_us / launches << " us on the host; bare cuLaunchKernel: "
                                   << bare_us / launches << " us");
}
