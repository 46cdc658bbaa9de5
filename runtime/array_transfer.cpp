// Allocating arrays and copying them between the host and devices (Array::to(), which needs kjit's
// copy kernel for non-contiguous device arrays, is in jit/kernels/elementwise/copy.cpp).
#include <cstring>

#include "kjit/array.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/capture.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/strided_copy.hpp"

namespace kjit {
namespace {

CUdeviceptr device_address(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

std::size_t checked_bytes(const Shape& shape, DType dtype, const char* what) {
    std::int64_t total = static_cast<std::int64_t>(dtype.itemsize());
    for (std::int64_t e : shape) {
        if (e < 0) throw ShapeError(std::string(what) + ": negative extent in shape " + shape_to_string(shape));
        if (__builtin_mul_overflow(total, e, &total))
            throw ShapeError(std::string(what) + ": shape " + shape_to_string(shape) + " is too large");
    }
    return static_cast<std::size_t>(total);
}

// The span of bytes a view reaches, as [lowest element, highest element] offsets from data().
struct Span {
    std::int64_t lo = 0;
    std::int64_t hi = 0;
};

Span element_span(const Array& a) {
    Span s;
    for (int i = 0; i < a.ndim(); ++i) {
        const std::int64_t reach = (a.shape()[i] - 1) * a.strides()[i];
        (reach < 0 ? s.lo : s.hi) += reach;
    }
    return s;
}

// Copies the elements of device array `src` in C order into host memory `dst`. Contiguous views
// are one copy; others are brought over as the span they cover and gathered on the host.
void device_to_host(const Array& src, void* dst, const Stream& stream) {
    if (src.size() == 0) return;
    const Stream s = stream.for_device(src.device());
    detail::Driver& d = detail::driver_on(src.device().ordinal());
    detail::refuse_under_capture(d, s.handle(), "copying a device array to the host",
                                 "copy it after the capture ends (the graph can write into a device array to copy then)");
    if (src.is_c_contiguous()) {
        KJIT_CU_CHECK(d.cuMemcpyDtoHAsync(dst, device_address(src.data()), src.nbytes(), s.handle()));
        KJIT_CU_CHECK(d.cuStreamSynchronize(s.handle()));  // dst may be pinned: wait for the copy
        return;
    }
    const Span span = element_span(src);
    const auto itemsize = static_cast<std::int64_t>(src.itemsize());
    const std::size_t span_bytes = static_cast<std::size_t>(span.hi - span.lo + 1) * src.itemsize();
    auto staging = Buffer::allocate_host(span_bytes);
    const char* first = static_cast<const char*>(src.data()) + span.lo * itemsize;
    KJIT_CU_CHECK(d.cuMemcpyDtoHAsync(staging->data(), device_address(first), span_bytes, s.handle()));
    KJIT_CU_CHECK(d.cuStreamSynchronize(s.handle()));
    const char* origin = static_cast<const char*>(staging->data()) - span.lo * itemsize;
    detail::gather_strided(origin, src.shape(), src.strides(), src.itemsize(), dst);
}

}  // namespace

Array Array::empty(const Shape& shape, DType dtype, Device device, const Stream& stream, bool pinned) {
    const std::size_t bytes = checked_bytes(shape, dtype, "Array::empty");
    std::shared_ptr<Buffer> buf = device.is_cpu()
                                      ? Buffer::allocate_host(bytes, pinned)
                                      : Buffer::allocate_device(bytes, stream.for_device(Device::cuda(device.ordinal())));
    return Array(std::move(buf), dtype, shape, c_strides(shape), 0);
}

Array Array::from_host(const void* data, DType dtype, const Shape& shape, Device device, const Stream& stream) {
    Array out = empty(shape, dtype, device, stream);
    if (out.nbytes() == 0) return out;
    if (device.is_cpu()) {
        std::memcpy(out.data(), data, out.nbytes());
        return out;
    }
    const Stream s = stream.for_device(out.device());
    detail::Driver& d = detail::driver_on(out.device().ordinal());
    KJIT_CU_CHECK(d.cuMemcpyHtoDAsync(device_address(out.data()), data, out.nbytes(), s.handle()));
    return out;
}

void Array::copy_to_host(void* dst, const Stream& stream) const {
    if (!valid()) throw Error("Array::copy_to_host: the array is invalid (default-constructed)");
    if (size() == 0) return;
    if (is_host()) {
        if (is_c_contiguous())
            std::memcpy(dst, data(), nbytes());
        else
            detail::gather_strided(data(), shape_, strides_, itemsize(), dst);
        return;
    }
    device_to_host(*this, dst, stream);
}

void Array::copy_from_host(const void* src, const Stream& stream) const {
    if (!valid()) throw Error("Array::copy_from_host: the array is invalid (default-constructed)");
    if (!is_c_contiguous())
        throw Error("Array::copy_from_host: " + to_string() + " is not C-contiguous; copy into a contiguous array");
    if (size() == 0) return;
    if (is_host()) {
        std::memcpy(data(), src, nbytes());
        return;
    }
    const Stream s = stream.for_device(device());
    detail::Driver& d = detail::driver_on(device().ordinal());
    KJIT_CU_CHECK(d.cuMemcpyHtoDAsync(device_address(data()), src, nbytes(), s.handle()));
    record_stream(s);
}

}  // namespace kjit
