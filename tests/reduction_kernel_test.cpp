// ReductionKernel up to compiling: the front end (each piece parsed and type-checked, errors naming
// the piece with a position), the generated source, and the module compiled with the real NVRTC to
// cubin for sm_80 and sm_90 for every dtype.
#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "kjit/error.hpp"
#include "kjit/array.hpp"
#include "kjit/reduction_kernel.hpp"

using kjit::DType;
using kjit::ReductionKernel;
using kjit::KernelOptions;
using kjit::TypeBinding;
using Catch::Matchers::Contains;

namespace {

KernelOptions reduce_as(const std::string& type) {
    KernelOptions o;
    o.reduce_type = type;
    return o;
}

// The ParseError or TypeError `f` throws, as (where, line, column) of the message: "map:1:5: ...".
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const kjit::ParseError& e) {
        return "parse " + e.where() + ":" + std::to_string(e.line()) + ":" + std::to_string(e.column()) + " " + e.message();
    } catch (const kjit::TypeError& e) {
        return std::string("type ") + e.what();
    }
    return "no error";
}

struct Job {
    ReductionKernel kernel;
    TypeBinding types;
    std::string arch;
};

// What compiling `job` went wrong with, or "" when the result is a cubin holding every entry point.
std::string compile_problem(const Job& job) {
    try {
        const kjit::Binary bin = job.kernel.compile(job.types, job.arch);
        if (bin.arch != job.arch) return "compiled for " + bin.arch;
        if (bin.cubin.size() < 4 || bin.cubin[0] != 0x7f || bin.cubin[1] != 'E') return "no ELF cubin";
        for (const char* name : {"full32", "full64", "rows_warp32", "rows_warp64", "rows_block32", "rows_block64", "columns32",
                                 "columns64", "columns_split32", "columns_split64", "columns_finish32", "columns_finish64"}) {
            const std::string& e = bin.entry_point(name);
            if (e.empty() || bin.ptx.find(".entry " + e) == std::string::npos) return "entry point '" + e + "' missing from the PTX";
        }
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

// Compiles every job on all cores (NVRTC is thread-safe per program) and checks each result here.
void compile_all(const std::vector<Job>& jobs) {
    const std::vector<std::string> problems =
        kjit::test::run_on_all_cores(jobs.size(), [&](std::size_t j) { return compile_problem(jobs[j]); });
    for (std::size_t j = 0; j < jobs.size(); ++j) {
        INFO(jobs[j].kernel.name() << " " << kjit::format_type_binding(jobs[j].types) << " for " << jobs[j].arch);
        CHECK(problems[j] == "");
    }
}

void add_ci_targets(std::vector<Job>& jobs, const ReductionKernel& k, const TypeBinding& types) {
    for (const char* arch : {"sm_80", "sm_90"}) jobs.push_back({k, types, arch});
}

}  // namespace

TEST_CASE("a reduction kernel keeps its strings and checks nothing when constructed", "[reduction]") {
    const ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2", reduce_as("float64"));
    CHECK(k.name() == "l2");
    CHECK(k.in_params() == "T x");
    CHECK(k.out_params() == "T y");
    CHECK(k.map_expr() == "x * x");
    CHECK(k.reduce_expr() == "a + b");
    CHECK(k.post_map_expr() == "y = sqrt(a)");
    CHECK(k.identity() == "0");
    CHECK(k.options().reduce_type == "float64");
    CHECK(k.placeholders() == std::vector<std::string>{"T"});
    CHECK_NOTHROW(k.check());
    CHECK_NOTHROW(k.check({{"T", DType::float32}}));
    CHECK_NOTHROW(ReductionKernel("what", "ever", "!", "?", ";", "", "x"));  // construction checks nothing
    CHECK(ReductionKernel("T x", "U y", "x", "a + b", "y = a", "0", "r", reduce_as("V")).placeholders() ==
          std::vector<std::string>{"T", "U", "V"});
}

TEST_CASE("reduction errors name the piece and the position", "[reduction]") {
    auto err = [](const char* map, const char* reduce, const char* post, const char* identity, const char* rtype = "") {
        return error_of([&] {
            ReductionKernel("T x, raw T t", "T y", map, reduce, post, identity, "r", reduce_as(rtype)).check({{"T", DType::float32}});
        });
    };
    // Syntax, in each string.
    CHECK_THAT(err("x +", "a + b", "y = a", "0"), Contains("parse map:1:4"));
    CHECK_THAT(err("x", "a +* b", "y = a", "0"), Contains("parse reduce:1:4"));
    CHECK_THAT(err("x", "a + b", "y = = a", "0"), Contains("parse post:1:5"));
    CHECK_THAT(err("x", "a + b", "y = a", "0 0"), Contains("parse identity:1:3"));
    // Expressions, not statements.
    CHECK_THAT(err("x;", "a + b", "y = a", "0"), Contains("parse map:1:2") && Contains("';'"));
    CHECK_THAT(err("x", "a + b;", "y = a", "0"), Contains("parse reduce:1:6"));
    // Unknown names, with their string.
    CHECK_THAT(err("x * z", "a + b", "y = a", "0"), Contains("map:1:5") && Contains("unknown name 'z'"));
    CHECK_THAT(err("x", "a + c", "y = a", "0"), Contains("reduce:1:5") && Contains("unknown name 'c'"));
    CHECK_THAT(err("x", "a + b", "y = sqrt(q)", "0"), Contains("post:1:10") && Contains("unknown name 'q'"));
    CHECK_THAT(err("x", "a + b", "y = a", "a"), Contains("identity:1:1") && Contains("unknown name 'a'"));
    // The pieces see only their own names: no inputs after the map, no outputs in it.
    CHECK_THAT(err("y", "a + b", "y = a", "0"), Contains("map:1:1") && Contains("unknown name 'y'"));
    CHECK_THAT(err("x", "a + x", "y = a", "0"), Contains("reduce:1:5") && Contains("unknown name 'x'"));
    CHECK_THAT(err("x", "a + b", "y = x", "0"), Contains("post:1:5") && Contains("unknown name 'x'"));
    // i and n: in map and post, not in reduce or identity.
    CHECK(err("x * i / n", "a + b", "y = a / n", "0") == "no error");
    CHECK_THAT(err("x", "a + i", "y = a", "0"), Contains("reduce:1:5") && Contains("'i'"));
    CHECK_THAT(err("x", "a + b", "y = a", "n"), Contains("identity:1:1") && Contains("'n'"));
    // kjit's names.
    CHECK_THAT(err("_kjit_r", "a + b", "y = a", "0"), Contains("parse map:1:1") && Contains("reserved"));
    CHECK_THAT(err("x", "a + b", "y = _kjit_r", "0"), Contains("parse post:1:5") && Contains("reserved"));
    // Writes where there is nothing to write.
    CHECK_THAT(err("x = 1", "a + b", "y = a", "0"), Contains("map:1:1") && Contains("input parameter 'x'"));
    CHECK_THAT(err("x", "a += b", "y = a", "0"), Contains("reduce:1:1") && Contains("input parameter 'a'"));
    CHECK_THAT(err("x", "a + b", "a = y", "0"), Contains("post:1:1") && Contains("input parameter 'a'"));
    // Types.
    CHECK_THAT(err("x % 2", "a + b", "y = a", "0"), Contains("map:1:"));
    CHECK_THAT(err("x", "a ^ b", "y = a", "0"), Contains("type reduce:1:"));
    CHECK_THAT(err("t", "a + b", "y = a", "0"), Contains("map:1:1") && Contains("must be indexed"));
    CHECK(err("t[i] * x", "a + b", "y = a", "0") == "no error");
    CHECK_THAT(err("x", "a + b", "y = a", "0", "complex64"), Contains("type post:1:5") && Contains("complex64"));
    CHECK_THAT(err("x", "a + b", "y = a", "0", "flaot32"), Contains("parse reduce_type:1:1") && Contains("flaot32"));
    CHECK(err("x", "a + b", "y = a", "0", "double") == "no error");
    CHECK(err("x", "a + b", "y = a", "0", "long long") == "no error");
    CHECK(err("x", "a + b", "y = a", "", "") == "no error");  // no identity
    CHECK_THAT(err("x", "a + b", "", "0"), Contains("parse post:1:1"));
    // Outputs.
    CHECK_THAT(error_of([] { ReductionKernel("T x", "T a", "x", "a + b", "a = a", "0", "r").check(); }),
               Contains("type out:1:3") && Contains("'a'"));
    CHECK_THAT(error_of([] { ReductionKernel("T x", "raw T y", "x", "a + b", "y[0] = a", "0", "r").check(); }),
               Contains("type out:1:7") && Contains("raw"));
    CHECK_THAT(error_of([] { ReductionKernel("T x", "", "x", "a + b", "a", "0", "r").check(); }), Contains("parse out:"));
    CHECK_THAT(error_of([] { ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "_r").check(); }), Contains("parse name:"));
}

TEST_CASE("KernelOptions' fields of the other kind are refused, and a reduction's call options too", "[reduction]") {
    KernelOptions prep;
    prep.loop_prep = "int k = 0;";
    const ReductionKernel with_prep("T x", "T y", "x", "a + b", "y = a", "0", "with_prep", prep);
    CHECK_THROWS_WITH(with_prep.check(), Contains("reduction 'with_prep': KernelOptions::loop_prep applies to elementwise kernels"));
    KernelOptions typed;
    typed.reduce_type = "float64";
    const kjit::ElementwiseKernel elementwise("T x", "T y", "y = x", "typed_copy", typed);
    CHECK_THROWS_WITH(elementwise.check(), Contains("kernel 'typed_copy': KernelOptions::reduce_type ('float64') applies to reductions"));
    // A call: host arrays, so that no GPU is needed to reach the check.
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum_opts");
    const std::vector<float> data(8, 1.0f);
    const kjit::Array x = kjit::Array::from_host(data.data(), DType::float32, {8}, kjit::Device::cpu());
    kjit::ReduceOptions blocks;
    blocks.block_size = 128;
    CHECK_THROWS_WITH(sum({x}, blocks), Contains("block_size must be left unset (it is 128)"));
    kjit::ReduceOptions sized;
    sized.size = 8;
    CHECK_THROWS_WITH(sum({x}, sized), Contains("size must be left unset (it is 8)"));
}

TEST_CASE("reduction bindings: every placeholder, the reduce type's too", "[reduction]") {
    const ReductionKernel k("T x", "T y", "x", "a + b", "y = a", "0", "r", reduce_as("U"));
    CHECK_NOTHROW(k.check());
    CHECK_NOTHROW(k.source({{"T", DType::float32}, {"U", DType::float64}}));
    CHECK_THAT(error_of([&] { k.source({{"T", DType::float32}}); }), Contains("type reduce_type") && Contains("'U'"));
    CHECK_THAT(error_of([&] { k.source({{"U", DType::float32}}); }), Contains("placeholder 'T'"));
    CHECK_THAT(error_of([&] { k.source({{"T", DType::float32}, {"U", DType::float64}, {"V", DType::int8}}); }),
               Contains("'V' is not a type placeholder"));
    // Without a reduce type, the first output's type, as in CuPy (not the map's: int8 * int8 is
    // int, and summing in int would wrap where the int64 output would not).
    const ReductionKernel sq("T x", "int64 y", "x * x", "a + b", "y = a", "0", "sq");
    CHECK_THAT(sq.source({{"T", DType::int8}}), Contains("reduce type: int64"));
    CHECK_THAT(sq.source({{"T", DType::float64}}), Contains("reduce type: int64"));
    const ReductionKernel both("T x", "U y, T z", "x", "a + b", "y = a; z = a", "0", "both");
    CHECK_THAT(both.source({{"T", DType::float32}, {"U", DType::int16}}), Contains("reduce type: int16"));
    // A complex map into a real first output is refused, as CuPy's C++ would refuse it.
    const ReductionKernel lossy("T x", "float64 y", "x", "a + b", "y = a", "0", "lossy");
    CHECK_THAT(error_of([&] { lossy.source({{"T", DType::complex64}}); }), Contains("map") && Contains("complex64"));
}

TEST_CASE("the generated reduction shows the user's pieces and its entry points", "[reduction]") {
    const ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2", reduce_as("float64"));
    const std::string src = l2.source({{"T", DType::float32}});
    CHECK_THAT(src, Contains("_kjit_r = x * x;"));
    CHECK_THAT(src, Contains("_kjit_r = a + b;"));
    CHECK_THAT(src, Contains("y = sqrt(a);"));
    CHECK_THAT(src, Contains("double l2_map(const float x, const long long i, const long long n)"));
    CHECK_THAT(src, Contains("double l2_reduce(const double a, const double b)"));
    CHECK_THAT(src, Contains("double l2_identity()"));
    CHECK_THAT(src, Contains("void l2_post(const double a, float& y, const long long i, const long long n)"));
    CHECK_THAT(src, Contains("struct l2_args {\n    const float* x;\n    float* y;\n};"));
    for (const char* e : {"l2_full32(const l2_args args, const kjit::ReduceLayout<1, 1> layout, void* workspace)",
                          "l2_full64(", "l2_rows_warp32(const l2_args args, const kjit::ReduceLayout<1, 1> layout)",
                          "l2_rows_warp64(", "l2_rows_block32(", "l2_rows_block64(", "l2_columns32(", "l2_columns64(",
                          "l2_columns_split32(const l2_args args, const kjit::ReduceLayout<1, 1> layout, void* workspace)",
                          "l2_columns_split64(",
                          "l2_columns_finish32(const l2_args args, const kjit::ReduceLayout<1, 1> layout, const void* workspace, const int chunks)",
                          "l2_columns_finish64("})
        CHECK_THAT(src, Contains(std::string("extern \"C\" __global__ void __launch_bounds__(512) ") + e));
    CHECK_THAT(src, Contains("has_identity = true"));
    // Vector loads: 16 bytes of the widest input (here float32), none for 16-byte elements.
    CHECK_THAT(src, Contains("enum : int { vector = 4 };") && Contains("kjit::load<vector>(args.x + off[0])"));
    CHECK_THAT(ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "c").source({{"T", DType::complex128}}),
               Contains("enum : int { vector = 1 };"));
    CHECK_THAT(src, !Contains("cuda_fp16.h"));
    // No identity: the kernels track which partial results hold a value.
    const std::string none = ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "", "mx").source({{"T", DType::float16}});
    CHECK_THAT(none, Contains("has_identity = false") && !Contains("mx_identity"));
    CHECK_THAT(none, Contains("#include <cuda_fp16.h>"));
    // Raw inputs are passed whole, array inputs by their layout slot.
    const std::string raw = ReductionKernel("T x, raw T w, T z", "T y", "x * w[i] + z", "a + b", "y = a", "0", "dot")
                                .source({{"T", DType::float32}});
    CHECK_THAT(raw, Contains("kjit::Raw<const float> w;") && Contains("ReduceLayout<2, 1>"));
    CHECK_THAT(raw, Contains("dot_map(args.x[off[0]], args.w, args.z[off[1]]"));
}

TEST_CASE("a sum compiles for every dtype on sm_80 and sm_90", "[reduction][nvrtc]") {
    std::vector<Job> jobs;
    for (DType t : kjit::test::all_dtypes()) {
        add_ci_targets(jobs, ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "sum"), {{"T", t}});
        add_ci_targets(jobs, ReductionKernel("T x", "T y", "x", "a + b", "y = a", "", "sum_noid"), {{"T", t}});
    }
    compile_all(jobs);
}

TEST_CASE("min, max, sum of squares in float64, mean, complex and preamble reductions compile", "[reduction][nvrtc]") {
    std::vector<Job> jobs;
    for (DType t : {DType(DType::int8), DType(DType::uint32), DType(DType::int64), DType(DType::float16),
                    DType(DType::bfloat16), DType(DType::float32), DType(DType::float64)}) {
        add_ci_targets(jobs, ReductionKernel("T x", "T y", "x", "min(a, b)", "y = a", "", "min_"), {{"T", t}});
        add_ci_targets(jobs, ReductionKernel("T x", "T y", "x", "a > b ? a : b", "y = a", "", "max_"), {{"T", t}});
    }
    add_ci_targets(jobs, ReductionKernel("T x", "float64 y", "(double)x * x", "a + b", "y = a", "0", "sumsq", reduce_as("float64")),
                   {{"T", DType::float32}});
    add_ci_targets(jobs, ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2", reduce_as("float64")),
                   {{"T", DType::float32}});
    add_ci_targets(jobs, ReductionKernel("T x", "float32 y", "x", "a + b", "y = a / n", "0", "mean", reduce_as("float32")),
                   {{"T", DType::int32}});
    for (DType t : {DType(DType::complex64), DType(DType::complex128)})
        add_ci_targets(jobs, ReductionKernel("T x", "T y, float64 m", "x", "a + b", "y = a; m = abs(a)", "0", "csum"), {{"T", t}});
    // Two inputs, a raw one, and an index-weighted map.
    add_ci_targets(jobs, ReductionKernel("T x, T w, raw T t", "T y", "x * w + t[i] * (T)i", "a + b", "y = a", "0", "dot"),
                   {{"T", DType::float32}});
    KernelOptions pre;
    pre.preamble = "__device__ float squash(float v) { return v / (1.0f + fabsf(v)); }\n";
    add_ci_targets(jobs, ReductionKernel("T x", "T y", "squash(x)", "a + b", "y = a", "0", "squashed", pre), {{"T", DType::float32}});
    compile_all(jobs);
}
