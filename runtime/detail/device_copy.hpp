// A C-ordered copy of a device array of any layout, made by a kernel on its device. The runtime
// cannot generate kernels (jit/ does, and jit/ depends on runtime/, not the other way), so the
// elementwise layer registers its copy kernel here when the library loads.
#pragma once

namespace kjit {
class Array;
class Stream;
}  // namespace kjit

namespace kjit::detail {

using DeviceCopy = Array (*)(const Array& source, const Stream& stream);

void register_device_copy(DeviceCopy copy) noexcept;
// Null until registered.
DeviceCopy device_copy() noexcept;

}  // namespace kjit::detail
