// Struct running values of reductions (issue 36): the checked form a reduce type takes when one
// value is not enough, as KernelOptions::reduce_type spells it,
//
//   "struct welford { float64 n; float64 mean; float64 m2; }"   (or "struct { ... }", unnamed)
//
// or a struct the preamble defines, named by KernelOptions::reduce_type ("welford") as CuPy allows.
// Fields are plain values: a dtype, a C type name or a placeholder ("T best; int64 at;"); no
// arrays, nested structs, methods or bit fields, so that kjit can check every piece that reads
// and writes them and the host back end can lay them out as the GPU does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/frontend/source.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

struct StructField {
    std::string name;
    std::string type;             // as written, C words joined by single spaces ("float64", "T")
    std::string placeholder;      // "T" when the type is one
    std::optional<DType> dtype;   // the fixed dtype otherwise
    SourcePos pos;                // of the name
};

struct StructDecl {
    std::string name;  // empty when unnamed
    std::vector<StructField> fields;
    bool from_preamble = false;  // defined by the preamble: the generated code must not define it again
};

// True when `text` starts with the word `struct` (after spaces): a declaration to parse.
bool is_struct_decl(std::string_view text);

// Parses "struct [NAME] { TYPE FIELD; ... } [;]". Throws ParseError pointing into `source` for
// anything else: no fields, a duplicate field, an unknown type, an array, a method.
StructDecl parse_struct_decl(const SourceText& source);

// The definition "struct NAME { ... };" at file scope of `preamble`, parsed as above with errors
// pointing into the preamble; nothing when the preamble does not define NAME.
std::optional<StructDecl> find_preamble_struct(std::string_view preamble, const std::string& name);

}  // namespace kjit::jit::frontend
