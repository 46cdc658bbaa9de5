// The parser: kernel strings to syntax trees (jit/frontend/ast.hpp), in the style of LLVM's Kaleidoscope
// (the grammar rule above each parse function, precedence climbing for binary operators).
// Every error is a kjit::ParseError with the string's name, line, column, a caret and, where it
// helps, a hint. Nesting is limited to kMaxDepth levels so that no input exhausts the stack, and
// every loop consumes input, so no input hangs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/source.hpp"

namespace kjit::jit::frontend {

// Counts every nested block or statement, every parenthesis, unary operator and cast, and every
// binary or postfix operator of a chain (a + b + c is a tree two levels deep): the tree the
// checker and code generator walk recursively is never deeper than about twice this.
inline constexpr int kMaxDepth = 200;
// The most elements of a local array (`float acc[N]`): registers or a thread's local memory.
inline constexpr int kMaxLocalArray = 1024;

// A sequence of statements: an elementwise kernel's operation.
Body parse_body(const SourceText& source);

// One expression and nothing else: a reduction's map, reduce or identity expression.
ExprPtr parse_expression(const SourceText& source);

// True when `spelling` names a type in kernel code: a dtype's NumPy or C name, `auto`, or a
// placeholder (one upper-case letter).
bool is_type_name(std::string_view spelling);
bool is_placeholder_name(std::string_view spelling);

// True for the C words that combine into one type: unsigned, signed, short, long, int, char.
bool is_c_type_word(std::string_view word);

// The spelling DType::try_parse knows for a sequence of C type words, in any order C allows:
// {"long", "unsigned", "int"} -> "unsigned long", {"short", "int"} -> "short",
// {"signed", "char"} -> "signed char". Empty when the words make no C type ("long char").
std::optional<std::string> canonical_c_type(const std::vector<std::string_view>& words);
// canonical_c_type, or a ParseError at `pos` of `source` saying the words are not a valid type.
std::string c_type_spelling(const SourceText& source, SourcePos pos, const std::vector<std::string_view>& words);

}  // namespace kjit::jit::frontend
