// ElementwiseKernel: a kernel written as a C-like string, applied element by element, in CuPy's
// form: ElementwiseKernel("T x, T a, T b", "T y", "y = a * x + b", "axpb").
//
// Construction is cheap and checks nothing; check(), source() and compile() parse and type-check
// the strings (errors: ParseError and TypeError with the string's name, line, column and a caret)
// and generate CUDA for a binding of the type placeholders. Objects are immutable and safe to use
// from many threads.
//
// Calling it launches it: `Array y = axpb({x, 2.0f, b});` binds T from the arrays (outputs first,
// then inputs, as CuPy does), converts scalars to their parameter's type, broadcasts the arrays
// (NumPy's rules; outputs given take part, as in NumPy's ufuncs, but each must have the broadcast
// shape itself), allocates the outputs not given, and launches on the stream (the thread's
// current one by default) without waiting. The first call for a new combination of dtypes
// compiles (or finds in the kernel cache) and loads the module; later calls find it in a table
// of the kernel object, pack the arguments in a reused buffer and launch.
//
// In place and overlap: an output may be one of the inputs (the same elements in the same
// layout): each element is read before it is written. An input that overlaps an output in any
// other way (a shifted or reversed view of it, say) is copied to a temporary first, so the result
// is what it would be had the inputs been copied. Outputs that overlap each other, or an output
// that is a broadcast view (one element stands for many), are refused. `raw` parameters are
// indexed freely by the kernel, so kjit cannot judge their overlaps: that is the caller's part.
#pragma once

#include "kjit/export.hpp"

#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "kjit/array.hpp"
#include "kjit/binary.hpp"
#include "kjit/device.hpp"
#include "kjit/dtype.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/module.hpp"
#include "kjit/options.hpp"
#include "kjit/stream.hpp"

namespace kjit {

namespace jit {
struct ElementwiseKernelAccess;  // the kernel's definition without its table of calls
}

// Parses "T=float32,U=int64" (spaces allowed). Throws TypeError naming the bad item.
KJIT_API TypeBinding parse_type_binding(const std::string& text);
// "T=float32,U=int64": what parse_type_binding reads.
KJIT_API std::string format_type_binding(const TypeBinding& types);

// What a call returns: its outputs, in order. Converts to an Array when there is exactly one.
class KJIT_API Outputs {
public:
    Outputs() = default;
    explicit Outputs(std::vector<Array> arrays) : arrays_(std::move(arrays)) {}
    std::size_t size() const noexcept { return arrays_.size(); }
    const Array& operator[](std::size_t k) const { return arrays_.at(k); }
    auto begin() const noexcept { return arrays_.begin(); }
    auto end() const noexcept { return arrays_.end(); }
    // The only output; throws kjit::Error when there are several or none.
    operator Array() const;  // NOLINT(google-explicit-constructor)

private:
    std::vector<Array> arrays_;
};

class KJIT_API ElementwiseKernel {
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
    // finds it in the kernel cache (kjit/cache.hpp): the module of every variant, to inspect
    // (`kjit compile`). Throws NoDeviceError when it is in no cache and there is no NVRTC. Calls do
    // not load this module: a call compiles (or finds) the program of the one variant it launches
    // (a fraction of the NVRTC time of all seven), and `kjit precompile` builds those programs,
    // one per variant.
    // Binary::entry_points names the variants: contiguous32/64 (vector loads), strided32/64 (any
    // strides), rows32 (rows whose last dimension is contiguous or broadcast everywhere), tiled32
    // (2-D with transposed inputs, through shared memory), small32 (one element per thread, calls
    // of at most 65536 elements); rows32 and tiled32 only when the kernel has a use for them.
    Binary compile(const TypeBinding& types, const std::string& arch = {}) const;

    // The kernel compiled for `device` (or found in a cache) and loaded there: the cubin for the
    // device's architecture, else cached PTX of an older one compiled by the driver, whose result is
    // then cached under the device's architecture.
    Module load(const TypeBinding& types, Device device = Device()) const;

    // Launches the kernel on `args`: its inputs, then optionally all of its outputs (allocated on
    // the inputs' device, C order, when not given). Returns the outputs. Errors: TypeError (wrong
    // argument count, dtypes that do not bind or convert), ShapeError (shapes that do not
    // broadcast, an output whose shape is not the broadcast shape, overlapping outputs),
    // kjit::Error for host arrays or arrays on different devices, or a block_size out of range;
    // CompileError on the first call of a binding.
    Outputs operator()(std::span<const KernelArg> args, const CallOptions& options = {}) const;
    Outputs operator()(std::initializer_list<KernelArg> args, const CallOptions& options = {}) const {
        return (*this)(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // As operator(), with every output given, returning nothing: a warm call allocates no host
    // memory at all.
    void launch(std::span<const KernelArg> args, const CallOptions& options = {}) const;
    void launch(std::initializer_list<KernelArg> args, const CallOptions& options = {}) const {
        launch(std::span<const KernelArg>(args.begin(), args.size()), options);
    }

    // Makes ready, without launching, everything a later call with arguments of these kinds and
    // dtypes on this device needs: its plan, and the module of every variant a call may pick
    // (contiguous, strided, 64-bit indices...), compiled or found in the cache and loaded. The
    // arguments are the call's own, or any of the same kinds and dtypes, outputs given or left out
    // as the call will (shapes do not matter). A call inside a Graph capture then loads nothing.
    void prepare(std::span<const KernelArg> args, const CallOptions& options = {}) const;
    void prepare(std::initializer_list<KernelArg> args, const CallOptions& options = {}) const {
        prepare(std::span<const KernelArg>(args.begin(), args.size()), options);
    }

private:
    friend struct jit::ElementwiseKernelAccess;
    struct Spec;
    explicit ElementwiseKernel(std::shared_ptr<const Spec> spec) : spec_(std::move(spec)) {}
    std::shared_ptr<const Spec> spec_;
};

}  // namespace kjit
