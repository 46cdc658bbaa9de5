// The boundary between libkjit and the host back end (libkjit_host, which links LLVM). libkjit
// never links LLVM: it dlopens the back end the first time a kernel runs on host arrays
// (jit/host/backend_loader.hpp) and talks to it only through this interface, found by one
// extern "C" factory symbol. Both sides are built from the same tree; the version number below
// changes whenever anything in this header (or a type it passes: the AST, CheckedKernel,
// CheckedReduction, CallLayout, ArgsLayout) changes shape, so that a back end from another build is refused with a
// clear error instead of misreading memory.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/frontend/ast.hpp"
#include "jit/codegen/reduction.hpp"
#include "jit/frontend/type_checker.hpp"
#include "runtime/detail/call_layout.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit::host {

constexpr int kHostBackendVersion = 3;

// Compiled code for one chunk [begin, end) of the iteration space (elements in the order of the
// simplified layout). `args` is the kernel's argument struct, laid out by detail::args_layout
// exactly as for the GPU (pointers, scalar values, raw {data, size}, then `long long n`);
// `layout` the simplified call layout (base pointers in layout->data, element strides).
using ChunkFn = void (*)(const unsigned char* args, const detail::CallLayout* layout, std::int64_t begin,
                         std::int64_t end);

// One elementwise kernel for one binding, as the front end checked it.
struct ElementwiseRequest {
    std::string name;
    const frontend::CheckedKernel* kernel = nullptr;  // complete: every type bound
    const frontend::Body* body = nullptr;             // the body `kernel` was checked from (it carries the types)
    const frontend::LoopHooks* hooks = nullptr;       // CuPy's loop_prep and after_loop: once per chunk, around its elements
    std::vector<bool> scalar;               // per parameter: passed by value
    std::vector<std::optional<DType>> storage;  // per parameter: the array's dtype when it differs
    detail::ArgsLayout args;                // where each parameter sits in the argument struct
};

struct ElementwiseCode {
    ChunkFn contiguous = nullptr;  // every array operand walks memory with element stride 1
    ChunkFn strided = nullptr;     // any layout (any number of dimensions, any strides)
    bool uses_index = false;       // the body reads `i` (set by the caller, not the back end)
};

// One reduction kernel for one binding (jit/kernels/reduction/kernel.cpp checked its pieces). Partial
// results are kept in memory as the reduce type's dtype (bool one byte, complex as two parts),
// with a byte per value saying whether it holds one (always 1 with an identity).
struct ReductionRequest {
    std::string name;
    const codegen::CheckedReduction* reduction = nullptr;  // complete
    std::vector<bool> scalar;                     // per parameter, as for ElementwiseRequest
    std::vector<std::optional<DType>> storage;
    detail::ArgsLayout args;                      // array inputs and outputs as pointers to their first element
};

// Lanes a fold deals its elements over, round robin, before they are combined by a tree (see
// jit/host/host_reduction.hpp for the whole order). Independent lanes let the compiler keep one
// vector of partial results in registers instead of waiting for each add.
constexpr int kReduceLanes = 8;

// Folds `count` reduced elements into the lanes: element e (0-based in this call, input s at
// element offset in_off[s] + e * in_stride[s] from its pointer in `args`) goes to lane e % lanes:
// lane = reduce(lane, map(element)), with `i` = j0 + e and `n` = n. `acc`: lanes values of the
// reduce type; `ok`: lanes bytes (a lane without a value takes the element's).
using FoldFn = void (*)(const unsigned char* args, const std::int64_t* in_off, const std::int64_t* in_stride, std::int64_t count,
                        std::int64_t j0, std::int64_t n, unsigned char* acc, unsigned char* ok);
// The same fold for `width` neighbouring outputs at once (outputs w = 0..width-1: input s at
// in_off[s] + e * in_stride[s] + w * in_step[s]), each with its own lanes: output w's lane l is at
// acc[l * width + w] (ok likewise). Each output gets exactly the bits of a FoldFn call over its
// elements; reading rows of neighbours together is what makes reducing outer axes fast.
using FoldColumnsFn = void (*)(const unsigned char* args, const std::int64_t* in_off, const std::int64_t* in_stride,
                               const std::int64_t* in_step, std::int64_t count, std::int64_t width, std::int64_t j0, std::int64_t n,
                               unsigned char* acc, unsigned char* ok);
// a = reduce(a, b) when both hold a value; else whichever does.
using CombineFn = void (*)(unsigned char* a, unsigned char* a_ok, const unsigned char* b, const unsigned char* b_ok);
// Writes identity() (only reductions with an identity have one).
using IdentityFn = void (*)(unsigned char* out);
// post(v) for output `o` (`i` = o, `n` = n): output k at element offset out_off[k] from its pointer in `args`.
using PostFn = void (*)(const unsigned char* args, const std::int64_t* out_off, const unsigned char* v, std::int64_t o, std::int64_t n);

struct ReductionCode {
    FoldFn fold = nullptr;
    FoldColumnsFn fold_columns = nullptr;  // null: outputs one at a time (argmin, argmax)
    CombineFn combine = nullptr;
    IdentityFn identity = nullptr;  // null without an identity
    PostFn post = nullptr;
};

class HostBackend {
public:
    virtual ~HostBackend() = default;
    // Lowers the typed AST to LLVM IR, optimises it for this CPU, compiles it. The code lives as
    // long as the back end (the process). Throws kjit::Error subclasses.
    virtual ElementwiseCode compile_elementwise(const ElementwiseRequest& request) = 0;
    // The same for a reduction's pieces (map, reduce, identity, post); the loops around them are
    // libkjit's (jit/host/host_reduction.cpp).
    virtual ReductionCode compile_reduction(const ReductionRequest& request) = 0;
    // "LLVM 19.1.7, x86-64 znver3" and the like, for `kjit info` and errors.
    virtual std::string description() const = 0;
};

}  // namespace kjit::jit::host

// The factory the back end exports: nullptr when `version` is not the one it was built with
// (`*error` then says why). The caller owns the result.
#define KJIT_HOST_BACKEND_FACTORY "kjit_host_backend_create_v1"
using kjit_host_backend_factory = kjit::jit::host::HostBackend* (*)(int version, std::string* error);
