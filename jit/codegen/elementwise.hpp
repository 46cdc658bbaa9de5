// The code generator: a checked elementwise kernel and a complete type binding to CUDA source.
// The user's statements are printed back from the typed tree, so the source is recognisably
// theirs, with explicit conversions only where CUDA's own overloads would not follow C's rules
// (float16, bfloat16 and complex). One module holds every variant the launcher chooses from.
#pragma once

#include "jit/codegen/entry_points.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jit/frontend/type_checker.hpp"

namespace kjit::jit::codegen {

struct ElementwiseModuleSpec {
    std::string name;           // a C identifier: it prefixes every symbol
    std::string in_params;      // as the user wrote them, for the comment at the top
    std::string out_params;
    std::string preamble;       // raw CUDA placed before the kernel
    // Per parameter: passed by value as one scalar instead of as an array. Empty: all arrays.
    std::vector<bool> scalar;
    // Per parameter: the dtype of the array in memory when it differs from the parameter's type
    // (array inputs only; elements are converted as C converts when loaded). Empty: as declared.
    std::vector<std::optional<DType>> storage;
    // The small variant alone, without the support code only the other variants use: its own
    // program, as small calls compile it (a first call's NVRTC time; docs/perf-log.md).
    bool small_only = false;
};

struct GeneratedModule {
    std::string source;
    // Entry points: contiguous arrays with vector loads, and any strides (N-d), each with 32-bit
    // and 64-bit index arithmetic; rows whose last dimension is contiguous or broadcast in every
    // operand (vector loads, 32-bit); 2-D with transposed inputs staged through shared memory
    // (32-bit). The last two are empty when the kernel has no use for them. small32: contiguous
    // operands of few elements, one per thread, plain loads (compiles in half the time of the
    // contiguous variant, which is what a first call on small arrays waits for).
    std::string contiguous32, contiguous64, strided32, strided64, rows32, tiled32, small32;
    std::size_t tiled_shared_bytes = 0;  // static shared memory of the tiled variant
    int tile = 32;              // the tiled variant's tiles are tile x tile elements
    int vector_width = 1;       // elements per vector load in the contiguous variants
    int array_operands = 0;     // operands of the strided Layout, in parameter order
    EntryLines entry_lines;     // the entry points' definitions: the source's last lines
};

// `kernel` must be complete (every placeholder bound). The body is the one `kernel` was checked
// from (its nodes carry the types).
// `hooks`: CuPy's loop_prep and after_loop, checked with the body (or null).
GeneratedModule generate_elementwise(const ElementwiseModuleSpec& spec, const frontend::CheckedKernel& kernel, const frontend::Body& body,
                                     const TypeBinding& binding, const frontend::LoopHooks* hooks = nullptr);

// How many times this process generated elementwise code: for tests of the paths that must not
// (a call planned from a plan note, jit/kernels/plan_note.hpp).
std::uint64_t elementwise_generations() noexcept;


}  // namespace kjit::jit::codegen
