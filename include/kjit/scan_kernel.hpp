// ScanKernel: a scan (prefix combination: a cumulative sum, a running max) written as strings,
// in the form of a ReductionKernel without map and post:
//
//   kjit::ScanKernel running_max("T x", "T y", "a > b ? a : b", "-CUDART_INF_F", "running_max");
//   kjit::Array m = running_max({x}, {.axis = 1});   // along each row
//
// - in_params: one array input; out_params: one output, of the input's shape (or 1-D when the
//   input is scanned flattened).
// - scan_expr: an expression in `a` and `b`, both of the scan type, combining two partial results,
//   `a` the earlier one. It must be associative; it need not be commutative (kjit never reorders
//   elements, it only groups them).
// - identity: an expression of the scan type that scan_expr leaves unchanged; required (an
//   exclusive scan starts from it, and a segment that is empty or a tile past the end pads with it).
// - options.reduce_type (KernelOptions): the scan type, a dtype or a placeholder; empty: the
//   output's type, as for a reduction (the input is converted to it as loaded, the result to the
//   output's type as stored).
//
// A running value other than the input (a running mean, the index of the running maximum) is a
// scan with map and post, as a ReductionKernel has: ScanKernel::mapped(in, out, map, scan_expr,
// post, identity, name, options). map makes the value of one element from the input and `i` (its
// index along the scanned axis, from 0; in a segmented scan, in the whole input), post writes the
// output from `a` (and `i`); the scan type may then be a struct
// (options.reduce_type "struct { float32 v; int64 at; }", as in a reduction, 64 bytes at most):
//
//   KernelOptions o;
//   o.reduce_type = "struct { T v; int64 at; }";
//   auto argmax_so_far = kjit::ScanKernel::mapped("T x", "int64 y", "{x, i}", "b.v > a.v ? b : a",
//                                                 "y = a.at", "{-CUDART_INF_F, -1}", "argmax_so_far", o);
//
// Output j of an inclusive scan is x[0] . x[1] ... x[j] (`.` the scan expression); of an
// exclusive one identity . x[0] ... x[j-1]. On the GPU a scan is one pass (the decoupled look-back
// of templates/scan.cuh: every element read once and written once). Integer scans are exact;
// floating-point scans group elements in an order that depends on timing across tiles of
// thousands of elements, so their last bits may differ from run to run (as CUB's do). On host
// arrays a scan runs on the CPU through the host back end, each row in order.
//
// Construction is cheap and checks nothing; check(), source() and compile() parse and type-check
// the strings (errors name "in", "out", "map", "reduce" (the scan expression), "post", "identity"
// or "reduce_type"). Objects are immutable and safe to use from many threads.
#pragma once

#include "kjit/export.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjit/elementwise_kernel.hpp"
#include "kjit/reduction_kernel.hpp"

namespace kjit {

// A scan's call: `{.axis = 1}`, `{.exclusive = true}`. The stream is CallOptions'.
struct KJIT_API ScanOptions : CallOptions {
    // The axis scanned (negative counts from the end); none: the input flattened in C order, the
    // output 1-D (NumPy's cumsum(axis=None)).
    std::optional<int> axis{};
    // Output j combines the elements before j only, starting from the identity.
    bool exclusive = false;
};

class KJIT_API ScanKernel {
public:
    ScanKernel(std::string in_params, std::string out_params, std::string scan_expr, std::string identity,
               std::string name = "scan", KernelOptions options = {});

    // A scan whose values are made by map and written by post (above). An empty map is the input
    // itself, an empty post "OUT = a".
    static ScanKernel mapped(std::string in_params, std::string out_params, std::string map_expr, std::string scan_expr,
                             std::string post_expr, std::string identity, std::string name = "scan", KernelOptions options = {});

    const std::string& name() const noexcept;
    const std::string& in_params() const noexcept;
    const std::string& out_params() const noexcept;
    const std::string& scan_expr() const noexcept;
    const std::string& identity() const noexcept;
    const KernelOptions& options() const noexcept;
    const std::string& map_expr() const noexcept;   // empty unless made by mapped()
    const std::string& post_expr() const noexcept;  // empty unless made by mapped()

    // Parses and checks every piece (with a type for every placeholder, the typed rules too).
    void check(const TypeBinding& types = {}) const;
    // The placeholders the parameters and the scan type use, sorted.
    std::vector<std::string> placeholders() const;
    // The CUDA source for a complete binding.
    std::string source(const TypeBinding& types) const;
    // Compiles for `arch` (as ReductionKernel::compile), or finds it in the kernel cache: the module
    // of every entry point. Binary::entry_points: "scan32", "scan64", "scan_segments32",
    // "scan_segments64" (templates/scan.cuh); a call compiles the one it launches.
    Binary compile(const TypeBinding& types, const std::string& arch = {}) const;

    // Scans `args`: the input, then optionally the output (allocated on the input's device, C
    // order, when not given; a given one must have the output's shape exactly and may be the input
    // itself: a scan in place). Errors: TypeError (argument count, dtypes), ShapeError (a bad axis,
    // an output of the wrong shape or partly overlapping the input), kjit::Error for arrays on
    // several devices; CompileError on the first call of a binding.
    Outputs operator()(std::span<const KernelArg> args, const ScanOptions& options = {}) const;
    Outputs operator()(std::initializer_list<KernelArg> args, const ScanOptions& options = {}) const {
        return (*this)(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // As operator(), with the output given, returning nothing.
    void launch(std::span<const KernelArg> args, const ScanOptions& options = {}) const;
    void launch(std::initializer_list<KernelArg> args, const ScanOptions& options = {}) const {
        launch(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // As ReductionKernel::prepare: the plan of a call with arguments of these kinds and dtypes, and
    // every entry point's module loaded, so that a later call (under stream capture, say) loads
    // nothing. Its workspace is still made by its first call on a stream.
    void prepare(std::span<const KernelArg> args, const ScanOptions& options = {}) const;
    void prepare(std::initializer_list<KernelArg> args, const ScanOptions& options = {}) const {
        prepare(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // A segmented scan of a 1-D input: the scan restarts at every element whose index is one of
    // `offsets` (a 1-D integer array on the input's device, sorted; repeats are empty segments;
    // CuPy-style segment offsets [0, ..., n] work as they are). The output has the input's shape.
    // options.axis must be unset.
    Outputs scan_segments(std::span<const KernelArg> args, const Array& offsets, const ScanOptions& options = {}) const;
    Outputs scan_segments(std::initializer_list<KernelArg> args, const Array& offsets, const ScanOptions& options = {}) const {
        return scan_segments(std::span<const KernelArg>(args.begin(), args.size()), offsets, options);
    }

private:
    struct Spec;
    std::shared_ptr<const Spec> spec_;
};

// NumPy's cumsum and cumprod: along `options.axis`, or flattened when it is unset (NumPy's
// axis=None); options.exclusive gives the exclusive scans. The output dtype is NumPy's (bool and
// integers narrower than 64 bits: int64 / uint64; others their own); float16 accumulates in
// float32. `out`, when given, must have the output's shape and that dtype.
KJIT_API Array cumsum(const Array& x, const ScanOptions& options = {}, const Array& out = Array());
KJIT_API Array cumprod(const Array& x, const ScanOptions& options = {}, const Array& out = Array());

}  // namespace kjit
