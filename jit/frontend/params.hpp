// Parameter lists in CuPy's syntax: "T x, raw T table, float32 alpha".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/source.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

struct Param {
    std::string name;
    SourcePos pos;          // of the name
    TypeName type;          // as written
    bool raw = false;       // `raw`: indexed explicitly with [], not element by element
    bool non_const = false; // `_non_const` (CuPy's): a raw input the kernel may write
    bool is_output = false;
    bool is_placeholder = false;  // the type is a placeholder such as T
    std::optional<DType> dtype;   // the fixed dtype when the type is not a placeholder
};

// Parses one list ("in" or "out"). Errors (ParseError with position): malformed lists, unknown
// types (with a "did you mean" hint), names reserved for the kernel (`i`, `n`, anything starting
// with `_`, keywords and type names), duplicates within the list.
std::vector<Param> parse_params(const SourceText& source, bool outputs);
// The same by the full parser alone, without the shortcut for simple lists: for tests that
// check both read every list alike.
std::vector<Param> parse_params_without_shortcut(const SourceText& source, bool outputs);

// A kernel's name prefixes the symbols of its module: it must be a C identifier kjit does not
// reserve (no leading '_'). Throws ParseError pointing into the string "name".
void check_kernel_name(const std::string& name);

// Parses the input and output lists together: also rejects a name used in both.
std::vector<Param> parse_param_lists(const SourceText& in, const SourceText& out);

}  // namespace kjit::jit::frontend
