// The type checker: resolves every name of a parsed kernel body, gives every expression its type
// by C's rules (jit/frontend/conversions.hpp), and rejects what kernel code may not do: unknown names and
// functions, writes to inputs, indexing what is not a raw parameter, `%` and bit operations on
// floats, non-integer indices, complex numbers where C++ has no meaning for them...
//
// It can run without types for the placeholders (a "generic" check: names, structure, writes);
// the checks that depend on a placeholder's type then wait for a binding.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/params.hpp"
#include "jit/frontend/preamble.hpp"
#include "jit/frontend/source.hpp"

namespace kjit::jit::frontend {

// The most bytes of arguments a launch passes (one struct; jit/kernels/call_memo.hpp's LaunchBuffers).
inline constexpr std::size_t kMaxArgumentBytes = 4096;

struct Local {
    std::string name;
    std::optional<DType> type;  // an array's element type
    bool is_const = false;
    SourcePos pos;
    int array_length = -1;      // a fixed-size array's length; -1 for a scalar
    bool in_state = false;      // declared at loop_prep's top level: the thread's, across its elements
};

// Where each string of the kernel came from, for positions in errors.
struct KernelSources {
    SourceText in{"in", {}};
    SourceText out{"out", {}};
    SourceText body{"op", {}};
    SourceText loop_prep{"loop_prep", {}};
    SourceText after_loop{"after_loop", {}};
};

// CuPy's loop_prep and after_loop around an elementwise body (KernelOptions): run once per thread
// before its elements and once after them.
struct LoopHooks {
    Body prep;
    Body after;
    bool empty() const { return prep.statements.empty() && after.statements.empty(); }
};

struct CheckedKernel {
    std::vector<Param> params;                      // inputs, then outputs
    std::vector<std::optional<DType>> param_types;  // nothing: an unbound placeholder
    std::vector<bool> param_read;                   // the body reads the parameter's value
    std::vector<bool> param_written;                // the body assigns to it
    std::vector<Local> locals;                      // every declared local, in order
    std::vector<PreambleFunction> preamble_functions;
    std::vector<NamedConstant> macros;              // the kernel's own (-D options, the preamble's #defines)
    std::vector<NamedConstant> constants;           // every constant the body names, in order of first use
    bool uses_i = false;
    bool uses_n = false;
    bool uses_atomics = false;                      // atomic_add & co. (jit/frontend/atomic_functions.hpp)
    bool complete = false;                          // every type is known
    // Which dtypes appear anywhere (parameters, locals, casts, literals): the code generator
    // includes the half/bfloat16/complex support only when needed.
    std::vector<bool> dtype_used = std::vector<bool>(DType::count, false);
};

// Checks `body` (annotating it in place) against `params`. Placeholders missing from `binding`
// are left generic. Throws ParseError/TypeError with positions.
// With `hooks`, also its loop_prep and after_loop: the body sees loop_prep's top-level locals.
CheckedKernel check_kernel(std::vector<Param> params, Body& body, const KernelSources& sources, const TypeBinding& binding,
                           OutsideNames outside, LoopHooks* hooks = nullptr);

// Validates a binding against the parameters: every placeholder used gets a type ("no type for
// placeholder 'T'..."), and no name in it is unknown. Throws TypeError.
void check_binding(const std::vector<Param>& params, const KernelSources& sources, const TypeBinding& binding);

}  // namespace kjit::jit::frontend
