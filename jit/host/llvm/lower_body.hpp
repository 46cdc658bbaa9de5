// Lowers a checked kernel body (the typed AST) to LLVM IR at the builder's position, with the
// semantics the CUDA path has (jit/codegen/statement_printer.cpp prints the same tree as CUDA):
// C's conversions; float16/bfloat16 stored as 16 bits, computed in float and rounded to nearest
// even after every operation (CUDA's __half operators); complex as pairs with the formulas of
// templates/complex.cuh; integer division by zero and shifts past the width defined instead of
// undefined (PTX's results, docs/HOST.md); float-to-integer conversions saturate as PTX's cvt.
// Part of libkjit_host.
#pragma once

#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "jit/frontend/ast.hpp"
#include "jit/frontend/atomic_functions.hpp"
#include "jit/frontend/type_checker.hpp"

namespace kjit::jit::host::llvm {

// A value in registers: bool is i1, integers iN, float16/bfloat16 their 16 bits as i16, floats
// float/double; a complex number is its real part in `v` and imaginary part in `im`.
struct Val {
    ::llvm::Value* v = nullptr;
    ::llvm::Value* im = nullptr;
    DType type;
};

class BodyLowering {
public:
    BodyLowering(::llvm::IRBuilder<>& b, ::llvm::Module& m, const frontend::CheckedKernel& kernel, ::llvm::BasicBlock* entry);

    // The per-element environment, set by the caller before each lowering of the body.
    std::vector<Val> param_values;            // inputs passed as elements or scalars, by parameter
    std::vector<::llvm::Value*> param_slots;    // outputs: a slot holding the element, by parameter
    std::vector<::llvm::Value*> raw_fields;     // raw parameters: their RawField in the arguments, by parameter
    ::llvm::Value* index_i = nullptr;           // i64
    ::llvm::Value* size_n = nullptr;            // i64

    // A slot in the entry block for a value of type t (memory layout: bool as i8, complex as two parts).
    ::llvm::Value* slot(DType t, int count = 1);
    void make_locals();                       // slots for every local of the kernel
    void statements(const frontend::Body& body);

    Val load(::llvm::Value* ptr, DType t);      // from memory laid out as the dtype
    void store(::llvm::Value* ptr, const Val& v);
    Val convert(const Val& v, DType to);
    Val zero(DType t);

private:
    struct Loop {
        ::llvm::BasicBlock* continue_to;
        ::llvm::BasicBlock* break_to;
    };
    struct LValue {
        ::llvm::Value* ptr;
        DType type;
    };

    void stmt(const frontend::Stmt& s);
    Val expr(const frontend::Expr& e);
    LValue lvalue(const frontend::Expr& e);
    Val unary(const frontend::UnaryExpr& u);
    Val binary(const frontend::BinaryExpr& b);
    Val logical(const frontend::BinaryExpr& b);
    Val assign(const frontend::AssignExpr& a);
    Val conditional(const frontend::ConditionalExpr& c);
    Val call(const frontend::CallExpr& c);
    Val atomic(const frontend::CallExpr& c, const frontend::AtomicFunction& f);
    Val constant(const frontend::NamedConstant& k);
    Val member(const frontend::MemberExpr& m, ::llvm::Value* index);  // x.size(), x.ndim, x.shape()[index], x.strides()[index]
    ::llvm::Value* raw_element(const frontend::IndexExpr& ix);        // the address of a raw parameter's element
    ::llvm::Value* to_bool(const Val& v);
    // a op b, both already of type t; comparisons give bool.
    Val apply(frontend::BinaryOp op, const Val& a, const Val& b, DType t);
    Val int_divide(frontend::BinaryOp op, const Val& a, const Val& b, DType t);
    Val complex_helper(const char* name, DType t, const Val& a, const Val* b);
    // `pure`: reads no memory (lets loops hoist and vectorise around it).
    ::llvm::Value* call_named(const std::string& name, ::llvm::Type* ret, const std::vector<::llvm::Value*>& args, bool pure = true);
    ::llvm::Value* intrinsic(unsigned id, const std::vector<::llvm::Value*>& args);
    ::llvm::Value* half_to_float(const Val& v);
    Val float_to_half(::llvm::Value* f, DType t);
    ::llvm::Type* reg(DType t);
    ::llvm::Type* part(DType t);  // a complex type's part, or the type itself
    void ensure_open_block();

    ::llvm::IRBuilder<>& b_;
    ::llvm::Module& m_;
    const frontend::CheckedKernel& kernel_;
    ::llvm::BasicBlock* entry_;
    std::vector<::llvm::Value*> locals_;
    std::vector<Loop> loops_;
};

}  // namespace kjit::jit::host::llvm
