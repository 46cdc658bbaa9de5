// Checked atomics (issue 36): atomic_add(t[k], v), atomic_min, atomic_max, atomic_exch and
// atomic_cas(t[k], expected, v) on an element of a raw parameter the kernel may write (a raw
// output, or a `_non_const` raw input), for the dtypes the hardware updates atomically. Each
// returns the element's old value, as CUDA's atomicAdd & co. do. atomic_min and atomic_max of
// float32 and float64 are fmin and fmax (a NaN never replaces a number, a number replaces a NaN),
// a compare-and-swap loop on the GPU, which has no float atomic min. The host back end runs them
// as LLVM atomic instructions, so histograms and scatters give the GPU's results there too.
#pragma once

#include <string>
#include <string_view>

#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

enum class AtomicOp { add, min, max, exch, cas };

struct AtomicFunction {
    std::string_view name;
    AtomicOp op;
    int arity;  // the element, then the values (cas: expected, then desired)
};

// The entry for `name`, or null when it is not an atomic.
const AtomicFunction* find_atomic_function(std::string_view name) noexcept;

// Why `f` cannot update an element of dtype `t` atomically; empty when it can.
std::string atomic_unsupported(const AtomicFunction& f, DType t);

}  // namespace kjit::jit::frontend
