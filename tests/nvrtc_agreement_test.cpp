// What NVRTC would refuse, kjit refuses first with a position (issue 30, item 10), or generates
// code NVRTC accepts where C gives the construct a meaning (isnan of an integer is false).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cupy_support.hpp"
#include "jit/kernels/precompile.hpp"
#include "kjit/kjit.hpp"
#include "test_support.hpp"

using namespace kjit;
using namespace kjit::test;
using Catch::Contains;
using C = std::complex<double>;

namespace {

std::string check_error(const std::string& in, const std::string& out, const std::string& op, const std::string& name = "k") {
    return error_of([&] { ElementwiseKernel(in, out, op, name).check({{"T", DType::float32}}); });
}

}  // namespace

TEST_CASE("names C++ keeps for itself are refused in kernel names, parameters and locals", "[nvrtc_agreement]") {
    for (const char* word : {"int", "class", "template", "public", "and", "not", "xor", "float", "NULL"}) {
        INFO(word);
        CHECK_THAT(check_error("T x", "T y", "y = x", word), Contains("parse name:") && Contains("cannot name a kernel"));
    }
    for (const char* word : {"and", "not", "xor", "public", "private", "friend", "NULL", "CUDART_VERSION", "requires"}) {
        INFO(word);
        CHECK_THAT(check_error(std::string("T ") + word, "T y", "y = 1"), Contains("parse in:1:3") && Contains("cannot name a parameter"));
        CHECK_THAT(check_error("T x", "T y", std::string("int ") + word + " = 1; y = x"),
                   Contains("op:1:5") && Contains("cannot name a variable"));
    }
    CHECK(check_error("T x, T band", "T y", "int nota = 1; y = x + band", "kernel_and_more") == "no error");
}

TEST_CASE("a float literal that would round to 0 is refused", "[nvrtc_agreement]") {
    CHECK_THAT(check_error("T x", "T y", "y = x * 1e-46f"), Contains("op:1:9") && Contains("too small for a float"));
    CHECK(check_error("T x", "T y", "y = x * 1e-45f + 1e-300") == "no error");  // the smallest float, and a double
}

TEST_CASE("parameters past the space a launch passes are refused", "[nvrtc_agreement]") {
    std::string in;
    for (int k = 0; k < 30; ++k) in += (k ? ", raw T t" : "raw T t") + std::to_string(k);
    CHECK_THAT(check_error(in, "T y", "y = 0"), Contains("in:") && Contains("more than the 4096"));
    std::string few;
    for (int k = 0; k < 20; ++k) few += (k ? ", raw T t" : "raw T t") + std::to_string(k);
    CHECK(check_error(few, "T y", "y = 0") == "no error");
}

TEST_CASE("isnan, isinf, isfinite and signbit of integers and bool compile with NVRTC", "[nvrtc_agreement][nvrtc]") {
    const ProcessCacheGuard restore;
    const TempDir dir;
    configure_cache(cache_in(dir.path()));
    for (DType t : all_dtypes()) {
        if (!t.is_integer() && !t.is_bool()) continue;
        INFO(t.name());
        const ElementwiseKernel k("T x", "bool a, bool b, bool c, bool d", "a = isnan(x); b = isinf(x); c = isfinite(x); d = signbit(x)",
                                  "int_predicates");
        CHECK_FALSE(k.compile({{"T", t}}, "sm_90").cubin.empty());
    }
}

namespace {

void integer_predicates(Device d) {
    INFO("seed " << seed());
    const std::vector<double> x = draw(500, -100, 100, true);
    const ElementwiseKernel k("T x", "bool a, bool b, bool c, bool s", "a = isnan(x); b = isinf(x); c = isfinite(x); s = signbit(x)",
                              "int_predicates_values");
    const Outputs out = k({on(d, cast_all<std::int32_t>(x), DType::int32)});
    CHECK(mismatches(out[0], [](std::size_t) { return C(0); }, 0) == 0);
    CHECK(mismatches(out[1], [](std::size_t) { return C(0); }, 0) == 0);
    CHECK(mismatches(out[2], [](std::size_t) { return C(1); }, 0) == 0);
    CHECK(mismatches(out[3], [&](std::size_t j) { return C(x[j] < 0 ? 1 : 0); }, 0) == 0);
}

}  // namespace

KJIT_ON_BOTH_BACK_ENDS_TAGGED("[nvrtc_agreement]", "isnan & co. of an integer mean what C says", integer_predicates)

TEST_CASE("diagnostics stay small and fast for huge names, lines and preambles", "[nvrtc_agreement][diagnostics]") {
    // A 120k-character name: no "did you mean" search (it was quadratic), the name shortened.
    const std::string long_name = check_error("T x", "T y", "y = " + std::string(120000, 'a'));
    CHECK_THAT(long_name, Contains("unknown name 'aaaa") && Contains("...'"));
    CHECK(long_name.size() < 1000);
    // A 1 MB line: a window of it around the caret, the caret under the right character.
    std::string line = "y = x + ";
    for (int k = 0; k < 300000; ++k) line += "1+";
    line += "zz";
    std::string deep;
    try {
        ElementwiseKernel("T x", "T y", line, "k").check();
    } catch (const ParseError& e) {
        deep = e.what();  // the message with the line and its caret
    }
    CHECK(deep.size() < 1000);
    const std::size_t text = deep.find("\n...") + 1, caret = deep.find('^');
    REQUIRE(text != std::string::npos);
    REQUIRE(caret != std::string::npos);
    const std::size_t caret_column = caret - (deep.rfind('\n', caret) + 1);
    CHECK(deep[text + caret_column] == '1');  // the window's character under the caret is the source's
    // 100k preamble functions: found with a set, not compared pairwise.
    std::string preamble;
    for (int k = 0; k < 100000; ++k) preamble += "float f" + std::to_string(k) + "(float v) { return v; }\n";
    KernelOptions options;
    options.preamble = preamble;
    CHECK(error_of([&] { ElementwiseKernel("T x", "T y", "y = f99999(x)", "k", options).check({{"T", DType::float32}}); }) == "no error");
}

TEST_CASE("a NUL byte in a preamble, an option, loop_prep or a raw source is refused with its position", "[nvrtc_agreement]") {
    using namespace std::string_literals;
    auto elementwise_error = [](KernelOptions o) {
        return error_of([&] { ElementwiseKernel("T x", "T y", "y = x", "k", std::move(o)).check({{"T", DType::float32}}); });
    };
    KernelOptions o;
    o.preamble = "__device__ int f() { return 1; }\n  \0 junk"s;
    CHECK_THAT(elementwise_error(o), Contains("preamble:2:3") && Contains("a NUL byte"));
    o = {};
    o.nvrtc_options = {"-DA=1", "-DB=2\0x"s};
    CHECK_THAT(elementwise_error(o), Contains("NVRTC option 2:1:6") && Contains("a NUL byte"));
    o = {};
    o.loop_prep = "int s = 0;\0"s;
    CHECK_THAT(elementwise_error(o), Contains("loop_prep:1:11") && Contains("NUL"));

    KernelOptions r;
    r.preamble = "\0"s;
    CHECK_THAT(error_of([&] { ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "r", r).check({{"T", DType::float32}}); }),
               Contains("preamble:1:1") && Contains("a NUL byte"));

    CHECK_THAT(error_of([] { RawModule("extern \"C\" __global__ void k() {}\n\0"s); }),
               Contains("raw module source:2:1") && Contains("a NUL byte"));
    RawModuleOptions ro;
    ro.name_expressions = {"k<int>\0"s};
    CHECK_THAT(error_of([&] { RawModule("extern \"C\" __global__ void k() {}", ro); }), Contains("name expression:1:7"));
}

TEST_CASE("a manifest whose preamble holds a NUL byte fails to precompile instead of caching an empty module",
          "[nvrtc_agreement][manifest]") {
    const ProcessCacheGuard restore;
    const TempDir dir;
    configure_cache(cache_in(dir.path()));
    nlohmann::json m = {{"kernels", {{{"kind", "elementwise"}, {"name", "k"}, {"in", "T x"}, {"out", "T y"}, {"op", "y = x"},
                                      {"types", {{{"T", "float32"}}}}, {"preamble", std::string("int a;\0 junk", 12)}}}}};
    const jit::kernels::PrecompileResult r = jit::kernels::precompile(m, {"sm_90"}, 1);
    CHECK(r.compiled == 0);
    REQUIRE(r.failures.size() == 1);
    CHECK_THAT(r.failures[0], Contains("preamble:1:7") && Contains("NUL"));
}
