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
#include "jit/frontend/struct_decl.hpp"
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

// A struct running value (jit/frontend/struct_decl.hpp). Its pieces read field f of `a` as the
// parameter "a.f" and assign field f of the result as "_kjit_r.f" (jit/kernels/reduction/struct_value.hpp).
struct ReduceStruct {
    frontend::StructDecl decl;
    std::string c_name;                       // the name the module gives it (the declared one, or NAME_value)
    std::vector<std::optional<DType>> types;  // per field; nothing: an unbound placeholder
};

// The most bytes a struct running value may have: each thread keeps a few in registers, and the
// host back end keeps lanes of them on its stack.
inline constexpr std::size_t kMaxReduceValueBytes = 64;

struct CheckedReduction {
    std::vector<frontend::Param> params;                      // the user's inputs, then outputs
    std::vector<std::optional<DType>> param_types;  // nothing: an unbound placeholder
    std::optional<DType> reduce_type;               // a dtype; nothing: a struct, or an unbound placeholder
    std::optional<ReduceStruct> reduce_struct;      // set when the running value is a struct
    bool has_identity = false;
    bool complete = false;                          // every type is known
    ReductionPiece map, reduce, identity, post;     // identity: empty when there is none
};

// Where each field of a running value lies in its bytes: C's layout (every dtype aligned to its
// size), which the generated CUDA asserts. A dtype is one field named "" at offset 0.
struct ReduceValueField {
    std::string name;
    DType type;
    std::size_t offset = 0;
};
struct ReduceValueLayout {
    std::vector<ReduceValueField> fields;
    std::size_t size = 0;
};
// `c` must be complete.
inline ReduceValueLayout reduce_value_layout(const CheckedReduction& c) {
    ReduceValueLayout l;
    if (!c.reduce_struct) {
        l.fields.push_back({"", *c.reduce_type, 0});
        l.size = c.reduce_type->itemsize();
        return l;
    }
    std::size_t align = 1;
    for (std::size_t k = 0; k < c.reduce_struct->decl.fields.size(); ++k) {
        const DType t = *c.reduce_struct->types[k];
        const std::size_t a = t.itemsize();
        l.size = (l.size + a - 1) / a * a;
        l.fields.push_back({c.reduce_struct->decl.fields[k].name, t, l.size});
        l.size += a;
        align = a > align ? a : align;
    }
    l.size = (l.size + align - 1) / align * align;
    return l;
}

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
    // A scan module (templates/scan.cuh's entry points) instead of a reduction's: map reads the one
    // array input, post writes the one output (jit/kernels/scan/).
    bool scan = false;
    // kjit's own reductions only (kjit::var): CUDA statements for the body of NAME_ops::fold_vector
    // (templates/reduction.cuh's contract; they may call fold_vector_elements, the generic body).
    std::string fold_vector;
};

struct GeneratedReduction {
    std::string source;
    // Entry points (templates/reduction.cuh describes their arguments and launch contract).
    std::string full32, full64, rows_warp32, rows_warp64, rows_block32, rows_block64, columns32, columns64;
    std::string columns_split32, columns_split64, columns_finish32, columns_finish64;
    std::string segments_warp32, segments_warp64, segments_block32, segments_block64;
    std::string small32;  // no 64-bit variant: it reduces a few thousand elements
    std::string bins64, bins_finish64;  // no 32-bit variant: two launches over memory, not index arithmetic, set the time
    // A scan module's instead (templates/scan.cuh): the others are then empty.
    std::string scan32, scan64, scan_segments32, scan_segments64;
    int scan_items = 0;  // a scan module's items per thread (NAME_ops::scan_items)
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

// The same for a scan module's entry points (templates/scan.cuh).
void print_scan_entry_points(const std::string& name, const std::string& args_type, const std::string& ops_type, int in_slots,
                             GeneratedReduction& m, std::ostream& s);

// Items per thread of a scan of values of `itemsize` bytes: 160 bytes of them (40 floats, 20
// doubles; at most 40 items), so that a block's tile outlasts its look-back's latency (on an H100,
// cumsum of 2^28 float32 went 1310, 1853, 2058, 2121 GB/s at 32, 64, 128, 160 bytes per thread,
// docs/perf-log.md); $KJIT_SCAN_BYTES (16 to 176) overrides the 160 for tuning (it changes the
// source, so the cache keeps each choice apart).
int scan_items_for(std::size_t itemsize);

// `checked` must be complete.
GeneratedReduction generate_reduction(const ReductionModuleSpec& spec, const CheckedReduction& checked,
                                      const TypeBinding& binding);

// How many times this process generated the code of a reduction written as strings (not argmin
// or argmax, jit/kernels/ops/arg_reduction.hpp): for tests of the paths that must not (a call planned from a
// plan note, jit/kernels/reduction/note.hpp).
std::uint64_t reduction_generations() noexcept;

}  // namespace kjit::jit::codegen
