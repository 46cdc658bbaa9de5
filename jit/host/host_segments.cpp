// The runs of equal neighbouring keys of a host array (jit/kernels/ops/segments.hpp): one pass on the calling
// thread, which is as fast as the memory for the sizes a key column has, and needs no device.
#include <cstring>

#include "jit/kernels/ops/segments.hpp"
#include "kjit/error.hpp"

namespace kjit::detail {
namespace {

template <class T>
Segments runs(const Array& keys) {
    const std::int64_t n = keys.size(), stride = keys.strides()[0];
    const T* k = static_cast<const T*>(keys.data());
    std::vector<std::int64_t> starts;
    for (std::int64_t e = 0; e < n; ++e)
        if (e == 0 || !(k[e * stride] == k[(e - 1) * stride])) starts.push_back(e);  // NaN != NaN: a run of its own
    Segments out;
    out.count = static_cast<std::int64_t>(starts.size());
    out.offsets = Array::empty({out.count + 1}, DType::int64, Device::cpu());
    out.keys = Array::empty({out.count}, keys.dtype(), Device::cpu());
    auto* offsets = static_cast<std::int64_t*>(out.offsets.data());
    auto* first = static_cast<T*>(out.keys.data());
    for (std::int64_t s = 0; s < out.count; ++s) {
        offsets[s] = starts[static_cast<std::size_t>(s)];
        first[s] = k[starts[static_cast<std::size_t>(s)] * stride];
    }
    offsets[out.count] = n;
    return out;
}

}  // namespace

Segments segments_of_sorted_keys_on_host(const Array& keys) {
    switch (keys.dtype().id()) {
        case DType::bool_: return runs<bool>(keys);
        case DType::int8: return runs<std::int8_t>(keys);
        case DType::uint8: return runs<std::uint8_t>(keys);
        case DType::int16: return runs<std::int16_t>(keys);
        case DType::uint16: return runs<std::uint16_t>(keys);
        case DType::int32: return runs<std::int32_t>(keys);
        case DType::uint32: return runs<std::uint32_t>(keys);
        case DType::int64: return runs<std::int64_t>(keys);
        case DType::uint64: return runs<std::uint64_t>(keys);
        case DType::float32: return runs<float>(keys);
        case DType::float64: return runs<double>(keys);
        default: throw TypeError("segments_of_sorted_keys: no host version for keys of dtype " + std::string(keys.dtype().name()));
    }
}

}  // namespace kjit::detail
