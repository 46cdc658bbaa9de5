// kjit's copy kernel, and Array::to(), which packs non-contiguous device arrays with it (the rest
// of Array's transfers are runtime/array_transfer.cpp).
#include "jit/kernels/elementwise/copy.hpp"

#include "kjit/error.hpp"
#include "runtime/detail/check.hpp"
#include "runtime/detail/driver.hpp"
#include "runtime/detail/peer_copy.hpp"
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
    if (device != from) {
        // Another GPU: `stream` orders whichever side it belongs to, the other side's default.
        if (stream.device() == device) return to(device, Stream::legacy_default(from), stream.for_device(device));
        return to(device, stream.for_device(from), Stream::legacy_default(device));
    }
    // The same device: one copy on the stream when the elements are contiguous; other layouts
    // are packed by kjit's copy kernel.
    const Stream s = stream.for_device(from);
    if (!is_c_contiguous()) return jit::kernels::elementwise::pack(*this, dtype_, s);
    Array out = empty(shape_, dtype_, device, s);
    if (out.nbytes() == 0) return out;
    detail::Driver& d = detail::driver_on(from.ordinal());
    KJIT_CU_CHECK(d.cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(out.data()), reinterpret_cast<CUdeviceptr>(data()), nbytes(),
                                      s.handle()));
    record_stream(s);
    return out;
}

Array Array::to(Device device, const Stream& stream, const Stream& destination_stream) const {
    if (!valid()) throw Error("Array::to: the array is invalid (default-constructed)");
    const Device from = this->device();
    if (!from.is_cuda() || !device.is_cuda() || device == from)
        throw Error("Array::to: a destination stream is for copies between two GPUs, not from " + from.to_string() + " to " +
                    device.to_string() + " (" + to_string() + "): give one stream");
    const Stream source_stream = stream.for_device(from), dst_stream = destination_stream.for_device(device);
    // Contiguous first, on the source's device (kjit's copy kernel), so that one copy moves it.
    const Array packed = is_c_contiguous() ? *this : jit::kernels::elementwise::pack(*this, dtype_, source_stream);
    Array out = empty(shape_, dtype_, device, dst_stream);
    if (out.nbytes() == 0) return out;
    detail::copy_between_devices(out.data(), dst_stream, packed.data(), source_stream, out.nbytes());
    packed.record_stream(source_stream);
    return out;
}

}  // namespace kjit
