// kjit::split and kjit::gather (include/kjit/split.hpp): slices moved with Array::to and
// detail::copy_between_devices, placed with kjit's copy kernel where a part's place is not one
// contiguous run of bytes.
#include "kjit/split.hpp"

#include <cstdint>
#include <string>

#include "jit/kernels/elementwise/copy.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/peer_copy.hpp"

namespace kjit {
namespace {

int checked_axis(int axis, int ndim, const char* what) {
    if (ndim == 0) throw ShapeError(std::string(what) + ": a 0-d array has no axis to cut along");
    if (axis < -ndim || axis >= ndim)
        throw ShapeError(std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " + std::to_string(ndim) +
                         " dimensions");
    return axis < 0 ? axis + ndim : axis;
}

// The stream of a device's side: the one given for it, else its legacy default stream.
Stream side_stream(const std::vector<Device>& devices, const std::vector<Stream>& streams, Device device) {
    for (std::size_t k = 0; k < streams.size(); ++k)
        if (devices[k] == device) return streams[k].for_device(device);
    return Stream::legacy_default(device);
}

}  // namespace

std::vector<Array> split(const Array& array, const std::vector<Device>& devices, int axis, const std::vector<Stream>& streams) {
    if (!array.valid()) throw Error("kjit::split: the array is invalid (default-constructed)");
    if (devices.empty()) throw Error("kjit::split: no devices to split " + array.to_string() + " over");
    if (!streams.empty() && streams.size() != devices.size())
        throw Error("kjit::split: " + std::to_string(streams.size()) + " streams for " + std::to_string(devices.size()) +
                    " devices: give one per device, or none");
    for (const Device& d : devices)
        if (!d.is_cuda()) throw Error("kjit::split: " + d.to_string() + " is not a GPU; split spreads an array over GPUs");
    const int ax = checked_axis(axis, array.ndim(), "kjit::split");
    const std::int64_t extent = array.shape()[static_cast<std::size_t>(ax)];
    const auto n = static_cast<std::int64_t>(devices.size());
    const Device from = array.device();
    const Stream source_stream = from.is_cuda() ? side_stream(devices, streams, from) : Stream();
    std::vector<Array> parts;
    parts.reserve(devices.size());
    std::int64_t start = 0;
    for (std::int64_t k = 0; k < n; ++k) {
        const std::int64_t length = extent / n + (k < extent % n ? 1 : 0);
        const Array slice = array.slice(ax, Slice{start, start + length, 1});
        start += length;
        const Device to = devices[static_cast<std::size_t>(k)];
        const Stream dst = streams.empty() ? Stream::legacy_default(to) : streams[static_cast<std::size_t>(k)].for_device(to);
        if (to == from)
            parts.push_back(slice);
        else if (from.is_cpu())
            parts.push_back(slice.to(to, dst));
        else
            parts.push_back(slice.to(to, source_stream, dst));
    }
    return parts;
}

Array gather(const std::vector<Array>& parts, Device device, int axis, const Stream& stream, const std::vector<Stream>& part_streams) {
    if (parts.empty()) throw Error("kjit::gather: no parts to gather");
    if (!part_streams.empty() && part_streams.size() != parts.size())
        throw Error("kjit::gather: " + std::to_string(part_streams.size()) + " part streams for " + std::to_string(parts.size()) +
                    " parts: give one per part, or none");
    if (!device.is_cuda()) throw Error("kjit::gather: " + device.to_string() + " is not a GPU; gather joins parts on a GPU");
    const Array& first = parts.front();
    for (std::size_t k = 0; k < parts.size(); ++k)
        if (!parts[k].valid()) throw Error("kjit::gather: part " + std::to_string(k) + " is invalid (default-constructed)");
    const int ax = checked_axis(axis, first.ndim(), "kjit::gather");
    Shape shape = first.shape();
    shape[static_cast<std::size_t>(ax)] = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const Array& p = parts[k];
        bool fits = p.dtype() == first.dtype() && p.ndim() == first.ndim();
        for (int d = 0; fits && d < p.ndim(); ++d)
            fits = d == ax || p.shape()[static_cast<std::size_t>(d)] == first.shape()[static_cast<std::size_t>(d)];
        if (!fits)
            throw ShapeError("kjit::gather: part " + std::to_string(k) + " is " + p.to_string() + ", part 0 " + first.to_string() +
                             ": parts must have one dtype and the same extents except along axis " + std::to_string(ax));
        if (p.is_host()) throw Error("kjit::gather: part " + std::to_string(k) + " is in host memory; gather joins GPU arrays");
        shape[static_cast<std::size_t>(ax)] += p.shape()[static_cast<std::size_t>(ax)];
    }
    const Stream dst = stream.for_device(device);
    const Array out = Array::empty(shape, first.dtype(), device, dst);
    std::int64_t start = 0;
    for (std::size_t k = 0; k < parts.size(); ++k) {
        const Array& p = parts[k];
        const Stream source = part_streams.empty() ? Stream::legacy_default(p.device()) : part_streams[k].for_device(p.device());
        const std::int64_t length = p.shape()[static_cast<std::size_t>(ax)];
        const Array place = out.slice(ax, Slice{start, start + length, 1});
        start += length;
        if (p.size() == 0) continue;
        if (p.device() == device) {
            if (!(source == dst)) detail::order_after(source, dst);  // the part is made on its stream
            jit::kernels::elementwise::copy_into(p, place, dst);
        } else if (place.is_c_contiguous() && p.is_c_contiguous()) {  // one run of bytes each: one copy
            detail::copy_between_devices(place.data(), dst, p.data(), source, place.nbytes());
            p.record_stream(source);
        } else {
            jit::kernels::elementwise::copy_into(p.to(device, source, dst), place, dst);
        }
    }
    return out;
}

}  // namespace kjit
