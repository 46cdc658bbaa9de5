// The pieces of a reduction whose running value is a struct (jit/frontend/struct_decl.hpp), turned
// into pieces over plain values that the type checker and both back ends already handle: field
// `f` of `a` is a parameter named "a.f" (which the CUDA printer writes as the member access it
// is), and a piece that makes a value assigns each field of the result, "_kjit_r.f = ...".
//
// A value of the struct is written as a brace list of its fields in order, "{1, x, 0}"; as `a` or
// `b`; or as a conditional choosing between such values, "b.v > a.v ? b : a" (its condition is
// then evaluated once per field: pieces have no side effects).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/source.hpp"
#include "jit/frontend/struct_decl.hpp"

namespace kjit::jit::kernels {

// Rewrites every `a.f` (for the names in `values`) into the name "a.f" in place, refusing unknown
// fields and any other use of a struct value ("y = a": only its fields are numbers).
void rewrite_field_reads(frontend::Body& body, const frontend::SourceText& src, const frontend::StructDecl& s,
                         const std::vector<std::string>& values);

// Parses `src` as a value of the struct (see above) and returns one expression per field, in
// order, with field reads rewritten. `check_names` sees every parsed expression first (the
// reduction's rules for names). Errors point into `src`.
std::vector<frontend::ExprPtr> parse_struct_value(const frontend::SourceText& src, const frontend::StructDecl& s,
                                                  const std::vector<std::string>& values,
                                                  const std::function<void(const frontend::Expr*)>& check_names);

}  // namespace kjit::jit::kernels
