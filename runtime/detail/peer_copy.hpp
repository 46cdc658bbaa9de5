// Copies between two GPUs, ordered on a stream of each: directly (peer to peer) where the pair
// allows it, staged through pinned host memory otherwise (Driver::peer_access decides, once per
// pair). Array::to, kjit::split and kjit::gather move their bytes through here.
#pragma once

#include <cstddef>

#include "kjit/stream.hpp"

namespace kjit::detail {

// Copies `bytes` from `source` on `source_stream`'s device to `destination` on
// `destination_stream`'s device (another one). The copy starts after the work queued so far on
// both streams (the destination's may still be allocating it), and work queued later on either
// stream runs after it. A staged copy (no peer access) returns when it is done. Refused while
// either stream is being captured into a graph.
void copy_between_devices(void* destination, const Stream& destination_stream, const void* source, const Stream& source_stream,
                          std::size_t bytes);

// Work queued on `then` from now on runs after the work queued so far on `first` (an event
// recorded on one, waited for by the other; the streams may be of different devices).
void order_after(const Stream& first, const Stream& then);

}  // namespace kjit::detail
