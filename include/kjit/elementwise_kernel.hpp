// ElementwiseKernel: a kernel written as a C-like string, applied element by element, in CuPy's
// form: ElementwiseKernel("T x, T a, T b", "T y", "y = a * x + b", "axpb").
//
// Construction is cheap and checks nothing; check(), source() and compile() parse and type-check
// the strings (errors: ParseError and TypeError with the string's name, line, column and a caret)
// and generate CUDA for a binding of the type placeholders. Objects are immutable and safe to use
// from many threads. Launching on arrays comes with the launcher.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "kjit/device.hpp"
#include "kjit/dtype.hpp"

namespace kjit {

// Type placeholder ("T") to dtype.
using TypeBinding = std::map<std::string, DType>;

// Parses "T=float32,U=int64" (spaces allowed). Throws TypeError naming the bad item.
TypeBinding parse_type_binding(const std::string& text);
// "T=float32,U=int64": what parse_type_binding reads.
std::string format_type_binding(const TypeBinding& types);

struct KernelOptions {
    // Raw CUDA placed before the kernel: helper functions it declares become callable from the
    // operation. An explicit opt-in: kjit does not check it.
    std::string preamble;
    // Extra NVRTC options ("-lineinfo", "--use_fast_math"...).
    std::vector<std::string> nvrtc_options;
};

// What one compilation produced.
struct KernelBinary {
    std::string arch;                 // "sm_90", or "compute_90" when only PTX could be made
    std::vector<unsigned char> cubin;  // empty when PTX only
    std::string ptx;
    std::string log;                  // NVRTC's warnings when this call compiled, usually empty
    std::string source;               // the generated CUDA
    double compile_ms = 0;            // NVRTC's time when this call compiled; 0 when the cache had it
    // Entry points in the module, by variant.
    std::string contiguous32, contiguous64, strided32, strided64;
};

// A compiled kernel's module loaded on one device, and its entry points.
struct KernelModule {
    std::shared_ptr<void> module;     // keeps the CUmodule loaded
    CUfunction contiguous32 = nullptr, contiguous64 = nullptr, strided32 = nullptr, strided64 = nullptr;
    std::string arch;                 // what the loaded cubin was built for
    bool compiled_from_ptx = false;   // the driver compiled cached PTX for this GPU (and kjit cached the result)
};

class ElementwiseKernel {
public:
    ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                      std::string name = "kernel", KernelOptions options = {});

    const std::string& name() const noexcept;
    const std::string& in_params() const noexcept;
    const std::string& out_params() const noexcept;
    const std::string& operation() const noexcept;
    const KernelOptions& options() const noexcept;

    // Parses and checks the kernel. With a type for every placeholder, also the rules that
    // depend on types (`%` on floats, bit operations, indices...); without, those wait.
    void check(const TypeBinding& types = {}) const;
    // The placeholders the parameters use ("T", "U"), sorted.
    std::vector<std::string> placeholders() const;
    // The CUDA source for a complete binding.
    std::string source(const TypeBinding& types) const;
    // Compiles for `arch` ("sm_90"; empty: KJIT_ARCH, else the current device, else sm_80), or
    // finds it in the kernel cache (kjit/cache.hpp): in memory, on disk, or, in a process without
    // NVRTC, in a folder a precompile filled. Throws NoDeviceError when there is neither.
    KernelBinary compile(const TypeBinding& types, const std::string& arch = {}) const;

    // The kernel compiled for `device` (or found in a cache) and loaded there: the cubin for the
    // device's architecture, else cached PTX of an older one compiled by the driver, whose result is
    // then cached under the device's architecture.
    KernelModule load(const TypeBinding& types, Device device = Device()) const;

private:
    struct Spec;
    std::shared_ptr<const Spec> spec_;
};

}  // namespace kjit
