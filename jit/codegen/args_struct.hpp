// The generated kernels' argument struct (NAME_args), printed with a static_assert per field on
// the offsets the launcher writes (detail::args_layout), so that NVRTC checks the C++ layout on
// every compile: a drift between the two is a CompileError, not garbage arguments.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "kjit/dtype.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit::codegen {

struct ArgsField {
    std::string declaration;  // the field's type as CUDA spells it: "const float*", "kjit::Raw<const float>"
    std::string name;
    kjit::detail::ArgField field;   // as the launcher packs it
    DType type;               // the value's dtype (for `value` fields)
};

// `struct <type> { fields...; [long long n;] };` and the checks. Without `with_n` (reductions) the
// struct ends with the last field, and its size is checked to fit the bytes the launcher writes.
void print_args_struct(std::ostringstream& s, const std::string& type, const std::vector<ArgsField>& fields, bool with_n);

}  // namespace kjit::jit::codegen
