// libFuzzer target for the front end: kernel bodies, single expressions and parameter lists.
// Any exception other than a kjit::Error, any crash, hang, leak or undefined behaviour is a bug.
//
// Build and run (Debian: clang-14 and libclang-rt-14-dev):
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
//     -I. -Iinclude -I/usr/local/cuda/include tests/fuzz/parser_fuzzer.cpp \
//     jit/source.cpp jit/lexer.cpp jit/parser.cpp jit/params.cpp runtime/dtype.cpp runtime/error.cpp \
//     runtime/detail/driver.cpp runtime/detail/dynamic_library.cpp runtime/detail/log.cpp -ldl \
//     -o build-fuzz/parser_fuzzer
//   build-fuzz/parser_fuzzer -max_total_time=60 -max_len=4096 -timeout=5
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jit/params.hpp"
#include "jit/parser.hpp"
#include "kjit/error.hpp"

namespace {

// Runs one front-end entry point; kjit errors are the expected outcome of most inputs.
template <typename F>
void run(F&& f) {
    try {
        f();
    } catch (const kjit::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace kjit::jit;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    // The whole input as a body and as an expression: NUL bytes included, the lexer must
    // reject them with a position.
    run([&] { parse_body(SourceText{"op", input}); });
    run([&] { parse_expression(SourceText{"map", input}); });
    // Up to the first NUL: the "in" list; after it, up to the next NUL: the "out" list; the
    // rest: a body again, so that the fuzzer can grow all three at once.
    const std::size_t first = input.find('\0');
    const std::string_view in = input.substr(0, first);
    std::string_view rest = first == std::string_view::npos ? std::string_view() : input.substr(first + 1);
    const std::size_t second = rest.find('\0');
    const std::string_view out = rest.substr(0, second);
    const std::string_view body = second == std::string_view::npos ? std::string_view() : rest.substr(second + 1);
    run([&] { parse_param_lists(SourceText{"in", in}, SourceText{"out", out}); });
    run([&] { parse_body(SourceText{"op", body}); });
    return 0;
}
