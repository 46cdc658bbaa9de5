// ReductionKernel: a reduction written as C-like strings, in CuPy's form:
//
//   ReductionKernel l2("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2");
//
// - map_expr: an expression over one element of each input (`raw` inputs are indexed freely);
//   `i` is the element's index within its reduction (0 .. n-1, C order over the reduced
//   dimensions) and `n` the number of elements each output reduces.
// - reduce_expr: an expression in `a` and `b`, both of the reduce type, combining two partial
//   results. It must be associative and commutative: kjit chooses the grouping (always the same
//   one for the same shapes and launch, so results are deterministic; see templates/reduction.cuh
//   for the order).
// - post_map_expr: statements assigning the outputs from `a` (the reduced value), as in
//   "y = sqrt(a)"; `i` is the output's index (C order over the kept dimensions), `n` as above.
// - identity: an expression of the reduce type that `reduce` leaves unchanged ("0" for a sum),
//   or empty: then reducing no elements is an error at call time.
// - options.reduce_type (KernelOptions): the type of `a`, `b` and the partial results, a dtype or a placeholder;
//   empty: the type of the first output, as in CuPy (map_expr's value is converted to it).
//   Or a struct, when one value is not enough (a single-pass variance, a value with its index):
//
//     o.reduce_type = "struct welford { float64 n; float64 mean; float64 m2; }";
//     ReductionKernel var("T x", "float64 y", "{1, x, 0}",
//                         "{a.n + b.n, <merged mean>, <merged m2>}", "y = a.m2 / a.n", "{0, 0, 0}", "var", o);
//
//   Fields are dtypes, C type names or placeholders (at most 64 bytes in all); the name is
//   optional. reduce_type may also name a struct the preamble defines ("welford"), as CuPy allows;
//   its fields must then be such plain values too (the module asserts the layout). map, reduce and
//   identity write a value of the struct as a brace list of its fields in order ("{1, x, 0}"), as
//   `a` or `b`, or as a conditional between such values ("b.v > a.v ? b : a"); every piece reads
//   fields as `a.mean`. Every strategy, segments and the host back end take struct values alike.
//
// Construction is cheap and checks nothing; check(), source() and compile() parse and type-check
// the strings (errors: ParseError and TypeError naming the string: "in", "out", "map", "reduce",
// "post", "identity" or "reduce_type", with line, column and a caret) and generate CUDA for a
// binding of the placeholders. Objects are immutable and safe to use from many threads.
//
// Calling it reduces the inputs' broadcast shape over the axes asked for:
//
//   kjit::Array norms = l2({x}, {.axis = std::vector<int>{1}});   // one value per row
//
// Arguments bind as for ElementwiseKernel (CuPy's rules: arrays bind placeholders, scalars take
// their parameter's type, array inputs NumPy casts safely are converted as loaded).
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kjit/elementwise_kernel.hpp"

namespace kjit {

namespace jit {
struct ReductionKernelAccess;  // kjit's own reductions whose partial results are not a dtype (argmax)
}

class KJIT_API ReductionKernel {
public:
    ReductionKernel(std::string in_params, std::string out_params, std::string map_expr, std::string reduce_expr,
                    std::string post_map_expr, std::string identity, std::string name = "reduce",
                    KernelOptions options = {});

    const std::string& name() const noexcept;
    const std::string& in_params() const noexcept;
    const std::string& out_params() const noexcept;
    const std::string& map_expr() const noexcept;
    const std::string& reduce_expr() const noexcept;
    const std::string& post_map_expr() const noexcept;
    const std::string& identity() const noexcept;
    const KernelOptions& options() const noexcept;

    // Parses and checks every piece. With a type for every placeholder, also the rules that depend
    // on types; without, those wait.
    void check(const TypeBinding& types = {}) const;
    // The placeholders the parameters and the reduce type use ("T", "U"), sorted.
    std::vector<std::string> placeholders() const;
    // The CUDA source for a complete binding.
    std::string source(const TypeBinding& types) const;
    // Compiles for `arch` ("sm_90"; empty: KJIT_ARCH, else the current device, else sm_80), or
    // finds it in the kernel cache, as ElementwiseKernel::compile does: the module of every entry
    // point, to inspect (`kjit compile`). Calls do not load it: a call compiles (or finds) the
    // module of the one strategy it launches (a tenth of the NVRTC time of all of them); `kjit
    // precompile` builds those modules, one per strategy and index width.
    // Binary::entry_points names the strategies, each in a 32-bit index variant (every offset and
    // count below 2^31) and a 64-bit one: full (one value from many blocks), rows_warp and
    // rows_block (a warp or a block per output reducing the trailing dimensions), columns (a
    // thread per output looping over the reduced dimensions), columns_split and columns_finish
    // (the same in chunks across blocks, then combined), segments_warp and segments_block
    // (kjit/segmented.hpp): "full32", "rows_warp64", ...; and small32 alone (one block for at most
    // a few thousand contiguous elements to one value: what a first call on small arrays compiles).
    Binary compile(const TypeBinding& types, const std::string& arch = {}) const;

    // Reduces `args`: the inputs, then optionally all of the outputs (allocated on the inputs'
    // device, C order, when not given; given ones must have the reduced shape exactly). Returns
    // the outputs. Errors: TypeError (argument count, dtypes), ShapeError (shapes that do not
    // broadcast, bad axes, an output of the wrong shape or overlapping an input), kjit::Error for
    // host arrays, arrays on several devices, or reducing no elements without an identity;
    // CompileError on the first call of a binding. The same arguments give the same bits on every
    // run (templates/reduction.cuh documents the order).
    Outputs operator()(std::span<const KernelArg> args, const ReduceOptions& options = {}) const;
    Outputs operator()(std::initializer_list<KernelArg> args, const ReduceOptions& options = {}) const {
        return (*this)(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // As operator(), with every output given, returning nothing.
    void launch(std::span<const KernelArg> args, const ReduceOptions& options = {}) const;
    void launch(std::initializer_list<KernelArg> args, const ReduceOptions& options = {}) const {
        launch(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // As ElementwiseKernel::prepare: the plan of a call with arguments of these kinds and dtypes,
    // and the module of every strategy a call may pick (whole array, rows, columns, columns split,
    // segments; 32- and 64-bit indices), loaded without launching. The scratch memory a call's strategy
    // needs is still made by its first call on a stream (its size depends on the shapes).
    void prepare(std::span<const KernelArg> args, const ReduceOptions& options = {}) const;
    void prepare(std::initializer_list<KernelArg> args, const ReduceOptions& options = {}) const {
        prepare(std::span<const KernelArg>(args.begin(), args.size()), options);
    }
    // A segmented reduction of 1-D inputs (kjit::segmented_reduce in kjit/segmented.hpp says more):
    // output s reduces elements offsets[s] .. offsets[s + 1] - 1. Outputs, when given, have
    // offsets.size() - 1 elements. Needs an identity (a segment may be empty).
    Outputs reduce_segments(std::span<const KernelArg> args, const Array& offsets, const CallOptions& options = {}) const;

private:
    friend struct jit::ReductionKernelAccess;
    struct Spec;
    explicit ReductionKernel(std::shared_ptr<const Spec> spec) : spec_(std::move(spec)) {}
    std::shared_ptr<const Spec> spec_;
};

}  // namespace kjit
