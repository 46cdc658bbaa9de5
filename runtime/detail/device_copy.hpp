// A C-ordered copy of a device array of any layout, possibly converted to another dtype, made by a
// kernel on its device. The runtime cannot generate kernels (jit/ does, and jit/ depends on
// runtime/, not the other way), so the elementwise layer registers its kernel here when the
// library loads.
#pragma once

#include "kjit/dtype.hpp"

namespace kjit {
class Array;
class Stream;
}  // namespace kjit

namespace kjit::detail {

using DeviceCopy = Array (*)(const Array& source, DType dtype, const Stream& stream);

// Writes `source` into `destination` (same shape, any layouts, dtype converted), in stream order.
using DeviceCopyInto = void (*)(const Array& source, const Array& destination, const Stream& stream);

void register_device_copy(DeviceCopy copy, DeviceCopyInto copy_into) noexcept;
// Null until registered.
DeviceCopy device_copy() noexcept;
DeviceCopyInto device_copy_into() noexcept;

}  // namespace kjit::detail
