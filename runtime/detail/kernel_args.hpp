// The byte layout of a generated kernel's argument struct (jit/codegen/elementwise.cpp prints it: one field
// per parameter in order, then `long long n`), computed with C's layout rules so that the
// launcher can fill it in a reused buffer and hand it to cuLaunchKernel as one parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kjit/dtype.hpp"
#include "templates/launch_layout.cuh"

namespace kjit::detail {

enum class ArgField : unsigned char {
    pointer,  // an array: T*
    value,    // a scalar: T by value
    raw,      // kjit::Raw<T> (RawField below)
};

struct ArgSlot {
    ArgField field;
    std::uint32_t offset;
};

struct ArgsLayout {
    std::vector<ArgSlot> slots;   // per parameter
    std::uint32_t n_offset = 0;   // of `long long n`
    std::uint32_t size = 0;       // sizeof the struct
};

// `types[k]`: the dtype of parameter k's value (for `value` fields); alignment as CUDA gives it
// (kjit::complex<T> is aligned to its size, __half and __nv_bfloat16 to 2).
ArgsLayout args_layout(const std::vector<ArgField>& fields, const std::vector<DType>& types);

// A raw parameter's field: kjit::Raw<T> of templates/launch_layout.cuh, the array with CuPy's
// CArray metadata (the element type does not change the layout).
using RawField = kjit::Raw<const char>;

}  // namespace kjit::detail
