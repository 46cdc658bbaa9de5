// The code generator for reductions: a checked ReductionKernel (each piece checked as a small
// kernel body, jit/kernels/reduction/kernel.cpp) and a complete type binding to one CUDA module holding
// the user's pieces as device functions and the strategies of templates/reduction.cuh as entry
// points.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "jit/codegen/entry_points.hpp"
#include "jit/frontend/type_checker.hpp"

namespace kjit::jit::codegen {

// The synthetic output each expression piece (map, reduce, identity) is checked as assigning:
// `_kjit_r = <expression>`. Users cannot name it (names starting with '_' are kjit's).
inline constexpr const char* kReductionResult = "_kjit_r";

// One piece: its body (a single `_kjit_r = expr;` for expressions, the statements for post) and
// the kernel it was checked as (its parameters: map: the inputs and _kjit_r; reduce: a, b and
// _kjit_r; identity: _kjit_r; post: a and the outputs).
struct ReductionPiece {
    frontend::Body body;
    frontend::CheckedKernel kernel;
};

struct CheckedReduction {
    std::vector<frontend::Param> params;                      // the user's inputs, then outputs
    std::vector<std::optional<DType>> param_types;  // nothing: an unbound placeholder
    std::optional<DType> reduce_type;               // nothing: depends on an unbound placeholder
    bool has_identity = false;
    bool complete = false;                          // every type is known
    ReductionPiece map, reduce, identity, post;     // identity: empty when there is none
};

struct ReductionModuleSpec {
    std::string name;  // a C identifier: it prefixes every symbol
    // As the user wrote them, for the comment at the top.
    std::string in_params, out_params, map_expr, reduce_expr, post_map_expr, identity;
    std::string preamble;  // raw CUDA placed before the pieces
    // Per parameter (inputs then outputs), as in ElementwiseModuleSpec: an input passed by value
    // as one scalar; an array input's dtype in memory when it differs from its parameter's type
    // (converted as loaded). Empty: every input an array of its own type.
    std::vector<bool> scalar;
    std::vector<std::optional<DType>> storage;
};

struct GeneratedReduction {
    std::string source;
    // Entry points (templates/reduction.cuh describes their arguments and launch contract).
    std::string full32, full64, rows_warp32, rows_warp64, rows_block32, rows_block64, columns32, columns64;
    std::string columns_split32, columns_split64, columns_finish32, columns_finish64;
    std::string segments_warp32, segments_warp64, segments_block32, segments_block64;
    std::string small32;  // no 64-bit variant: it reduces a few thousand elements
    int array_inputs = 0;  // inputs passed as arrays (not raw, not scalars): ReduceLayout's `inputs` is max(1, this)
    int outputs = 0;
    int vector_width = 1;  // elements per vector load (NAME_ops::vector)
    // Each entry point's name and definition (one line, newline included), in the order printed:
    // the last lines of `source`.
    EntryLines entry_lines;
};


// Prints the entry points of a module whose argument struct is `args_type` and whose pieces are
// `ops_type` (templates/reduction.cuh's K), filling their names in `m` (m.outputs must be set).
void print_reduction_entry_points(const std::string& name, const std::string& args_type, const std::string& ops_type, int in_slots,
                                  GeneratedReduction& m, std::ostream& s);

// `checked` must be complete.
GeneratedReduction generate_reduction(const ReductionModuleSpec& spec, const CheckedReduction& checked,
                                      const TypeBinding& binding);

// How many times this process generated the code of a reduction written as strings (not argmin
// or argmax, jit/kernels/ops/arg_reduction.hpp): for tests of the paths that must not (a call planned from a
// plan note, jit/kernels/reduction/note.hpp).
std::uint64_t reduction_generations() noexcept;

}  // namespace kjit::jit::codegen
