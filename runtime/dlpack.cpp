// DLPack export and import (Array::to_dlpack, Array::from_dlpack), against DLPack 0.6's header.
//
// Both directions share memory and never copy. Strides in DLPack are in elements, as in kjit.
#include <dlpack/dlpack.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/error.hpp"

namespace kjit {
namespace {

// DLPack 0.8 added kDLBool (code 6, 8 bits per element); Debian's 0.6 header lacks it, so the
// value is spelled here. Exporting bool this way is what PyTorch, CuPy and JAX expect.
constexpr std::uint8_t kBoolCode = 6;

DLDataType to_dl_dtype(DType dtype) {
    DLDataType t{};
    t.lanes = 1;
    t.bits = static_cast<std::uint8_t>(dtype.itemsize() * 8);
    switch (dtype.kind()) {
        case DTypeKind::boolean: t.code = kBoolCode; break;
        case DTypeKind::signed_int: t.code = kDLInt; break;
        case DTypeKind::unsigned_int: t.code = kDLUInt; break;
        case DTypeKind::floating: t.code = dtype == DType::bfloat16 ? kDLBfloat : kDLFloat; break;
        case DTypeKind::complex: t.code = kDLComplex; break;
    }
    return t;
}

std::string dl_dtype_to_string(DLDataType t) {
    return "code " + std::to_string(t.code) + ", bits " + std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes);
}

DType from_dl_dtype(DLDataType t) {
    if (t.lanes != 1)
        throw TypeError("from_dlpack: vector dtypes are not supported (" + dl_dtype_to_string(t) +
                        "); kjit needs lanes == 1");
    for (int id = 0; id < DType::count; ++id) {
        const DType dtype{static_cast<DType::Id>(id)};
        const DLDataType candidate = to_dl_dtype(dtype);
        if (candidate.code == t.code && candidate.bits == t.bits) return dtype;
    }
    throw TypeError("from_dlpack: unsupported DLPack dtype (" + dl_dtype_to_string(t) +
                    "); kjit supports bool, int8-64, uint8-64, float16/32/64, bfloat16, complex64/128");
}

std::string device_type_name(int type) {
    switch (type) {
        case kDLCPU: return "kDLCPU";
        case kDLCUDA: return "kDLCUDA";
        case kDLCUDAHost: return "kDLCUDAHost";
        case kDLOpenCL: return "kDLOpenCL";
        case kDLVulkan: return "kDLVulkan";
        case kDLMetal: return "kDLMetal";
        case kDLVPI: return "kDLVPI";
        case kDLROCM: return "kDLROCM";
        case kDLROCMHost: return "kDLROCMHost";
        case kDLExtDev: return "kDLExtDev";
        case kDLCUDAManaged: return "kDLCUDAManaged";
        case 14: return "kDLOneAPI";   // the types below came after DLPack 0.6
        case 15: return "kDLWebGPU";
        case 16: return "kDLHexagon";
        default: return "device type " + std::to_string(type);
    }
}

DLDevice to_dl_device(const Array& a) {
    const Device d = a.device();
    if (d.is_cuda()) return DLDevice{kDLCUDA, d.ordinal()};
    // Pinned memory is host memory the GPU can reach directly; consumers that know CUDA use it
    // without a staging copy, and kDLCUDAHost says so.
    const bool pinned = a.buffer()->kind() == Buffer::Kind::host_pinned;
    return DLDevice{pinned ? kDLCUDAHost : kDLCPU, 0};
}

// The device type as the integer a producer stored. Newer DLPack versions add types beyond the
// range of 0.6's enum, and loading such a value as a DLDeviceType would be undefined behaviour.
int raw_device_type(const DLDevice& d) {
    std::underlying_type_t<DLDeviceType> raw;
    static_assert(sizeof raw == sizeof d.device_type);
    std::memcpy(&raw, &d.device_type, sizeof raw);
    return static_cast<int>(raw);
}

Device from_dl_device(const DLDevice& d) {
    const int type = raw_device_type(d);
    switch (type) {
        case kDLCPU:
        case kDLCUDAHost:  // page-locked host memory: an ordinary host pointer to kjit
            return Device::cpu();
        case kDLCUDA:
            if (d.device_id < 0)
                throw TypeError("from_dlpack: kDLCUDA tensor with negative device id " + std::to_string(d.device_id));
            return Device::cuda(d.device_id);
        default:
            throw TypeError("from_dlpack: unsupported device " + device_type_name(type) +
                            " (kjit accepts kDLCPU, kDLCUDAHost and kDLCUDA)");
    }
}

// What an exported tensor owns: a copy of the array (so the buffer outlives every kjit view)
// and the shape and strides the DLTensor points into.
struct ExportContext {
    Array array;
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
    DLManagedTensor tensor{};
};

void delete_export(DLManagedTensor* self) noexcept {
    delete static_cast<ExportContext*>(self->manager_ctx);
}

// Calls the producer's deleter when the last kjit view of an imported tensor dies. `armed`
// stays false until the import has fully succeeded, so that a throwing from_dlpack leaves the
// tensor (and the duty to delete it) with the caller, as DLPack's Python protocol expects: a
// capsule is only marked as consumed after a successful import.
struct ImportOwner {
    DLManagedTensor* tensor = nullptr;
    bool armed = false;
    ImportOwner() = default;
    ImportOwner(const ImportOwner&) = delete;
    ImportOwner& operator=(const ImportOwner&) = delete;
    ~ImportOwner() {
        if (armed && tensor->deleter != nullptr) tensor->deleter(tensor);
    }
};

// The span of elements a view can reach, relative to element (0,...,0): [low, high]. Throws when
// the extents and strides cannot be represented without overflow.
std::pair<std::int64_t, std::int64_t> reach(const Shape& shape, const Strides& strides) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        std::int64_t span = 0;
        if (__builtin_mul_overflow(shape[i] - 1, strides[i], &span) ||
            __builtin_add_overflow(span < 0 ? low : high, span, span < 0 ? &low : &high))
            throw ShapeError("from_dlpack: shape " + shape_to_string(shape) +
                             " with these strides reaches beyond 2**63 elements");
    }
    return {low, high};
}

}  // namespace

DLManagedTensor* Array::to_dlpack() const {
    if (!valid()) throw TypeError("to_dlpack: the array is empty (default-constructed, no buffer)");
    auto ctx = std::make_unique<ExportContext>();
    ctx->array = *this;
    ctx->shape = shape_;
    ctx->strides = strides_;

    DLTensor& t = ctx->tensor.dl_tensor;
    // data points at element (0,...,0) with byte_offset 0, as PyTorch exports: pointing at the
    // buffer's start would need a byte_offset that cannot express a view whose lowest address
    // lies before element (0,...,0) (negative strides).
    t.data = data();
    t.device = to_dl_device(*this);
    t.ndim = ndim();
    t.dtype = to_dl_dtype(dtype_);
    t.shape = ctx->shape.data();
    // Always given, even when C-contiguous: DLPack 1.0 makes NULL strides invalid.
    t.strides = ctx->strides.data();
    t.byte_offset = 0;
    ctx->tensor.manager_ctx = ctx.get();
    ctx->tensor.deleter = delete_export;
    return &ctx.release()->tensor;
}

Array Array::from_dlpack(DLManagedTensor* tensor) {
    if (tensor == nullptr) throw TypeError("from_dlpack: the DLManagedTensor is null");
    const DLTensor& t = tensor->dl_tensor;
    const Device device = from_dl_device(t.device);
    const DType dtype = from_dl_dtype(t.dtype);
    if (t.ndim < 0) throw ShapeError("from_dlpack: negative ndim " + std::to_string(t.ndim));
    if (t.ndim > 0 && t.shape == nullptr)
        throw ShapeError("from_dlpack: shape is null for a tensor of ndim " + std::to_string(t.ndim));

    Shape shape(t.shape, t.shape + t.ndim);
    for (std::int64_t extent : shape)
        if (extent < 0) throw ShapeError("from_dlpack: negative extent in shape " + shape_to_string(shape));
    Strides strides = t.strides != nullptr ? Strides(t.strides, t.strides + t.ndim) : c_strides(shape);

    const bool empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
    const auto itemsize = static_cast<std::int64_t>(dtype.itemsize());
    if (!empty && t.data == nullptr) throw TypeError("from_dlpack: data is null for a non-empty tensor");
    auto* first = static_cast<unsigned char*>(t.data);  // element (0,...,0) once offset
    if (first != nullptr) first += t.byte_offset;

    // The borrowed buffer covers exactly the elements the view reaches; its start is the lowest
    // address reached, which lies before element (0,...,0) when some stride is negative.
    std::int64_t low = 0;
    std::int64_t high = 0;
    if (!empty) std::tie(low, high) = reach(shape, strides);
    std::int64_t bytes = 0;
    if (!empty && (__builtin_mul_overflow(high - low + 1, itemsize, &bytes)))
        throw ShapeError("from_dlpack: shape " + shape_to_string(shape) + " spans more than 2**63 bytes");

    auto owner = std::make_shared<ImportOwner>();
    owner->tensor = tensor;
    auto buffer = Buffer::borrow(first + low * itemsize, static_cast<std::size_t>(bytes), device, owner);
    Array result = view_of(std::move(buffer), dtype, shape, strides, -low);
    owner->armed = true;
    return result;
}

}  // namespace kjit
