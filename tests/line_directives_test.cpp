// #line directives in generated code (issue 31): NVRTC's messages, and the line tables of
// -lineinfo that compute-sanitizer and Nsight read, name the user's strings and lines, and the
// generated file's own lines are numbered right again after each body. NVRTC only, no GPU.
#include "test_support.hpp"

#include <sstream>
#include <string>

#include "jit/codegen/statement_printer.hpp"
#include "kjit/kjit.hpp"

namespace {

// The physical line (from 1) of each line that starts with `prefix`, and the text after it.
std::vector<std::pair<int, std::string>> lines_starting(const std::string& source, const std::string& prefix) {
    std::vector<std::pair<int, std::string>> found;
    std::istringstream in(source);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
        if (line.starts_with(prefix)) found.emplace_back(n, line.substr(prefix.size()));
    return found;
}

const kjit::TypeBinding f32{{"T", kjit::DType::float32}};

}  // namespace

TEST_CASE("an elementwise body names the user's lines, then the generated file's again", "[nvrtc][codegen]") {
    const kjit::ElementwiseKernel k("T x, T a", "T y", "T t = a * x;\ny = t + 1;", "twostep");
    const std::string source = k.source(f32);
    CHECK_THAT(source, Catch::Contains("#line 1 \"twostep:op\"\n    T t = a * x;"));
    CHECK_THAT(source, Catch::Contains("#line 2 \"twostep:op\"\n    y = t + 1;"));
    // Every directive naming the generated file again gives the physical line that follows it.
    const auto back = lines_starting(source, "#line ");
    int restored = 0;
    for (const auto& [at, rest] : back) {
        if (rest.find("\"twostep.cu\"") == std::string::npos) continue;
        CHECK(rest == std::to_string(at + 1) + " \"twostep.cu\"");
        ++restored;
    }
    CHECK(restored == 1);
    CHECK(source.find("KJIT_NEXT_LINE") == std::string::npos);
}

TEST_CASE("a reduction's pieces are named map, reduce, identity and post", "[nvrtc][codegen]") {
    const kjit::ReductionKernel r("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq");
    const std::string source = r.source(f32);
    for (const char* piece : {"map", "reduce", "identity", "post"})
        CHECK_THAT(source, Catch::Contains(std::string("#line 1 \"sumsq:") + piece + "\""));
    for (const auto& [at, rest] : lines_starting(source, "#line "))
        if (rest.find("\"sumsq.cu\"") != std::string::npos) CHECK(rest == std::to_string(at + 1) + " \"sumsq.cu\"");
}

TEST_CASE("NVRTC's error in the operation names the kernel's string and line, and the excerpt shows it", "[nvrtc][codegen]") {
    // The preamble's functions are called as written (kjit does not check them): NVRTC finds the
    // wrong argument count, on line 2 of the operation.
    const kjit::KernelOptions options{.preamble = "__device__ float twice(float v) { return 2 * v; }\n"};
    const kjit::ElementwiseKernel k("T x", "T y", "T t = x;\ny = twice(t, t);", "badcall", options);
    try {
        (void)k.compile(f32, "sm_90");
        FAIL("no CompileError");
    } catch (const kjit::CompileError& e) {
        CHECK_THAT(e.log(), Catch::Contains("badcall:op(2): error"));
        CHECK_THAT(e.source_excerpt(), Catch::Contains("badcall:op:\n"));
        CHECK_THAT(e.source_excerpt(), Catch::Contains("> 2 | y = twice(t, t);"));
        CHECK_THAT(std::string(e.what()), Catch::Contains("> 2 | y = twice(t, t);"));
    }
}

TEST_CASE("with -lineinfo the PTX's line table names the user's string", "[nvrtc][codegen]") {
    const kjit::KernelOptions options{.nvrtc_options = {"-lineinfo"}};
    const kjit::ElementwiseKernel k("T x, T a, T b", "T y", "y = a * x + b", "lined", options);
    const kjit::Binary b = k.compile(f32, "sm_90");
    // `.file 2 "<working folder>/lined:op"`: NVRTC puts its working folder before the names.
    CHECK_THAT(b.ptx, Catch::Contains("lined:op\""));
    CHECK_THAT(b.ptx, Catch::Contains("lined.cu\""));
}

TEST_CASE("number_line_directives numbers each directive left after a body", "[codegen]") {
    const std::string before = "a\n#line KJIT_NEXT_LINE \"k.cu\"\nb\nc\n#line KJIT_NEXT_LINE \"k.cu\"\n";
    CHECK(kjit::jit::codegen::number_line_directives(before) == "a\n#line 3 \"k.cu\"\nb\nc\n#line 6 \"k.cu\"\n");
    CHECK(kjit::jit::codegen::number_line_directives("no directives") == "no directives");
}
