// Names that stand for constants in kernel code: CUDA's math_constants.h (CUDART_PI_F,
// CUDART_INF...), which CuPy kernels use as they would in CUDA, and the object-like macros a
// kernel defines itself, with a preamble's `#define NAME value` or an NVRTC option `-DNAME=value`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

struct NamedConstant {
    std::string name;
    DType type = DType::int32;   // the C type of the value as written
    std::uint64_t bits = 0;      // the value's bit pattern in `type` (a float's 32 bits, an integer's two's complement)
    // What generated CUDA prints for it: a literal for CUDA's constants (no header needed), the
    // macro's own name for the kernel's (NVRTC expands it, as the preamble sees it too).
    std::string spelling;
    // Why a macro of the kernel's cannot be used as a constant ("its value 'f(x)' is not a number
    // literal"); empty when it can. Using such a name is an error that says so.
    std::string unusable;
    std::string defined_where;   // "the preamble" or "NVRTC option '-DNAME=value'"
};

// CUDA's math_constants.h constant of this name, or null.
const NamedConstant* find_cuda_constant(std::string_view name);
// Every name math_constants.h defines (for "did you mean" hints).
std::vector<std::string> cuda_constant_names();

// The object-like macros `#define NAME value` at the start of a preamble's lines and the NVRTC
// options `-DNAME=value`, `-D NAME=value`, `--define-macro=NAME=value` (no value: 1), later
// definitions of a name replacing earlier ones as the preprocessor would have them. A value that
// is a number literal (an optional sign, C's suffixes, true/false) gets that literal's C type;
// anything else is recorded with the reason it cannot be used.
std::vector<NamedConstant> kernel_macros(std::string_view preamble, const std::vector<std::string>& nvrtc_options);

}  // namespace kjit::jit::frontend
