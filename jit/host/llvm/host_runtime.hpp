// Functions the host back end's generated code calls: float16/bfloat16 conversions with CUDA's
// rounding, complex arithmetic and functions with the GPU's formulas (templates/complex.cuh,
// compiled here for the host), and the CUDA math functions glibc lacks (rsqrt, sinpi, erfinv,
// normcdf...). Part of libkjit_host; the JIT resolves the names to these addresses.
#pragma once

#include <vector>

namespace kjit::jit::host::llvm {

struct RuntimeSymbol {
    const char* name;
    void* address;
};

// Every helper, by the name generated code declares it with.
const std::vector<RuntimeSymbol>& runtime_symbols();

}  // namespace kjit::jit::host::llvm
