// Segments of sorted keys: where each run of equal neighbouring keys starts, computed on the GPU.
// The first step of a reduce-by-key ("readings with a date column, reduced to min, max and mean per
// day"): the offsets are what a segmented reduction takes, the run keys label its results.
//
// Internal (kjit::detail): kjit::reduce_by_key is built on it. The kernels are
// templates/segments.cuh, one RawModule compiled (or found in the kernel cache) once per process
// and loaded once per device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/dtype.hpp"
#include "kjit/raw_kernel.hpp"
#include "kjit/stream.hpp"

namespace kjit::detail {

struct Segments {
    // int64, count + 1 elements, C-contiguous: offsets[s] is the index (in `keys`) of the first
    // element of run s, offsets[count] = n. Run s is [offsets[s], offsets[s + 1]), never empty.
    Array offsets;
    // The key of each run (its first element's), `count` elements of the input's dtype, C-contiguous.
    Array keys;
    // The number of runs: 0 when n == 0, else between 1 and n.
    std::int64_t count = 0;
};

// The runs of equal neighbouring elements of `keys`, a 1-D device array of any stride and of dtype
// bool, int8..int64, uint8..uint64, float32 or float64. The keys need not be sorted: a key that
// comes back after another is a new run, so sorting (or any grouping of equal keys) is what makes
// runs the groups.
//
// Equality: integers by value; bool by truth; floats by ==, so -0.0 and 0.0 are one run (keyed by
// whichever comes first) and every NaN is a run of its own (NaN != NaN).
//
// Stream-ordered on `stream` (taken as the keys' device's stream when it names no device), with one
// synchronisation: the number of runs is copied to the host to size the outputs. n == 0 launches
// nothing and does not synchronise: count 0, offsets = [0], keys empty.
//
// Keys in host memory are grouped on the host (jit/host/host_segments.cpp), with no device.
//
// Throws ShapeError when keys is not 1-D, TypeError for float16, bfloat16 and complex dtypes, Error
// for an invalid array; each message names the argument `keys`.
Segments segments_of_sorted_keys(const Array& keys, const Stream& stream);

// The same into outputs given at their largest, without waiting for the GPU (so it can be captured
// into a graph): offsets (int64, n + 1), run_keys (the keys' dtype, n) and count (int64, one
// element), each C-contiguous on the keys' device. offsets[count .. n] are n (empty runs past the
// last); run_keys past count are left as they were. n == 0: offsets = [0], count = 0. Throws
// ShapeError or TypeError naming the output that does not fit.
void segments_of_sorted_keys_into(const Array& keys, const Array& offsets, const Array& run_keys, const Array& count,
                                  const Stream& stream);

// The same for keys in host memory (already checked).
Segments segments_of_sorted_keys_on_host(const Array& keys);

// The kernels of templates/segments.cuh, as RawKernels, so that each is loaded once per device and
// a call is a warm launch.
class SegmentKernels {
public:
    explicit SegmentKernels(RawModule module);

    const RawModule& module() const noexcept { return module_; }
    // The per-block count and the write kernel for keys of dtype `t` (one of those listed above).
    const RawKernel& count(DType t) const;
    const RawKernel& write(DType t) const;
    const RawKernel& scan() const noexcept { return scan_; }
    const RawKernel& pad() const noexcept { return pad_; }

private:
    RawModule module_;
    RawKernel scan_, pad_;
    std::vector<RawKernel> count_;  // by kernel suffix (segments.cpp)
    std::vector<RawKernel> write_;
};

// The block sizes the kernels are compiled for, defined here and prepended to the template as
// macros, so that the launches and the kernels cannot disagree.
inline constexpr unsigned kSegmentThreads = 256;      // per block of the count and write kernels
inline constexpr unsigned kSegmentItems = 8;          // keys per thread
inline constexpr std::int64_t kSegmentTile = kSegmentThreads * kSegmentItems;  // keys per block
inline constexpr unsigned kSegmentScanThreads = 1024;  // the scan's one block (32 warps)

// The module of templates/segments.cuh with the options kjit compiles it with; `extra` is appended
// to the source (tests use it to make a module of another cache key).
RawModule segments_module(const std::string& extra = {});

// The process's kernels (made on first use).
const SegmentKernels& segment_kernels();

// segments_of_sorted_keys(_into) with the given kernels (tests run them on a pretend driver).
Segments segments_of_sorted_keys(const Array& keys, const Stream& stream, const SegmentKernels& kernels);
void segments_of_sorted_keys_into(const Array& keys, const Array& offsets, const Array& run_keys, const Array& count,
                                  const Stream& stream, const SegmentKernels& kernels);

}  // namespace kjit::detail
