// Positions in kernel strings, and turning a position into the error a user sees.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::jit::frontend {

// 1-based line and column, and the byte offset, of a place in one kernel string.
struct SourcePos {
    int line = 1;
    int column = 1;
    std::uint32_t offset = 0;
};

// One kernel string and what it is called in messages: "op", "in", "out", "map", "preamble"...
struct SourceText {
    std::string where;
    std::string_view text;
};

// The position of byte `offset` of `text` (lines counted by '\n', columns in bytes from 1).
SourcePos position_at(std::string_view text, std::size_t offset);

// Throws kjit::ParseError at the first NUL byte of `source`, if it has one: NVRTC takes C strings,
// so it would compile only the text before it and report success for a program cut short.
void refuse_nul_byte(const SourceText& source);

// The line holding `pos` and a caret under its column ("  y = sqr(x);\n      ^").
std::string caret_snippet(std::string_view text, SourcePos pos);

// Throws kjit::ParseError at `pos` of `source`.
[[noreturn]] void fail_parse(const SourceText& source, SourcePos pos, const std::string& message,
                             const std::string& hint = {});
// Throws kjit::TypeError formatted like a ParseError ("op:1:5: error: ...", snippet, hint): type
// mistakes have positions too.
[[noreturn]] void fail_type(const SourceText& source, SourcePos pos, const std::string& message,
                            const std::string& hint = {});

// The closest of `candidates` to `name` by edit distance, if close enough to suggest
// ("did you mean 'sqrt'?"); empty otherwise.
std::string closest_name(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace kjit::jit::frontend
