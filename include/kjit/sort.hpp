// Sorting: the order that sorts a key column, stably.
//
//   kjit::Array order = kjit::argsort(days);   // int64: days[order[0]] <= days[order[1]] <= ...
//
// NumPy's argsort(kind="stable"): equal keys keep their order of index; floats compare as numbers
// (-0.0 equals 0.0), NaN last. Keys: a 1-D array of bool, int8..int64, uint8..uint64, float32 or
// float64, on a GPU or in host memory (sorted there). On the GPU it is a least-significant-digit
// radix sort over the key bits that differ between the keys (8 bits a pass; keys of 800 distinct
// small integers take two passes, arbitrary 64-bit keys eight), with one synchronisation to learn
// which bits differ. Stream-ordered on `stream` (the current one when unset).
#pragma once

#include "kjit/export.hpp"

#include <optional>

#include "kjit/array.hpp"
#include "kjit/stream.hpp"

namespace kjit {

KJIT_API Array argsort(const Array& keys, std::optional<Stream> stream = {});

}  // namespace kjit
