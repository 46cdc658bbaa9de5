// How a kernel call's arguments bind the kernel's parameters: which placeholder gets which dtype,
// which inputs are scalars, which array inputs are converted as they are loaded. CuPy's rules,
// with kjit's errors: outputs bind first, then array inputs in order; an array input of another
// dtype than its parameter is accepted when NumPy would cast it safely (the kernel converts each
// element as it loads it); a scalar takes its parameter's type, and binds a placeholder only when
// no array does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/frontend/params.hpp"
#include "kjit/dtype.hpp"

namespace kjit::jit::frontend {

// What a call needs to know about a kernel's parameters, once per kernel.
struct CallSignature {
    std::vector<Param> params;   // inputs, then outputs
    int inputs = 0;
    int outputs = 0;
    bool has_raw = false;
};

// Parses a kernel's parameter lists (its `in` and `out` strings; elementwise and reduction kernels
// alike). The body is checked with the binding's types when a call plans its launch (whether it
// reads `i` is known then), or was when a plan note was made.
CallSignature call_signature(std::string_view in_params, std::string_view out_params);

// One argument as the binder sees it.
struct ArgumentKind {
    enum Kind : unsigned char { array, scalar, absent } kind = absent;  // absent: an output to allocate
    DType dtype;
};

struct BoundCall {
    TypeBinding types;
    std::vector<DType> param_types;                 // each parameter's type
    std::vector<bool> scalar;                       // passed by value
    std::vector<std::optional<DType>> storage;      // an array input's dtype when it differs
};

// Throws TypeError naming the kernel and the parameter.
BoundCall bind_call(const CallSignature& sig, const std::string& kernel_name, const ArgumentKind* args, std::size_t count);

}  // namespace kjit::jit::frontend
