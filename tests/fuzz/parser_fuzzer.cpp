// libFuzzer target for the front end: kernel bodies, single expressions, parameter lists and
// struct running values (a reduce type's declaration, a preamble's struct).
// Any exception other than a kjit::Error, any crash, hang, leak or undefined behaviour is a bug.
//
// Build and run (Debian: clang-14 and libclang-rt-14-dev):
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
//     -I. -Iinclude -I/usr/local/cuda/include tests/fuzz/parser_fuzzer.cpp \
//     jit/frontend/source.cpp jit/frontend/lexer.cpp jit/frontend/parser.cpp jit/frontend/params.cpp jit/frontend/struct_decl.cpp \
//     runtime/dtype.cpp runtime/error.cpp \
//     runtime/detail/driver.cpp runtime/detail/dynamic_library.cpp runtime/detail/log.cpp -ldl \
//     -o build-fuzz/parser_fuzzer
//   build-fuzz/parser_fuzzer -max_total_time=60 -max_len=4096 -timeout=5
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "jit/frontend/params.hpp"
#include "jit/frontend/parser.hpp"
#include "jit/frontend/struct_decl.hpp"
#include "kjit/error.hpp"
#include "tests/params_as_text.hpp"

namespace {

// Runs one front-end entry point; kjit errors are the expected outcome of most inputs.
template <typename F>
void run(F&& f) {
    try {
        f();
    } catch (const kjit::Error&) {
    }
}

// parse_params reads simple lists without the lexer: it must read every list as the full parser
// does (the same parameters, or an error: the full parser's own, as the shortcut defers to it).
void same_params_both_ways(std::string_view text) {
    if (kjit::test::params_as_text(text, true) != kjit::test::params_as_text(text, false)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kjit::jit::frontend;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    // The whole input as a body and as an expression: NUL bytes included, the lexer must
    // reject them with a position.
    run([&] { parse_body(SourceText{"op", input}); });
    run([&] { parse_expression(SourceText{"map", input}); });
    run([&] { parse_struct_decl(SourceText{"reduce_type", input}); });
    run([&] { find_preamble_struct(input, "welford"); });
    // Up to the first NUL: the "in" list; after it, up to the next NUL: the "out" list; the
    // rest: a body again, so that the fuzzer can grow all three at once.
    const std::size_t first = input.find('\0');
    const std::string_view in = input.substr(0, first);
    std::string_view rest = first == std::string_view::npos ? std::string_view() : input.substr(first + 1);
    const std::size_t second = rest.find('\0');
    const std::string_view out = rest.substr(0, second);
    const std::string_view body = second == std::string_view::npos ? std::string_view() : rest.substr(second + 1);
    run([&] { parse_param_lists(SourceText{"in", in}, SourceText{"out", out}); });
    same_params_both_ways(in);
    run([&] { parse_body(SourceText{"op", body}); });
    return 0;
}
