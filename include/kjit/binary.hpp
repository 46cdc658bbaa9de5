// Binary: what one compilation of a kernel or a raw module produced, from NVRTC or a kernel cache
// (ElementwiseKernel::compile, ReductionKernel::compile, RawModule::compile; `kjit compile`).
#pragma once

#include "kjit/export.hpp"

#include <map>
#include <string>
#include <vector>

namespace kjit {

struct KJIT_API Binary {
    std::string arch;                  // "sm_90", or "compute_90" when only PTX could be made
    std::vector<unsigned char> cubin;  // empty when PTX only
    std::string ptx;
    std::string log;                   // NVRTC's warnings when this call compiled, usually empty
    std::string source;                // the CUDA compiled: kjit's generated code, or the raw module's
    double compile_ms = 0;             // NVRTC's time when this call compiled; 0 when a cache had it
    // The module's entry points by name, each with the symbol to launch: an elementwise kernel's
    // variants ("contiguous32", "small32", ...), a reduction's strategies ("full32", "rows_warp64",
    // ...), a raw module's name expressions ("scale<float, 4>", with its mangled name).
    std::map<std::string, std::string> entry_points;

    // The symbol of entry point `name`; kjit::Error listing the entry points when there is none.
    const std::string& entry_point(const std::string& name) const;
};

}  // namespace kjit
