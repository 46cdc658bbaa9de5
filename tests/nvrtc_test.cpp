// The NVRTC wrapper (jit/nvrtc_compiler), the embedded templates (jit/templates) and the CUDA
// prelude templates they hold, compiled to cubin for sm_80 and sm_90 (no GPU needed).
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <sys/resource.h>
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "jit/compile/arch.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "jit/compile/nvrtc_version.hpp"
#include "jit/codegen/templates.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/nvrtc.hpp"

using kjit::jit::compile::CompileRequest;
using kjit::jit::compile::CompileResult;

namespace {

const char* const axpb_source = R"(extern "C" __global__ void axpb(const float* x, float* y, float a, float b, unsigned n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + b;
}
)";

kjit::jit::compile::ArchTarget target(int cc, bool ptx_only = false) {
    return kjit::jit::compile::clamp_arch({cc, ptx_only}, kjit::jit::compile::nvrtc_supported_archs(), "test");
}

CompileRequest request(std::string source, std::string name, int cc) {
    CompileRequest r;
    r.source = std::move(source);
    r.program_name = std::move(name);
    r.target = target(cc);
    return r;
}

bool is_elf(const std::vector<unsigned char>& bytes) {
    return bytes.size() > 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F';
}

// Catches the CompileError a request must give.
kjit::CompileError compile_error(const CompileRequest& r) {
    try {
        kjit::jit::compile::compile_cuda(r);
    } catch (const kjit::CompileError& e) {
        return e;
    }
    FAIL("no CompileError for " << r.program_name);
    throw;  // unreachable
}

}  // namespace

// ---------------------------------------------------------------------------- templates

TEST_CASE("templates are embedded, listed and looked up by name", "[nvrtc][templates]") {
    const auto& names = kjit::jit::codegen::template_names();
    CHECK(std::is_sorted(names.begin(), names.end()));
    CHECK(std::find(names.begin(), names.end(), "complex.cuh") != names.end());
    CHECK(std::find(names.begin(), names.end(), "scalar_types.cuh") != names.end());
    CHECK_THAT(std::string(kjit::jit::codegen::template_text("complex.cuh")), Catch::Contains("struct alignas(2 * sizeof(T)) complex"));
    CHECK_THROWS_AS(kjit::jit::codegen::template_text("nope.cuh"), kjit::Error);
    CHECK_THROWS_WITH(kjit::jit::codegen::template_text("nope.cuh"), Catch::Contains("nope.cuh") && Catch::Contains("complex.cuh"));
}

TEST_CASE("embedded templates equal their files byte for byte, includes expanded", "[nvrtc][templates]") {
    // complex.cuh is longer than one embedded part (8000 bytes), so this also checks the joining.
    const std::filesystem::path dir = std::filesystem::path(__FILE__).parent_path().parent_path() / "templates";
    if (!std::filesystem::exists(dir)) {
        WARN("SKIPPED: source tree not found at " << dir);
        return;
    }
    const auto read = [&](std::string_view name) {
        std::ifstream in(dir / std::string(name), std::ios::binary);
        std::stringstream file;
        file << in.rdbuf();
        return file.str();
    };
    bool expanded = false;
    for (std::string_view name : kjit::jit::codegen::template_names()) {
        std::string text = read(name);
        // `#include "x.cuh"` lines are replaced by x.cuh's text when kjit is built.
        for (std::size_t at; (at = text.find("\n#include \"")) != std::string::npos; expanded = true) {
            ++at;
            const std::size_t close = text.find('"', at + 10), end = text.find('\n', close);
            text.replace(at, end + 1 - at, read(std::string_view(text).substr(at + 10, close - at - 10)));
        }
        INFO(name);
        CHECK(kjit::jit::codegen::template_text(name) == text);
    }
    CHECK(expanded);  // elementwise.cuh includes launch_layout.cuh
    CHECK_THAT(std::string(kjit::jit::codegen::template_text("elementwise.cuh")), Catch::Contains("struct ReduceLayout"));
}

// ---------------------------------------------------------------------------- compiling

TEST_CASE("compile_cuda gives a cubin and PTX for sm_80 and sm_90", "[nvrtc]") {
    for (int cc : {80, 90}) {
        INFO("sm_" << cc);
        const CompileResult r = kjit::jit::compile::compile_cuda(request(axpb_source, "axpb.cu", cc));
        CHECK(is_elf(r.cubin));
        CHECK_THAT(r.ptx, Catch::Contains(".entry axpb") && Catch::Contains(".target sm_" + std::to_string(cc)));
        CHECK(r.target.name() == "sm_" + std::to_string(cc));
        CHECK(r.compile_ms > 0);
        CHECK(r.lowered_names.empty());
    }
}

TEST_CASE("a compute_XX target gives PTX and no cubin", "[nvrtc]") {
    CompileRequest r = request(axpb_source, "axpb.cu", 90);
    r.target = target(90, true);
    const CompileResult out = kjit::jit::compile::compile_cuda(r);
    CHECK(out.cubin.empty());
    CHECK_THAT(out.ptx, Catch::Contains(".entry axpb"));
}

TEST_CASE("compile_options: kjit's options, then the request's", "[nvrtc]") {
    CompileRequest r = request(axpb_source, "axpb.cu", 90);
    r.options = {"-lineinfo"};
    r.toolkit_headers = true;  // its include path is deliberately not listed (machine-specific)
    CHECK(kjit::jit::compile::compile_options(r) ==
          std::vector<std::string>{"-std=c++17", "-default-device", "--gpu-architecture=sm_90", "-lineinfo"});
}

TEST_CASE("name expressions of template kernels give lowered names", "[nvrtc]") {
    CompileRequest r = request(R"(template <typename T> __global__ void scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
)",
                               "scale.cu", 90);
    r.name_expressions = {"scale<float>", "scale<double>"};
    const CompileResult out = kjit::jit::compile::compile_cuda(r);
    REQUIRE(out.lowered_names.size() == 2);
    CHECK(out.lowered_names[0].first == "scale<float>");
    CHECK(out.lowered_names[1].first == "scale<double>");
    CHECK(out.lowered_names[0].second == "_Z5scaleIfEvPT_S0_i");
    CHECK(out.lowered_names[1].second == "_Z5scaleIdEvPT_S0_i");
    for (const auto& [expr, lowered] : out.lowered_names) CHECK_THAT(out.ptx, Catch::Contains(".entry " + lowered));
}

TEST_CASE("a syntax error gives CompileError with the log and the offending lines", "[nvrtc]") {
    const std::string source = "// line 1\n"
                               "extern \"C\" __global__ void bad(float* y, float a) {\n"
                               "    int i = threadIdx.x;\n"
                               "    y[i] = a * ;\n"
                               "}\n";
    const kjit::CompileError e = compile_error(request(source, "bad.cu", 90));
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("cannot compile 'bad.cu' for sm_90"));
    CHECK_THAT(e.log(), Catch::Contains("bad.cu(4): error"));
    CHECK_THAT(what, Catch::Contains("bad.cu(4): error"));
    CHECK_THAT(e.source_excerpt(), Catch::Contains("> 4 |     y[i] = a * ;"));
    CHECK_THAT(e.source_excerpt(), Catch::Contains("  3 |     int i = threadIdx.x;"));
    CHECK_THAT(what, Catch::Contains(e.source_excerpt()));
}

TEST_CASE("an unknown option gives CompileError naming the options", "[nvrtc]") {
    CompileRequest r = request(axpb_source, "axpb.cu", 90);
    r.options = {"--no-such-option"};
    CHECK_THROWS_WITH(kjit::jit::compile::compile_cuda(r), Catch::Contains("--no-such-option") && Catch::Contains("axpb.cu"));
}

TEST_CASE("a request without a target is refused before NVRTC", "[nvrtc]") {
    CompileRequest r;
    r.source = axpb_source;
    r.program_name = "axpb.cu";
    CHECK_THROWS_WITH(kjit::jit::compile::compile_cuda(r), Catch::Contains("select_arch"));
}

TEST_CASE("log_line_numbers and source_excerpt", "[nvrtc]") {
    const std::string log = "k.cu(12): error: identifier \"q\" is undefined\n"
                            "k.cu(3): warning #177-D: variable \"t\" was declared but never referenced\n"
                            "other.cuh(7): error: in a header\n"
                            "k.cu(12): error: again\n"
                            "k.cu(5): error: expected an expression\n"
                            "kk.cu(9): error: another program\n"
                            "2 errors detected in the compilation of \"k.cu\".";
    CHECK(kjit::jit::compile::log_line_numbers(log, "k.cu") == std::vector<int>{5, 12});
    CHECK(kjit::jit::compile::log_line_numbers("k.cu(3): warning #177-D: x", "k.cu") == std::vector<int>{3});
    CHECK(kjit::jit::compile::log_line_numbers("nothing here", "k.cu").empty());

    std::string source;
    for (int i = 1; i <= 14; ++i) source += "line" + std::to_string(i) + "\n";
    const std::string excerpt = kjit::jit::compile::source_excerpt(source, {5, 12});
    CHECK(excerpt == "   3 | line3\n"
                     "   4 | line4\n"
                     ">  5 | line5\n"
                     "   6 | line6\n"
                     "   7 | line7\n"
                     "   ...\n"
                     "  10 | line10\n"
                     "  11 | line11\n"
                     "> 12 | line12\n"
                     "  13 | line13\n"
                     "  14 | line14");
    // Overlapping groups merge; lines out of range are ignored.
    CHECK(kjit::jit::compile::source_excerpt("a\nb\nc", {1, 2, 99}, 1) == "> 1 | a\n> 2 | b\n  3 | c");
    CHECK(kjit::jit::compile::source_excerpt("a\nb", {}).empty());
}

// ---------------------------------------------------------------------------- NVRTC failing

namespace {

// A copy of the real table whose entries count programs and can be made to fail.
std::atomic<int> g_created{0};
std::atomic<int> g_destroyed{0};
nvrtcResult (*g_real_create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
nvrtcResult (*g_real_destroy)(nvrtcProgram*);

nvrtcResult counting_create(nvrtcProgram* p, const char* src, const char* name, int n, const char* const* h,
                            const char* const* i) {
    const nvrtcResult r = g_real_create(p, src, name, n, h, i);
    if (r == NVRTC_SUCCESS) ++g_created;
    return r;
}
nvrtcResult counting_destroy(nvrtcProgram* p) {
    ++g_destroyed;
    return g_real_destroy(p);
}
nvrtcResult out_of_memory_compile(nvrtcProgram, int, const char* const*) { return NVRTC_ERROR_OUT_OF_MEMORY; }

kjit::detail::NvrtcApi counting_api() {
    kjit::detail::NvrtcApi api = kjit::detail::nvrtc();
    g_real_create = api.nvrtcCreateProgram;
    g_real_destroy = api.nvrtcDestroyProgram;
    api.nvrtcCreateProgram = counting_create;
    api.nvrtcDestroyProgram = counting_destroy;
    g_created = 0;
    g_destroyed = 0;
    return api;
}

}  // namespace

TEST_CASE("no NVRTC gives NoDeviceError", "[nvrtc]") {
    const CompileRequest r = request(axpb_source, "axpb.cu", 90);
    const kjit::detail::ScopedNvrtcOverride none(nullptr);
    CHECK_THROWS_AS(kjit::jit::compile::compile_cuda(r), kjit::NoDeviceError);
    CHECK_THROWS_AS(kjit::jit::compile::nvrtc_version_key(), kjit::NoDeviceError);
    CHECK_THROWS_AS(kjit::jit::compile::nvrtc_supported_archs(), kjit::NoDeviceError);
    CHECK_THROWS_AS(kjit::jit::compile::select_arch(90), kjit::NoDeviceError);
}

TEST_CASE("NVRTC failing is NvrtcError, and programs are destroyed on every path", "[nvrtc]") {
    const CompileRequest good = request(axpb_source, "axpb.cu", 90);
    kjit::detail::NvrtcApi api = counting_api();
    SECTION("success") {
        const kjit::detail::ScopedNvrtcOverride o(&api);
        CHECK_FALSE(kjit::jit::compile::compile_cuda(good).cubin.empty());
    }
    SECTION("compile error") {
        const kjit::detail::ScopedNvrtcOverride o(&api);
        CHECK_THROWS_AS(kjit::jit::compile::compile_cuda(request("not C++", "bad.cu", 90)), kjit::CompileError);
    }
    SECTION("NVRTC out of memory") {
        api.nvrtcCompileProgram = out_of_memory_compile;
        const kjit::detail::ScopedNvrtcOverride o(&api);
        try {
            kjit::jit::compile::compile_cuda(good);
            FAIL("no exception");
        } catch (const kjit::NvrtcError& e) {
            CHECK(e.code() == NVRTC_ERROR_OUT_OF_MEMORY);
            CHECK_THAT(e.what(), Catch::Contains("nvrtcCompileProgram") && Catch::Contains("NVRTC_ERROR_OUT_OF_MEMORY"));
        }
    }
    CHECK(g_created == 1);
    CHECK(g_destroyed == 1);
}

TEST_CASE("compile_cuda runs from several threads at once", "[nvrtc]") {
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t, &ok] {
            const std::string source = "extern \"C\" __global__ void k" + std::to_string(t) +
                                       "(float* y) { y[threadIdx.x] += " + std::to_string(t) + ".0f; }\n";
            const CompileResult r = kjit::jit::compile::compile_cuda(request(source, "k.cu", t % 2 ? 80 : 90));
            if (is_elf(r.cubin) && r.ptx.find("k" + std::to_string(t)) != std::string::npos) ++ok;
        });
    }
    for (std::thread& t : threads) t.join();
    CHECK(ok == 4);
}

// ---------------------------------------------------------------------------- version key

TEST_CASE("nvrtc_version_key names the version and the build, stably", "[nvrtc]") {
    int major = 0;
    int minor = 0;
    REQUIRE(kjit::detail::nvrtc().nvrtcVersion(&major, &minor) == NVRTC_SUCCESS);
    const std::string key = kjit::jit::compile::nvrtc_version_key();
    CHECK(key.starts_with("nvrtc-" + std::to_string(major) + "." + std::to_string(minor) + "+"));
    CHECK((key.find("+bid:") != std::string::npos || key.find("+xxh3:") != std::string::npos));
    CHECK(key.size() > 20);
    CHECK(kjit::jit::compile::nvrtc_version_key() == key);

    // The pieces: the file is found, and hashing it agrees with itself.
    const void* symbol = reinterpret_cast<const void*>(kjit::detail::nvrtc().nvrtcVersion);
    const std::string file = kjit::jit::compile::loaded_file(symbol);
    CHECK_THAT(file, Catch::Contains("nvrtc"));
    const auto h = kjit::jit::compile::file_xxh3(file);
    REQUIRE(h.has_value());
    CHECK(kjit::jit::compile::file_xxh3(file) == h);
    CHECK_FALSE(kjit::jit::compile::file_xxh3("/nonexistent/libnvrtc.so").has_value());
}

// ---------------------------------------------------------------------------- prelude templates

namespace {

const char* const complex_kernel = R"(
template <typename T> __device__ void all(const kjit::complex<T>* in, kjit::complex<T>* out, T* r, bool* b) {
    typedef kjit::complex<T> C;
    C z = in[0], w = in[1];
    T x = r[0];
    C s = z + w + z * w - z / w + (z + x) + (x + z) + (z - x) + (x - z) + z * x + x * z + z / x + x / z;
    s = s + (-z) + (+z) + z * 2 + 2.0 * z + z / 3;
    s += w; s -= x; s *= x; s /= w; s += z; s = x;
    b[0] = z == w; b[1] = z != w; b[2] = z == x; b[3] = x == z; b[4] = z != x; b[5] = x != z; b[6] = z == 0;
    r[1] = kjit::real(z) + kjit::imag(z) + abs(z) + arg(z) + norm(z) + z.real() + z.imag();
    out[0] = s + conj(z) + exp(z) + log(z) + sqrt(z) + sin(z) + cos(z) + tan(z) + sinh(z) + cosh(z) + tanh(z)
           + pow(z, w) + pow(z, x) + pow(x, z) + pow(z, 2) + kjit::polar(x, x) + kjit::polar(x);
}
extern "C" __global__ void k64f(const kjit::complex<float>* in, kjit::complex<float>* out, float* r, bool* b) {
    all(in, out, r, b);
}
extern "C" __global__ void k128(const kjit::complex<double>* in, kjit::complex<double>* out, double* r, bool* b) {
    all(in, out, r, b);
    kjit::complex<double> wide = in[2];
    kjit::complex<float> narrow(wide);  // explicit narrowing
    wide = narrow;                      // implicit widening
    out[1] = wide;
}
static_assert(sizeof(kjit::complex<float>) == 8 && alignof(kjit::complex<float>) == 8, "complex64 layout");
static_assert(sizeof(kjit::complex<double>) == 16 && alignof(kjit::complex<double>) == 16, "complex128 layout");
)";

}  // namespace

TEST_CASE("complex.cuh: every operator and function compiles for sm_80 and sm_90", "[nvrtc][complex]") {
    const std::string source = std::string(kjit::jit::codegen::template_text("complex.cuh")) + complex_kernel;
    for (int cc : {80, 90}) {
        INFO("sm_" << cc);
        const CompileResult r = kjit::jit::compile::compile_cuda(request(source, "complex_all.cu", cc));
        CHECK(is_elf(r.cubin));
        CHECK_THAT(r.ptx, Catch::Contains(".entry k64f") && Catch::Contains(".entry k128"));
    }
}

TEST_CASE("scalar_types.cuh brings float16 and bfloat16 only when asked", "[nvrtc]") {
    const std::string body = std::string(kjit::jit::codegen::template_text("scalar_types.cuh")) +
                             "extern \"C\" __global__ void h(kjit::float16* x, kjit::bfloat16* y) {\n"
                             "    x[0] = x[0] * __float2half(2.0f); y[0] = y[0] + y[1];\n"
                             "}\n";
    CompileRequest r = request("#define KJIT_USE_FLOAT16\n#define KJIT_USE_BFLOAT16\n" + body, "h.cu", 90);
    r.toolkit_headers = true;
    CHECK(is_elf(kjit::jit::compile::compile_cuda(r).cubin));
    // Without the defines the types do not exist: the headers were not included.
    const kjit::CompileError e = compile_error(request(body, "h.cu", 90));
    CHECK_THAT(e.log(), Catch::Contains("float16"));
}

// complex.cuh is plain C++ with KJIT_HD empty: check its arithmetic against std::complex on the host,
// since nothing can run on a GPU here.
#define KJIT_HD
#include "templates/complex.cuh"

namespace {

template <typename T>
void check_close(kjit::complex<T> got, std::complex<T> want, double tol) {
    INFO("got (" << got.re << ", " << got.im << ") want " << want);
    const double scale = std::max(1.0, static_cast<double>(std::abs(want)));
    CHECK(std::abs(static_cast<double>(got.re) - want.real()) <= tol * scale);
    CHECK(std::abs(static_cast<double>(got.im) - want.imag()) <= tol * scale);
}

template <typename T>
void check_against_std(double tol) {
    const std::vector<std::complex<T>> values = {{1.5, -0.5}, {-2, 3}, {0.25, 0.75}, {-1, -1e-3}, {3, 0}, {-4, 0}};
    for (const auto& sz : values) {
        const kjit::complex<T> z(sz.real(), sz.imag());
        const std::complex<T> sw(T(0.5), T(-1.25));
        const kjit::complex<T> w(sw.real(), sw.imag());
        const T x = T(1.75);
        INFO("z = " << sz);
        check_close(z + w, sz + sw, tol);
        check_close(z - w, sz - sw, tol);
        check_close(z * w, sz * sw, tol);
        check_close(z / w, sz / sw, tol);
        check_close(w / z, sw / sz, tol);
        check_close(x / z, x / sz, tol);
        check_close(z * x, sz * x, tol);
        check_close(x - z, x - sz, tol);
        check_close(conj(z), std::conj(sz), tol);
        CHECK(std::abs(abs(z) - std::abs(sz)) <= tol * std::abs(sz));
        CHECK(std::abs(arg(z) - std::arg(sz)) <= tol * 4);
        CHECK(std::abs(norm(z) - std::norm(sz)) <= tol * std::norm(sz));
        check_close(exp(z), std::exp(sz), tol);
        check_close(log(z), std::log(sz), tol);
        check_close(sqrt(z), std::sqrt(sz), tol);
        check_close(sin(z), std::sin(sz), tol);
        check_close(cos(z), std::cos(sz), tol);
        check_close(tan(z), std::tan(sz), tol);
        check_close(sinh(z), std::sinh(sz), tol);
        check_close(cosh(z), std::cosh(sz), tol);
        check_close(tanh(z), std::tanh(sz), tol);
        check_close(pow(z, w), std::pow(sz, sw), tol * 10);
        check_close(pow(z, x), std::pow(sz, x), tol * 10);
        check_close(pow(x, z), std::pow(x, sz), tol * 10);
        CHECK(z == z);
        CHECK(z != w);
    }
    check_close(kjit::polar(T(2), T(0.5)), std::polar(T(2), T(0.5)), tol);
    check_close(tanh(kjit::complex<T>(40, 1)), std::complex<T>(1, 0), tol);
    check_close(tanh(kjit::complex<T>(-40, -1)), std::complex<T>(-1, 0), tol);
    check_close(sqrt(kjit::complex<T>(0, 0)), std::complex<T>(0, 0), tol);
    check_close(pow(kjit::complex<T>(0, 0), kjit::complex<T>(0, 0)), std::complex<T>(1, 0), tol);
    check_close(pow(kjit::complex<T>(0, 0), kjit::complex<T>(2, 0)), std::complex<T>(0, 0), tol);
    CHECK(kjit::complex<T>(3, 0) == T(3));
    CHECK(T(3) == kjit::complex<T>(3, 0));
    CHECK(kjit::complex<T>(3, 1) != T(3));
    // Huge operands: Smith's division does not overflow where the naive formula would.
    const T big = sizeof(T) == 4 ? T(1e30) : T(1e300);
    check_close(kjit::complex<T>(big, big) / kjit::complex<T>(big, big), std::complex<T>(1, 0), tol);
}

}  // namespace

TEST_CASE("complex.cuh agrees with std::complex (host build of the template)", "[nvrtc][complex]") {
    check_against_std<float>(2e-5);
    check_against_std<double>(1e-12);
}

// ---------------------------------------------------------------------------- benchmark

namespace {

double median(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
}

}  // namespace

// Not run by default: `kjit_tests "[nvrtc_bench]"`. Prints the numbers in docs/perf-log.md.
TEST_CASE("compile time of a small kernel by header (benchmark)", "[.][nvrtc_bench]") {
    constexpr int runs = 15;
    // Run alone, this is the process's first NVRTC use: loading libnvrtc, then the first compile
    // (which loads libnvrtc-builtins and initialises the compiler), then a second one.
    {
        using clock = std::chrono::steady_clock;
        const auto ms = [](clock::time_point a, clock::time_point b) {
            return std::chrono::duration<double, std::milli>(b - a).count();
        };
        const auto t0 = clock::now();
        kjit::detail::nvrtc();
        const auto t1 = clock::now();
        CompileRequest first;
        first.source = axpb_source;
        first.program_name = "axpb.cu";
        first.target = kjit::jit::compile::select_arch(90);
        rusage before{};
        getrusage(RUSAGE_SELF, &before);
        kjit::jit::compile::compile_cuda(first);
        const auto t2 = clock::now();
        rusage after{};
        getrusage(RUSAGE_SELF, &after);
        kjit::jit::compile::compile_cuda(first);
        const auto t3 = clock::now();
        std::printf("fresh process: load NVRTC %.1f ms, first compile %.1f ms (%ld minor + %ld major page faults), "
                    "second %.1f ms\n",
                    ms(t0, t1), ms(t1, t2), after.ru_minflt - before.ru_minflt, after.ru_majflt - before.ru_majflt,
                    ms(t2, t3));
    }
    const std::string cccl = kjit::jit::compile::toolkit_include_dir(kjit::detail::nvrtc()) + "/cccl";
    struct Variant {
        const char* label;
        std::string prefix;
        std::vector<std::string> options;
        bool toolkit_headers;
        int cc;
        bool ptx_only;
    };
    const std::string complex_text(kjit::jit::codegen::template_text("complex.cuh"));
    const std::vector<Variant> variants = {
        {"(a) no includes", "", {}, false, 90, false},
        {"(a) + the toolkit's and CCCL's paths", "", {}, true, 90, false},
        {"(b) #include <cuda_fp16.h>", "#include <cuda_fp16.h>\n", {}, true, 90, false},
        {"(c) #include <cuda_bf16.h>", "#include <cuda_bf16.h>\n", {}, true, 90, false},
        {"(b+c) both", "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n", {}, true, 90, false},
        {"(d) #include <cuda/std/complex>", "#include <cuda/std/complex>\n", {"--include-path=" + cccl}, true, 90, false},
        {"(e) templates/complex.cuh", complex_text, {}, false, 90, false},
        {"(e') complex.cuh, complex64 kernel", complex_text, {}, false, 90, false},
        {"(a) -lineinfo", "", {"-lineinfo"}, false, 90, false},
        {"(a) -minimal", "", {"-minimal"}, false, 90, false},
        {"(b) -minimal", "#include <cuda_fp16.h>\n", {"-minimal"}, true, 90, false},
        {"(a) -std=c++20 (after -std=c++17)", "", {"-std=c++20"}, false, 90, false},
        {"(a) compute_90 (PTX only)", "", {}, false, 90, true},
        {"(a) sm_80", "", {}, false, 80, false},
    };
    const std::string complex_axpb =
        "extern \"C\" __global__ void axpb_c(const kjit::complex<float>* x, kjit::complex<float>* y,\n"
        "                                    kjit::complex<float> a, kjit::complex<float> b, unsigned n) {\n"
        "    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
        "        y[i] = a * x[i] + b;\n"
        "}\n";
    std::vector<CompileRequest> requests;
    for (const Variant& v : variants) {
        const bool complex_kernel_body = std::string(v.label).find("complex64") != std::string::npos;
        CompileRequest r = request(v.prefix + (complex_kernel_body ? complex_axpb : axpb_source), "axpb.cu", v.cc);
        r.target = target(v.cc, v.ptx_only);
        r.options = v.options;
        r.toolkit_headers = v.toolkit_headers;
        requests.push_back(std::move(r));
    }
    // Warm up (NVRTC's first call loads it and its builtins), then run the variants round-robin so
    // that load from other processes spreads over all of them alike.
    for (const CompileRequest& r : requests) kjit::jit::compile::compile_cuda(r);
    std::vector<std::vector<double>> ms(requests.size());
    for (int run = 0; run < runs; ++run) {
        for (std::size_t i = 0; i < requests.size(); ++i) ms[i].push_back(kjit::jit::compile::compile_cuda(requests[i]).compile_ms);
    }
    std::printf("%-40s %8s %8s %8s  (ms over %d runs)\n", "variant", "median", "min", "max", runs);
    for (std::size_t i = 0; i < requests.size(); ++i) {
        std::printf("%-40s %8.1f %8.1f %8.1f\n", variants[i].label, median(ms[i]),
                    *std::min_element(ms[i].begin(), ms[i].end()), *std::max_element(ms[i].begin(), ms[i].end()));
    }

    // The version key's pieces.
    const void* symbol = reinterpret_cast<const void*>(kjit::detail::nvrtc().nvrtcVersion);
    const std::string file = kjit::jit::compile::loaded_file(symbol);
    auto t0 = std::chrono::steady_clock::now();
    const std::string id = kjit::jit::compile::elf_build_id(symbol);
    auto t1 = std::chrono::steady_clock::now();
    const auto hash = kjit::jit::compile::file_xxh3(file);
    auto t2 = std::chrono::steady_clock::now();
    std::printf("build id %s: %.3f ms; xxh3 of %s (%ju bytes) %016jx: %.1f ms\n", id.c_str(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(), file.c_str(),
                static_cast<std::uintmax_t>(std::filesystem::file_size(file)), static_cast<std::uintmax_t>(*hash),
                std::chrono::duration<double, std::milli>(t2 - t1).count());
    std::printf("nvrtc_version_key: %s\n", kjit::jit::compile::nvrtc_version_key().c_str());
}
