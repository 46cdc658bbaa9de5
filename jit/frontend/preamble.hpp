// The preamble: raw CUDA a kernel opts into, for helper functions. kjit does not parse it as
// kernel code; it only finds the functions it declares, which become callable from the body.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/frontend/named_constants.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

struct PreambleFunction {
    std::string name;
    std::optional<DType> return_type;  // when it is spelled as a kjit type; otherwise unknown
};

// The functions declared or defined at file scope of `preamble` (outside braces), found by a
// light scan that skips comments, string literals and preprocessor lines.
std::vector<PreambleFunction> scan_preamble(std::string_view preamble);

// What kernel code may name from outside its own strings: the preamble's functions, and the
// macros the kernel defines (the preamble's `#define NAME value`, NVRTC's `-DNAME=value`).
struct OutsideNames {
    std::vector<PreambleFunction> functions;
    std::vector<NamedConstant> macros;
};
OutsideNames outside_names(std::string_view preamble, const std::vector<std::string>& nvrtc_options);

}  // namespace kjit::jit::frontend
