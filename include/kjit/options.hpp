// Options of kjit's kernels: KernelOptions, given when an ElementwiseKernel or a ReductionKernel
// is made, and CallOptions (ReduceOptions for reductions, which extends it), given per call.
#pragma once

#include "kjit/export.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kjit/stream.hpp"

namespace kjit {

struct KJIT_API KernelOptions {
    // Raw CUDA placed before the kernel: helper functions it declares become callable from the
    // kernel's strings. An explicit opt-in: kjit does not check it.
    std::string preamble{};
    // Extra NVRTC options ("-lineinfo", "--use_fast_math"...), after kjit's own.
    std::vector<std::string> nvrtc_options{};
    // Elementwise kernels only (a reduction given them is an Error): CuPy's loop_prep and
    // after_loop, statements in the kernel language that each thread runs once before its elements
    // and once after them (on host arrays: once per chunk of elements). The variables loop_prep
    // declares at its top level are the thread's own, seen by the operation (which may update
    // them) and by after_loop. Both see raw parameters, `n` and constants, not the element
    // parameters or `i`.
    std::string loop_prep{};
    std::string after_loop{};
    // Reductions only (an elementwise kernel given it is an Error): the type of the partial
    // results, a dtype ("float64") or a placeholder ("T"); empty: the type of the first output, as
    // in CuPy.
    std::string reduce_type{};
};

struct KJIT_API CallOptions {
    // Where the kernel runs; none: the calling thread's current stream (kjit/stream.hpp).
    std::optional<Stream> stream{};
    // Elementwise kernels: the number of elements (`n`) when no argument is a non-raw array; -1:
    // from the arrays. A reduction takes its sizes from the arrays: any other value is an Error.
    std::int64_t size = -1;
    // Elementwise kernels: threads per block, as CuPy's block_size=; 0: kjit's choice (256). At
    // most the kernel's own limit (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 256, the generated
    // kernels' launch bounds, which leave each thread room for registers) and the device's; above
    // it, or below 0, the call throws kjit::Error naming the value and the limit. A size other than
    // 256 never takes the tiled variant (written for 256-thread blocks). On the host back end a
    // value below 0 is refused the same way and any other is ignored. A reduction chooses its own
    // blocks: any value but 0 is an Error.
    int block_size = 0;
};

// A reduction's call: `{.axis = std::vector<int>{1}}`. The stream is CallOptions': `o.stream = s`,
// or `ReduceOptions{{s}, axis, keepdims}`. (GCC 12 at -O2 -Wall may warn that the left-out
// CallOptions "may be used uninitialized": a false warning, C++20 value-initialises it.)
struct KJIT_API ReduceOptions : CallOptions {
    // The axes reduced, NumPy's way (negative ones count from the end); none: every axis; an
    // empty list: none (each output is post(map(one element))).
    std::optional<std::vector<int>> axis{};
    // Keep the reduced axes in the outputs' shape, with extent 1.
    bool keepdims = false;
};

}  // namespace kjit
