// Spreading an array over several GPUs and bringing the parts back: for a data-parallel call
// (an elementwise kernel, a reduction) on every device.
//
//   std::vector<kjit::Array> parts = kjit::split(x, {kjit::Device::cuda(0), kjit::Device::cuda(1)});
//   for (std::size_t k = 0; k < parts.size(); ++k) ys.push_back(axpb(parts[k]));   // each on its GPU
//   kjit::Array y = kjit::gather(ys, kjit::Device::cuda(0));
//
// split cuts along `axis` as NumPy's array_split does (the first extent % n parts are one longer);
// the part for the array's own device is a view, the others are copies, peer to peer where the
// pair allows it (Array::to). gather is NumPy's concatenate onto one device: parts already there
// are copied by kjit's copy kernel, the others peer to peer into their place.
//
// Streams, one per device (`streams[k]` for devices[k]; empty: each device's legacy default
// stream): a copy waits for the work queued on the streams of both its devices, and work queued
// on them later sees it. gather's `stream` orders the destination's side, `part_streams[k]` the
// side of parts[k] (empty: each part's device's legacy default stream; give the streams that
// made the parts when they are not that one, since a created stream does not wait for it).
#pragma once

#include "kjit/export.hpp"

#include <vector>

#include "kjit/array.hpp"
#include "kjit/device.hpp"
#include "kjit/stream.hpp"

namespace kjit {

KJIT_API std::vector<Array> split(const Array& array, const std::vector<Device>& devices, int axis = 0,
                                  const std::vector<Stream>& streams = {});

KJIT_API Array gather(const std::vector<Array>& parts, Device device, int axis = 0, const Stream& stream = Stream::current(),
                      const std::vector<Stream>& part_streams = {});

}  // namespace kjit
