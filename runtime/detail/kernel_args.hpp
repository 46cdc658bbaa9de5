// The byte layout of a generated kernel's argument struct (jit/codegen.cpp prints it: one field
// per parameter in order, then `long long n`), computed with C's layout rules so that the
// launcher can fill it in a reused buffer and hand it to cuLaunchKernel as one parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kjit/dtype.hpp"

namespace kjit::detail {

enum class ArgField : unsigned char {
    pointer,  // an array: T*
    value,    // a scalar: T by value
    raw,      // kjit::Raw<T>: {T* data; long long size;}
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

// The size and alignment of kjit::Layout<arrays> (templates/elementwise.cuh).
constexpr std::size_t layout_struct_size(int arrays) { return 8 + 16 * 8 + static_cast<std::size_t>(arrays) * 16 * 8; }

}  // namespace kjit::detail
