// Host-side gather of a strided view into C order, for copies of non-contiguous arrays.
#pragma once

#include <cstddef>

#include "kjit/array.hpp"

namespace kjit::detail {

// Copies the elements of the view (origin = address of element (0,...,0); strides in elements,
// any sign) into `dst` in C order. Every extent must be positive.
void gather_strided(const void* origin, const Shape& shape, const Strides& strides, std::size_t itemsize, void* dst);

}  // namespace kjit::detail
