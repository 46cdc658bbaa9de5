// Code generation: the source is readable, and every accepted construct compiles with the real
// NVRTC to cubin for sm_80 and sm_90, for every dtype it applies to.
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "jit/codegen/elementwise.hpp"
#include "jit/codegen/entry_points.hpp"
#include "jit/compile/nvrtc_compiler.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/frontend/params.hpp"
#include "kjit/device.hpp"
#include "kjit/elementwise_kernel.hpp"
#include "kjit/error.hpp"

using kjit::DType;
using kjit::ElementwiseKernel;
using kjit::TypeBinding;
using Catch::Matchers::Contains;

namespace {

struct Job {
    ElementwiseKernel kernel;
    TypeBinding types;
    std::string arch;
};

// What compiling `job` went wrong with, or "" when the result is a cubin holding the entry points.
std::string compile_problem(const Job& job) {
    try {
        const kjit::Binary bin = job.kernel.compile(job.types, job.arch);
        if (bin.arch != job.arch) return "compiled for " + bin.arch;
        if (bin.cubin.size() < 4 || bin.cubin[0] != 0x7f || bin.cubin[1] != 'E') return "no ELF cubin";
        if (bin.ptx.find(bin.entry_point("contiguous32")) == std::string::npos || bin.ptx.find(bin.entry_point("strided64")) == std::string::npos)
            return "entry points missing from the PTX";
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

// Compiles every job on all cores (NVRTC is thread-safe per program; some of these kernels take
// seconds each) and checks each result here, on the test's thread.
void compile_all(const std::vector<Job>& jobs) {
    const std::vector<std::string> problems =
        kjit::test::run_on_all_cores(jobs.size(), [&](std::size_t j) { return compile_problem(jobs[j]); });
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        std::string types;
        for (const auto& [ph, t] : jobs[j].types) types += ph + "=" + std::string(t.name()) + " ";
        INFO(jobs[j].kernel.name() << " " << types << "for " << jobs[j].arch);
        CHECK(problems[j] == "");
    }
}

// The jobs compiling `k` with `types` for both CI targets.
void add_ci_targets(std::vector<Job>& jobs, const ElementwiseKernel& k, const TypeBinding& types) {
    for (const char* arch : {"sm_80", "sm_90"}) jobs.push_back({k, types, arch});
}

}  // namespace

TEST_CASE("generated source shows the user's operation", "[codegen]") {
    const ElementwiseKernel axpb("T x, T a, T b", "T y", "y = a * x + b", "axpb");
    const std::string src = axpb.source({{"T", DType::float32}});
    CHECK_THAT(src, Contains("y = a * x + b;"));
    CHECK_THAT(src, Contains("typedef float T;"));
    CHECK_THAT(src, Contains("extern \"C\" __global__"));
    CHECK_THAT(src, Contains("axpb_contiguous32") && Contains("axpb_strided64"));
    CHECK_THAT(src, !Contains("cuda_fp16.h"));  // no 16-bit float in sight: no header
    const std::string half = axpb.source({{"T", DType::float16}});
    CHECK_THAT(half, Contains("#define KJIT_USE_FLOAT16") && Contains("#include <cuda_fp16.h>"));
    CHECK_THROWS_AS(axpb.source({}), kjit::TypeError);
}

TEST_CASE("a kitchen-sink kernel compiles for every dtype on sm_80 and sm_90", "[codegen][nvrtc]") {
    // Everything the language has that applies to any type: locals, auto, casts of three styles,
    // comparisons, ?:, if/else, for, while, break/continue, compound assignment, i and n, raw.
    const char* op =
        "T t = x;\n"
        "auto u = x + y0;\n"
        "if (x == t && !(u != u)) { t = (T)(u); } else t = T(x);\n"
        "for (int k = 0; k < 3; ++k) { if (k == 1) continue; t += x; }\n"
        "int guard = 0;\n"
        "while (true) { if (++guard > 2) break; }\n"
        "bool flag = i < n;\n"
        "y = flag ? t : static_cast<T>(table[i % n]);\n"
        "y0 = x;";
    std::vector<Job> jobs;
    for (DType t : kjit::test::all_dtypes()) add_ci_targets(jobs, ElementwiseKernel("T x, raw T table", "T y, T y0", op, "sink"), {{"T", t}});
    compile_all(jobs);
}

TEST_CASE("arithmetic, comparisons and mixed types compile for every pair of dtypes", "[codegen][nvrtc]") {
    // T op U for every pair exercises every conversion the generator spells out. The pairs are
    // compiled on all cores (NVRTC is thread-safe per program); results are checked here.
    const ElementwiseKernel k("T a, U b", "float64 y, bool c",
                              "y = (float64)(a * b) + (float64)(a - b) * 2; c = a == b || (a < b && a >= b);", "mixed");
    std::vector<TypeBinding> real_pairs;
    for (DType a : kjit::test::all_dtypes()) {
        for (DType b : kjit::test::all_dtypes()) {
            const TypeBinding types{{"T", a}, {"U", b}};
            if (a.is_complex() || b.is_complex()) {
                INFO(a.name() << " and " << b.name());
                CHECK_THROWS_AS(k.check(types), kjit::TypeError);  // complex to float64, complex order: refused
                continue;
            }
            real_pairs.push_back(types);
        }
    }
    std::vector<Job> jobs;
    for (const TypeBinding& types : real_pairs) jobs.push_back({k, types, "sm_90"});
    compile_all(jobs);
}

TEST_CASE("integer-only operators compile for every integer dtype", "[codegen][nvrtc]") {
    const ElementwiseKernel k("T a, T b", "T y",
                              "y = (a & b) | (a ^ ~b); y <<= 1; y >>= 1; y %= (b | 1); y = y % 7 + (a << 2 >> 1);",
                              "bits");
    std::vector<Job> jobs;
    for (DType t : kjit::test::all_dtypes())
        if (t.is_integer()) add_ci_targets(jobs, k, {{"T", t}});
    compile_all(jobs);
}

TEST_CASE("every math function compiles for every float dtype", "[codegen][nvrtc]") {
    const char* op =
        "y = sqrt(x) + rsqrt(x) + cbrt(x) + rcbrt(x) + exp(x) + exp2(x) + exp10(x) + expm1(x) + log(x) + log2(x)"
        " + log10(x) + log1p(x) + sin(x) + cos(x) + tan(x) + asin(x) + acos(x) + atan(x) + sinh(x) + cosh(x)"
        " + tanh(x) + asinh(x) + acosh(x) + atanh(x) + sinpi(x) + cospi(x) + erf(x) + erfc(x) + erfinv(x)"
        " + erfcinv(x) + normcdf(x) + normcdfinv(x) + lgamma(x) + tgamma(x) + floor(x) + ceil(x) + trunc(x)"
        " + round(x) + rint(x) + nearbyint(x) + fabs(x) + pow(x, x) + atan2(x, x) + fmod(x, x) + remainder(x, x)"
        " + hypot(x, x) + fmin(x, x) + fmax(x, x) + fdim(x, x) + copysign(x, x) + nextafter(x, x) + fma(x, x, x)"
        " + min(x, x) + max(x, x) + abs(x) + ldexp(x, 3) + real(x) + imag(x) + conj(x) + arg(x) + norm(x);"
        "b = isnan(x) || isinf(x) || !isfinite(x) || signbit(x);";
    std::vector<Job> jobs;
    for (DType t : {DType::float16, DType::bfloat16, DType::float32, DType::float64})
        add_ci_targets(jobs, ElementwiseKernel("T x", "T y, bool b", op, "math"), {{"T", t}});
    // Math on integers computes in float64, as C++'s overloads for integers do.
    add_ci_targets(jobs, ElementwiseKernel("T x", "float64 y", "y = sqrt(x) + pow(x, 2) + abs(x) + min(x, 3);", "imath"),
                   {{"T", DType::int16}});
    add_ci_targets(jobs, ElementwiseKernel("T x", "T y", "y = abs(x) + min(x, x) + max(x, x);", "umath"),
                   {{"T", DType::uint32}});
    compile_all(jobs);
}

TEST_CASE("complex kernels compile", "[codegen][nvrtc]") {
    const char* op =
        "T w = z * s + conj(z) * exp(z) - sqrt(z) / (z + 1) + log(z) * sin(z) + cos(z) - tan(z) + sinh(z)"
        " + cosh(z) + tanh(z) + pow(z, z) + pow(z, 2.0);\n"
        "w += z; w -= 1; w *= s; w /= z;\n"
        "y = w; m = abs(z) + real(z) + imag(z) + arg(z) + norm(z); e = w == z || w != z;";
    std::vector<Job> jobs;
    for (DType t : {DType::complex64, DType::complex128})
        add_ci_targets(jobs, ElementwiseKernel("T z, float32 s", "T y, float64 m, bool e", op, "cplx"), {{"T", t}});
    // Reals and 16-bit floats meeting complex numbers.
    add_ci_targets(jobs, ElementwiseKernel("complex64 z, float16 h, bfloat16 g, int8 k", "complex128 y",
                                           "y = z * h + g - k; y = (complex128)h;", "mixc"),
                   {});
    compile_all(jobs);
}

TEST_CASE("a preamble's functions are called as written", "[codegen][nvrtc]") {
    kjit::KernelOptions opts;
    opts.preamble = "__device__ float squash(float v) { return v / (1.0f + fabsf(v)); }";
    const ElementwiseKernel k("T x", "T y", "y = squash(x) * 2;", "pre", opts);
    const std::string src = k.source({{"T", DType::float32}});
    CHECK_THAT(src, Contains("__device__ float squash(float v)"));
    CHECK_THAT(src, Contains("y = squash(x) * 2;"));
    std::vector<Job> jobs;
    add_ci_targets(jobs, k, {{"T", DType::float32}});
    compile_all(jobs);
}

TEST_CASE("a CUDA error in the preamble is a CompileError with the log and the lines", "[codegen][nvrtc]") {
    kjit::KernelOptions opts;
    opts.preamble = "__device__ float broken(float v) { return v +; }";
    const ElementwiseKernel k("T x", "T y", "y = broken(x);", "bad", opts);
    try {
        k.compile({{"T", DType::float32}}, "sm_90");
        FAIL("compile did not throw");
    } catch (const kjit::CompileError& e) {
        CHECK_THAT(e.log(), Contains("error"));
        CHECK_THAT(e.source_excerpt(), Contains("return v +;"));
    }
}

// Not a test: how long the first call of a new kernel spends in kjit's front end and NVRTC, run by
// hand (or by the GPU script) with `kjit_tests "[compile_bench]"`; numbers go to docs/perf-log.md.
TEST_CASE("compile time of a typical elementwise module", "[.][compile_bench]") {
    using clock = std::chrono::steady_clock;
    auto ms_since = [](clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); };
    const TypeBinding f32{{"T", DType::float32}};
    // The CUDA driver's initialisation (cuInit and the device query that picks the target) is
    // paid once per process by any CUDA program; timed apart from kjit's own work.
    auto t = clock::now();
    const int gpus = kjit::Device::count();
    if (gpus > 0) (void)kjit::Device::current().properties();
    const double driver_ms = ms_since(t);
    t = clock::now();
    const kjit::Binary first = ElementwiseKernel("T x, T a, T b", "T y", "y = a * x + b", "first").compile(f32);
    const double first_ms = ms_since(t);
    std::vector<double> total, nvrtc;
    for (int k = 0; k < 15; ++k) {
        const ElementwiseKernel kern("T x, T a, T b", "T y", "y = a * x + b + " + std::to_string(k),
                                     "axpb" + std::to_string(k));
        t = clock::now();
        const kjit::Binary bin = kern.compile(f32);
        total.push_back(ms_since(t));
        nvrtc.push_back(bin.compile_ms);
    }
    std::sort(total.begin(), total.end());
    std::sort(nvrtc.begin(), nvrtc.end());
    WARN("arch " << first.arch << ": CUDA driver start " << driver_ms << " ms (" << gpus << " GPUs); first compile in this process " << first_ms << " ms (NVRTC " << first.compile_ms
                 << " ms); then median " << total[7] << " ms per new kernel (min " << total.front() << ", max "
                 << total.back() << "), of which NVRTC " << nvrtc[7] << " ms");
    CHECK(first.cubin.size() > 0);
}

TEST_CASE("modules with scalar parameters and converted inputs compile with every variant", "[codegen][nvrtc]") {
    // What a call makes when it passes scalars, or arrays of other dtypes: x stored as int16 or
    // float16 and converted on load, a passed by value. Rows and tiled variants are in the module.
    for (const DType stored : {DType(DType::int16), DType(DType::float16), DType(DType::complex64)}) {
        INFO(stored.name());
        kjit::jit::frontend::KernelSources sources;
        sources.in.text = "T x, T a, U z";
        sources.out.text = "T y";
        sources.body.text = "y = a * x + z";
        std::vector<kjit::jit::frontend::Param> params = kjit::jit::frontend::parse_param_lists(sources.in, sources.out);
        kjit::jit::frontend::Body body = kjit::jit::frontend::parse_body(sources.body);
        const DType t = stored.is_complex() ? DType::complex128 : DType::float64;
        const kjit::TypeBinding binding{{"T", t}, {"U", DType::bfloat16}};
        const kjit::jit::frontend::CheckedKernel checked = kjit::jit::frontend::check_kernel(params, body, sources, binding, {});
        kjit::jit::codegen::ElementwiseModuleSpec spec{"mixed", "T x, T a, U z", "T y", "", {false, true, false, false},
                                              {stored, std::nullopt, std::nullopt, std::nullopt}};
        const kjit::jit::codegen::GeneratedModule m = kjit::jit::codegen::generate_elementwise(spec, checked, body, binding);
        CHECK_THAT(m.source, Contains("const " + std::string(stored.cuda_name()) + "* x;") && Contains("x stored as"));
        REQUIRE_FALSE(m.rows32.empty());
        REQUIRE_FALSE(m.tiled32.empty());
        kjit::jit::compile::CompileRequest r;
        r.source = m.source;
        r.program_name = "mixed.cu";
        r.target.requested = r.target.compiled = 90;
        r.options = {"-minimal"};
        const kjit::jit::compile::CompileResult c = kjit::jit::compile::compile_cuda(r);
        for (const std::string& entry : {m.contiguous32, m.contiguous64, m.strided32, m.strided64, m.rows32, m.tiled32})
            CHECK_THAT(c.ptx, Contains(entry));
    }
    // Storage for an output or a scalar is refused.
    kjit::jit::frontend::KernelSources sources;
    sources.in.text = "T x";
    sources.out.text = "T y";
    sources.body.text = "y = x";
    std::vector<kjit::jit::frontend::Param> params = kjit::jit::frontend::parse_param_lists(sources.in, sources.out);
    kjit::jit::frontend::Body body = kjit::jit::frontend::parse_body(sources.body);
    const kjit::TypeBinding binding{{"T", DType::float32}};
    const kjit::jit::frontend::CheckedKernel checked = kjit::jit::frontend::check_kernel(params, body, sources, binding, {});
    const kjit::jit::codegen::ElementwiseModuleSpec bad{"bad", "T x", "T y", "", {}, {std::nullopt, DType(DType::float64)}};
    CHECK_THROWS_AS(kjit::jit::codegen::generate_elementwise(bad, checked, body, binding), kjit::TypeError);
}

TEST_CASE("NVRTC checks the argument struct against the offsets the launcher writes", "[codegen][nvrtc]") {
    // One static_assert per field, n and the size, from detail::args_layout: a raw field (152
    // bytes), a float16 scalar after it and a complex128 scalar (aligned to 16) move the offsets.
    kjit::jit::frontend::KernelSources sources;
    sources.in.text = "raw T t, H h, C c, T x";
    sources.out.text = "T y";
    sources.body.text = "y = x + t[0] + (T)h";
    std::vector<kjit::jit::frontend::Param> params = kjit::jit::frontend::parse_param_lists(sources.in, sources.out);
    kjit::jit::frontend::Body body = kjit::jit::frontend::parse_body(sources.body);
    const kjit::TypeBinding binding{{"T", DType::float32}, {"H", DType::float16}, {"C", DType::complex128}};
    const kjit::jit::frontend::CheckedKernel checked = kjit::jit::frontend::check_kernel(params, body, sources, binding, {});
    const kjit::jit::codegen::ElementwiseModuleSpec spec{"packed", "raw T t, H h, C c, T x", "T y", "", {false, true, true, false, false}, {}};
    const kjit::jit::codegen::GeneratedModule m = kjit::jit::codegen::generate_elementwise(spec, checked, body, binding);
    CHECK_THAT(m.source, Contains("static_assert(KJIT_OFFSETOF(packed_args, h) == 152,"));
    CHECK_THAT(m.source, Contains("static_assert(KJIT_OFFSETOF(packed_args, c) == 160,"));
    CHECK_THAT(m.source, Contains("static_assert(KJIT_OFFSETOF(packed_args, n) == 192,"));
    CHECK_THAT(m.source, Contains("static_assert(sizeof(packed_args) == 208,"));
    kjit::jit::compile::CompileRequest r;
    r.source = kjit::jit::codegen::keep_entry_points(m.source, m.entry_lines, {m.small32});
    r.program_name = "packed.cu";
    r.target.requested = r.target.compiled = 90;
    r.options = {"-minimal"};
    CHECK_NOTHROW(kjit::jit::compile::compile_cuda(r));
    // A launcher that wrote h elsewhere: NVRTC refuses the program.
    const std::string good = "static_assert(KJIT_OFFSETOF(packed_args, h) == 152,";
    r.source.replace(r.source.find(good), good.size(), "static_assert(KJIT_OFFSETOF(packed_args, h) == 156,");
    CHECK_THROWS_WITH(kjit::jit::compile::compile_cuda(r), Contains("kjit writes packed_args::h at byte 152"));
}
