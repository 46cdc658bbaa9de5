// kjit's copy kernel, and Array::to(), which packs non-contiguous device arrays with it (the rest
// of Array's transfers are runtime/array_transfer.cpp).
#include "jit/kernels/elementwise/copy.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/strided_copy.hpp"

namespace kjit::jit::kernels::elementwise {

const ElementwiseKernel& copy_kernel() {
    static const ElementwiseKernel k("T x", "T y", "y = x", "kjit_copy");
    return k;
}

// Array::to() packs non-contiguous device arrays with it, matmul converts operands with it.
Array pack(const Array& source, DType dtype, const Stream& stream) {
    if (dtype == source.dtype()) return copy_kernel()({source}, CallOptions{stream, -1})[0];
    static const ElementwiseKernel convert("T x", "U y", "y = x", "kjit_convert");
    const Array out = Array::empty(source.shape(), dtype, source.device(), stream);
    convert.launch({source, out}, CallOptions{stream, -1});
    return out;
}

void copy_into(const Array& source, const Array& destination, const Stream& stream) {
    static const ElementwiseKernel convert_into("T x", "U y", "y = x", "kjit_convert");
    convert_into.launch({source, destination}, CallOptions{stream, -1});
}

}  // namespace kjit::jit::kernels::elementwise

namespace kjit {

Array Array::to(Device device, const Stream& stream) const {
    if (!valid()) throw Error("Array::to: the array is invalid (default-constructed)");
    const Device from = this->device();
    if (from.is_cpu()) {
        if (is_c_contiguous()) return from_host(data(), dtype_, shape_, device, stream);
        Array packed = empty(shape_, dtype_, Device::cpu());
        if (size() > 0) detail::gather_strided(data(), shape_, strides_, itemsize(), packed.data());
        return device.is_cpu() ? packed : from_host(packed.data(), dtype_, shape_, device, stream);
    }
    if (device.is_cpu()) {
        Array out = empty(shape_, dtype_, Device::cpu());
        copy_to_host(out.data(), stream);
        return out;
    }
    // Device to device: one copy on the source's stream when the elements are contiguous; other
    // layouts are packed by kjit's copy kernel on the source's device first.
    const Stream s = stream.for_device(from);
    if (!is_c_contiguous()) {
        Array packed = jit::kernels::elementwise::pack(*this, dtype_, s);
        return device == from ? packed : packed.to(device, s);
    }
    Array out = empty(shape_, dtype_, device, s);
    if (out.nbytes() == 0) return out;
    detail::Driver& d = detail::driver_on(from.ordinal());
    KJIT_CU_CHECK(d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(out.data()), reinterpret_cast<CUdeviceptr>(data()), nbytes(),
                                      s.handle()));
    record_stream(s);
    return out;
}

}  // namespace kjit
