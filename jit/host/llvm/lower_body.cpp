#include "jit/host/llvm/lower_body.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>

#include <llvm/IR/Intrinsics.h>

#include "jit/frontend/conversions.hpp"
#include "jit/frontend/math_functions.hpp"
#include "kjit/error.hpp"
#include "runtime/detail/kernel_args.hpp"

namespace kjit::jit::host::llvm {

using namespace frontend;

namespace {

bool is_16bit(DType t) { return t.id() == DType::float16 || t.id() == DType::bfloat16; }
bool is_f32(DType t) { return t.id() == DType::float32; }
int bits(DType t) { return static_cast<int>(t.itemsize() * 8); }

BinaryOp binary_of(AssignOp op) {
    static const BinaryOp k[] = {BinaryOp::add, BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div, BinaryOp::mod,
                                 BinaryOp::bit_and, BinaryOp::bit_or, BinaryOp::bit_xor, BinaryOp::shl, BinaryOp::shr};
    return k[static_cast<int>(op)];
}

}  // namespace

BodyLowering::BodyLowering(::llvm::IRBuilder<>& b, ::llvm::Module& m, const CheckedKernel& kernel, ::llvm::BasicBlock* entry)
    : b_(b), m_(m), kernel_(kernel), entry_(entry) {
    param_values.resize(kernel.params.size());
    param_slots.resize(kernel.params.size(), nullptr);
    raw_fields.resize(kernel.params.size(), nullptr);
}

::llvm::Type* BodyLowering::part(DType t) {
    ::llvm::LLVMContext& c = m_.getContext();
    switch (t.real_type().id()) {
        case DType::bool_: return ::llvm::Type::getInt1Ty(c);
        case DType::float16: case DType::bfloat16: return ::llvm::Type::getInt16Ty(c);
        case DType::float32: return ::llvm::Type::getFloatTy(c);
        case DType::float64: return ::llvm::Type::getDoubleTy(c);
        default: return ::llvm::Type::getIntNTy(c, static_cast<unsigned>(bits(t)));
    }
}
::llvm::Type* BodyLowering::reg(DType t) { return part(t); }

::llvm::Value* BodyLowering::slot(DType t, int count) {
    ::llvm::IRBuilder<> at(entry_, entry_->begin());
    ::llvm::Type* bytes = ::llvm::ArrayType::get(at.getInt8Ty(), t.itemsize() * static_cast<std::size_t>(count));
    ::llvm::AllocaInst* a = at.CreateAlloca(bytes);
    a->setAlignment(::llvm::Align(t.real_type().itemsize()));
    return a;
}

void BodyLowering::make_locals() {
    for (const Local& l : kernel_.locals) locals_.push_back(slot(*l.type, std::max(1, l.array_length)));
}

Val BodyLowering::load(::llvm::Value* ptr, DType t) {
    if (t.is_complex()) {
        ::llvm::Type* p = part(t);
        ::llvm::Value* im_ptr = b_.CreateConstGEP1_64(b_.getInt8Ty(), ptr, t.real_type().itemsize());
        return {b_.CreateLoad(p, ptr), b_.CreateLoad(p, im_ptr), t};
    }
    if (t.is_bool()) return {b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), ptr), b_.getInt8(0)), nullptr, t};
    return {b_.CreateLoad(reg(t), ptr), nullptr, t};
}

void BodyLowering::store(::llvm::Value* ptr, const Val& v) {
    if (v.type.is_complex()) {
        b_.CreateStore(v.v, ptr);
        b_.CreateStore(v.im, b_.CreateConstGEP1_64(b_.getInt8Ty(), ptr, v.type.real_type().itemsize()));
        return;
    }
    if (v.type.is_bool()) {
        b_.CreateStore(b_.CreateZExt(v.v, b_.getInt8Ty()), ptr);
        return;
    }
    b_.CreateStore(v.v, ptr);
}

Val BodyLowering::zero(DType t) {
    ::llvm::Value* z = ::llvm::Constant::getNullValue(part(t));
    return {z, t.is_complex() ? z : nullptr, t};
}

::llvm::Value* BodyLowering::call_named(const std::string& name, ::llvm::Type* ret, const std::vector<::llvm::Value*>& args, bool pure) {
    std::vector<::llvm::Type*> types;
    for (::llvm::Value* a : args) types.push_back(a->getType());
    ::llvm::FunctionCallee f = m_.getOrInsertFunction(name, ::llvm::FunctionType::get(ret, types, false));
    if (auto* fn = ::llvm::dyn_cast<::llvm::Function>(f.getCallee())) {
        fn->setDoesNotThrow();
        if (!ret->isVoidTy() && pure) fn->setDoesNotAccessMemory();
        else if (!ret->isVoidTy()) fn->setOnlyReadsMemory();
    }
    return b_.CreateCall(f, args);
}

::llvm::Value* BodyLowering::intrinsic(unsigned id, const std::vector<::llvm::Value*>& args) {
    ::llvm::Function* f = ::llvm::Intrinsic::getDeclaration(&m_, static_cast<::llvm::Intrinsic::ID>(id), {args[0]->getType()});
    return b_.CreateCall(f, args);
}

// --- conversions ---

::llvm::Value* BodyLowering::half_to_float(const Val& v) {
    if (v.type.id() == DType::bfloat16)
        return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(v.v, b_.getInt32Ty()), 16), b_.getFloatTy());
    return call_named("kjit_f16_to_f32", b_.getFloatTy(), {v.v});
}

Val BodyLowering::float_to_half(::llvm::Value* f, DType t) {
    // CUDA rounds once from double (__double2half((double)x)); a float widens exactly.
    ::llvm::Value* d = f->getType()->isDoubleTy() ? f : b_.CreateFPExt(f, b_.getDoubleTy());
    const char* fn = t.id() == DType::float16 ? "kjit_f64_to_f16" : "kjit_f64_to_bf16";
    return {call_named(fn, b_.getInt16Ty(), {d}), nullptr, t};
}

Val BodyLowering::convert(const Val& v, DType to) {
    const DType from = v.type;
    if (from == to) return v;
    if (to.is_complex()) {
        if (from.is_complex()) return {convert({v.v, nullptr, from.real_type()}, to.real_type()).v,
                                       convert({v.im, nullptr, from.real_type()}, to.real_type()).v, to};
        return {convert(v, to.real_type()).v, ::llvm::Constant::getNullValue(part(to)), to};
    }
    if (from.is_complex()) return convert({v.v, nullptr, from.real_type()}, to);  // the real part
    if (is_16bit(from)) {
        const Val f{half_to_float(v), nullptr, DType::float32};
        if (is_16bit(to)) return float_to_half(f.v, to);
        return convert(f, to);
    }
    if (is_16bit(to)) return float_to_half(convert(v, DType::float64).v, to);
    ::llvm::Type* t = reg(to);
    if (to.is_bool()) {
        if (from.is_floating()) return {b_.CreateFCmpUNE(v.v, ::llvm::ConstantFP::get(v.v->getType(), 0.0)), nullptr, to};
        return {b_.CreateICmpNE(v.v, ::llvm::Constant::getNullValue(v.v->getType())), nullptr, to};
    }
    const bool from_unsigned = from.is_bool() || !from.is_signed();
    if (to.is_floating()) {
        if (from.is_floating()) return {b_.CreateFPCast(v.v, t), nullptr, to};
        return {from_unsigned ? b_.CreateUIToFP(v.v, t) : b_.CreateSIToFP(v.v, t), nullptr, to};
    }
    // to an integer
    if (from.is_floating()) {
        // PTX's cvt.rzi saturates and gives 0 for NaN; C leaves it undefined, LLVM's fptosi poisons.
        const unsigned id = to.is_signed() ? ::llvm::Intrinsic::fptosi_sat : ::llvm::Intrinsic::fptoui_sat;
        ::llvm::Function* f = ::llvm::Intrinsic::getDeclaration(&m_, static_cast<::llvm::Intrinsic::ID>(id), {t, v.v->getType()});
        return {b_.CreateCall(f, {v.v}), nullptr, to};
    }
    return {from_unsigned ? b_.CreateZExtOrTrunc(v.v, t) : b_.CreateSExtOrTrunc(v.v, t), nullptr, to};
}

::llvm::Value* BodyLowering::to_bool(const Val& v) {
    if (v.type.is_complex()) {  // z != 0
        ::llvm::Value* z = ::llvm::ConstantFP::get(v.v->getType(), 0.0);
        return b_.CreateOr(b_.CreateFCmpUNE(v.v, z), b_.CreateFCmpUNE(v.im, z));
    }
    return convert(v, DType::bool_).v;
}

// --- statements ---

void BodyLowering::ensure_open_block() {
    if (b_.GetInsertBlock()->getTerminator() != nullptr) {
        // Code after break/continue: unreachable, in a block of its own that LLVM drops.
        b_.SetInsertPoint(::llvm::BasicBlock::Create(m_.getContext(), "dead", b_.GetInsertBlock()->getParent()));
    }
}

void BodyLowering::statements(const Body& body) {
    for (const StmtPtr& s : body.statements) stmt(*s);
}

void BodyLowering::stmt(const Stmt& s) {
    ensure_open_block();
    ::llvm::LLVMContext& c = m_.getContext();
    ::llvm::Function* fn = b_.GetInsertBlock()->getParent();
    auto branch_to = [&](::llvm::BasicBlock* bb) {
        if (b_.GetInsertBlock()->getTerminator() == nullptr) b_.CreateBr(bb);
    };
    switch (s.kind) {
        case StmtKind::expr: expr(*static_cast<const ExprStmt&>(s).expr); return;
        case StmtKind::decl: {
            const auto& d = static_cast<const DeclStmt&>(s);
            for (const Declarator& decl : d.declarators) {
                const DType t = *kernel_.locals[static_cast<std::size_t>(decl.local)].type;
                ::llvm::Value* at = locals_[static_cast<std::size_t>(decl.local)];
                // Uninitialised locals start at zero, so that a run never depends on stale memory;
                // an array's elements past its brace list are zero, as in C.
                if (decl.array_length >= 0) {
                    for (int k = 0; k < decl.array_length; ++k) {
                        ::llvm::Value* element = b_.CreateConstGEP1_64(b_.getInt8Ty(), at, static_cast<std::uint64_t>(k) * t.itemsize());
                        const auto value = static_cast<std::size_t>(k);
                        store(element, value < decl.elements.size() ? convert(expr(*decl.elements[value]), t) : zero(t));
                    }
                    continue;
                }
                store(at, decl.init ? convert(expr(*decl.init), t) : zero(t));
            }
            return;
        }
        case StmtKind::block:
            for (const StmtPtr& b : static_cast<const BlockStmt&>(s).body) stmt(*b);
            return;
        case StmtKind::if_: {
            const auto& st = static_cast<const IfStmt&>(s);
            ::llvm::Value* cond = to_bool(expr(*st.condition));
            auto* then_bb = ::llvm::BasicBlock::Create(c, "then", fn);
            auto* else_bb = st.else_branch ? ::llvm::BasicBlock::Create(c, "else", fn) : nullptr;
            auto* end_bb = ::llvm::BasicBlock::Create(c, "endif", fn);
            b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : end_bb);
            b_.SetInsertPoint(then_bb);
            stmt(*st.then_branch);
            branch_to(end_bb);
            if (else_bb) {
                b_.SetInsertPoint(else_bb);
                stmt(*st.else_branch);
                branch_to(end_bb);
            }
            b_.SetInsertPoint(end_bb);
            return;
        }
        case StmtKind::for_: {
            const auto& st = static_cast<const ForStmt&>(s);
            if (st.init) stmt(*st.init);
            auto* cond_bb = ::llvm::BasicBlock::Create(c, "for.cond", fn);
            auto* body_bb = ::llvm::BasicBlock::Create(c, "for.body", fn);
            auto* step_bb = ::llvm::BasicBlock::Create(c, "for.step", fn);
            auto* end_bb = ::llvm::BasicBlock::Create(c, "for.end", fn);
            branch_to(cond_bb);
            b_.SetInsertPoint(cond_bb);
            if (st.condition) b_.CreateCondBr(to_bool(expr(*st.condition)), body_bb, end_bb);
            else b_.CreateBr(body_bb);
            b_.SetInsertPoint(body_bb);
            loops_.push_back({step_bb, end_bb});
            stmt(*st.body);
            loops_.pop_back();
            branch_to(step_bb);
            b_.SetInsertPoint(step_bb);
            if (st.step) expr(*st.step);
            b_.CreateBr(cond_bb);
            b_.SetInsertPoint(end_bb);
            return;
        }
        case StmtKind::while_: {
            const auto& st = static_cast<const WhileStmt&>(s);
            auto* cond_bb = ::llvm::BasicBlock::Create(c, "while.cond", fn);
            auto* body_bb = ::llvm::BasicBlock::Create(c, "while.body", fn);
            auto* end_bb = ::llvm::BasicBlock::Create(c, "while.end", fn);
            branch_to(cond_bb);
            b_.SetInsertPoint(cond_bb);
            b_.CreateCondBr(to_bool(expr(*st.condition)), body_bb, end_bb);
            b_.SetInsertPoint(body_bb);
            loops_.push_back({cond_bb, end_bb});
            stmt(*st.body);
            loops_.pop_back();
            branch_to(cond_bb);
            b_.SetInsertPoint(end_bb);
            return;
        }
        case StmtKind::break_: b_.CreateBr(loops_.back().break_to); return;
        case StmtKind::continue_: b_.CreateBr(loops_.back().continue_to); return;
        case StmtKind::empty: return;
    }
}

// --- expressions ---

// The address of x[k] (element k in C order) or x[idx] (one index per dimension) of a raw
// parameter, through its RawField as kjit::Raw<T>::operator[] computes it on the GPU.
::llvm::Value* BodyLowering::raw_element(const IndexExpr& ix) {
    using detail::RawField;
    const auto& base = static_cast<const NameExpr&>(*ix.base);
    const DType t = *kernel_.param_types[static_cast<std::size_t>(base.index)];
    ::llvm::Value* field = raw_fields[static_cast<std::size_t>(base.index)];
    auto at = [&](std::size_t offset) { return b_.CreateConstGEP1_64(b_.getInt8Ty(), field, offset); };
    ::llvm::Value* data = b_.CreateLoad(b_.getPtrTy(), at(offsetof(RawField, data)));
    ::llvm::Value* ndim = b_.CreateLoad(b_.getInt32Ty(), at(offsetof(RawField, ndim)));
    ::llvm::Value* offset = nullptr;
    if (ix.by_index_array) {
        const auto& idx = static_cast<const NameExpr&>(*ix.index);
        const Local& l = kernel_.locals[static_cast<std::size_t>(idx.index)];
        offset = b_.getInt64(0);
        for (int d = 0; d < l.array_length && d < kjit::max_raw_dims; ++d) {
            ::llvm::Value* element = b_.CreateConstGEP1_64(b_.getInt8Ty(), locals_[static_cast<std::size_t>(idx.index)],
                                                          static_cast<std::uint64_t>(d) * l.type->itemsize());
            ::llvm::Value* index = convert(load(element, *l.type), DType::int64).v;
            ::llvm::Value* stride = b_.CreateLoad(b_.getInt64Ty(), at(offsetof(RawField, steps) + 8 * static_cast<std::size_t>(d)));
            ::llvm::Value* term = b_.CreateSelect(b_.CreateICmpSLT(b_.getInt32(d), ndim), b_.CreateMul(index, stride), b_.getInt64(0));
            offset = b_.CreateAdd(offset, term);
        }
    } else {
        ::llvm::Value* k = convert(expr(*ix.index), DType::int64).v;
        ::llvm::Value* contiguous = b_.CreateICmpNE(b_.CreateLoad(b_.getInt32Ty(), at(offsetof(RawField, contiguous))), b_.getInt32(0));
        ::llvm::Value* flat = b_.CreateMul(k, b_.getInt64(static_cast<std::int64_t>(t.itemsize())));
        // The strided walk only for a view that is not C-contiguous, as on the GPU.
        ::llvm::BasicBlock* from = b_.GetInsertBlock();
        ::llvm::Function* fn = from->getParent();
        auto* strided_bb = ::llvm::BasicBlock::Create(m_.getContext(), "raw.strided", fn);
        auto* done_bb = ::llvm::BasicBlock::Create(m_.getContext(), "raw.done", fn);
        b_.CreateCondBr(contiguous, done_bb, strided_bb);
        b_.SetInsertPoint(strided_bb);
        ::llvm::Value* walked = call_named("kjit_raw_offset", b_.getInt64Ty(), {field, k}, false);
        b_.CreateBr(done_bb);
        b_.SetInsertPoint(done_bb);
        ::llvm::PHINode* phi = b_.CreatePHI(b_.getInt64Ty(), 2);
        phi->addIncoming(flat, from);
        phi->addIncoming(walked, strided_bb);
        offset = phi;
    }
    return b_.CreateGEP(b_.getInt8Ty(), data, offset);
}

Val BodyLowering::member(const MemberExpr& m, ::llvm::Value* index) {
    using detail::RawField;
    const auto& base = static_cast<const NameExpr&>(*m.base);
    if (base.refers_to == NameKind::size_n) return {size_n, nullptr, DType::int64};  // CuPy's _ind.size()
    ::llvm::Value* field = raw_fields[static_cast<std::size_t>(base.index)];
    auto at = [&](std::size_t offset) { return b_.CreateConstGEP1_64(b_.getInt8Ty(), field, offset); };
    if (m.member == "ndim") return {b_.CreateLoad(b_.getInt32Ty(), at(offsetof(RawField, ndim))), nullptr, DType::int32};
    if (m.member == "size") return {b_.CreateLoad(b_.getInt64Ty(), at(offsetof(RawField, count))), nullptr, DType::int64};
    const std::size_t array = m.member == "shape" ? offsetof(RawField, extents) : offsetof(RawField, steps);
    ::llvm::Value* address = b_.CreateGEP(b_.getInt8Ty(), at(array), b_.CreateMul(index, b_.getInt64(8)));
    return {b_.CreateLoad(b_.getInt64Ty(), address), nullptr, DType::int64};
}

BodyLowering::LValue BodyLowering::lvalue(const Expr& e) {
    if (e.kind == ExprKind::index) {
        const auto& ix = static_cast<const IndexExpr&>(e);
        const auto& base = static_cast<const NameExpr&>(*ix.base);
        if (base.refers_to == NameKind::local) {  // a local array's element
            const DType t = *kernel_.locals[static_cast<std::size_t>(base.index)].type;
            ::llvm::Value* k = convert(expr(*ix.index), DType::int64).v;
            ::llvm::Value* offset = b_.CreateMul(k, b_.getInt64(static_cast<std::int64_t>(t.itemsize())));
            return {b_.CreateGEP(b_.getInt8Ty(), locals_[static_cast<std::size_t>(base.index)], offset), t};
        }
        return {raw_element(ix), *kernel_.param_types[static_cast<std::size_t>(base.index)]};
    }
    const auto& n = static_cast<const NameExpr&>(e);
    if (n.refers_to == NameKind::local)
        return {locals_[static_cast<std::size_t>(n.index)], *kernel_.locals[static_cast<std::size_t>(n.index)].type};
    if (n.refers_to == NameKind::param && param_slots[static_cast<std::size_t>(n.index)] != nullptr)
        return {param_slots[static_cast<std::size_t>(n.index)], *kernel_.param_types[static_cast<std::size_t>(n.index)]};
    throw TypeError("'" + n.name + "' cannot be assigned on the host");  // the checker rejects it first
}

Val BodyLowering::expr(const Expr& e) {
    switch (e.kind) {
        case ExprKind::int_literal: {
            const auto& l = static_cast<const IntLiteral&>(e);
            return {::llvm::ConstantInt::get(reg(*e.type), l.value), nullptr, *e.type};
        }
        case ExprKind::float_literal: {
            const auto& l = static_cast<const FloatLiteral&>(e);
            if (is_16bit(*e.type)) return convert({::llvm::ConstantFP::get(b_.getDoubleTy(), l.value), nullptr, DType::float64}, *e.type);
            // A float literal is the nearest float to the text; l.value is the nearest double, and
            // rounding that again could differ in rare halfway cases. NVRTC parses the text once.
            if (is_f32(*e.type)) return {::llvm::ConstantFP::get(b_.getFloatTy(), ::llvm::StringRef(l.text).rtrim("fF")), nullptr, *e.type};
            return {::llvm::ConstantFP::get(reg(*e.type), l.value), nullptr, *e.type};
        }
        case ExprKind::bool_literal: return {b_.getInt1(static_cast<const BoolLiteral&>(e).value), nullptr, DType::bool_};
        case ExprKind::name: {
            const auto& n = static_cast<const NameExpr&>(e);
            switch (n.refers_to) {
                case NameKind::index_i: return {index_i, nullptr, DType::int64};
                case NameKind::size_n: return {size_n, nullptr, DType::int64};
                case NameKind::local:
                    return load(locals_[static_cast<std::size_t>(n.index)], *kernel_.locals[static_cast<std::size_t>(n.index)].type);
                case NameKind::param: {
                    const auto k = static_cast<std::size_t>(n.index);
                    if (param_slots[k] != nullptr) return load(param_slots[k], *kernel_.param_types[k]);
                    return param_values[k];
                }
                case NameKind::constant: return constant(kernel_.constants[static_cast<std::size_t>(n.index)]);
                default: throw TypeError("'" + n.name + "' (a preamble function) cannot run on the host");
            }
        }
        case ExprKind::unary: return unary(static_cast<const UnaryExpr&>(e));
        case ExprKind::binary: {
            const auto& bin = static_cast<const BinaryExpr&>(e);
            if (bin.op == BinaryOp::logical_and || bin.op == BinaryOp::logical_or) return logical(bin);
            if (bin.op == BinaryOp::comma) {
                expr(*bin.lhs);
                return expr(*bin.rhs);
            }
            return binary(bin);
        }
        case ExprKind::assign: return assign(static_cast<const AssignExpr&>(e));
        case ExprKind::conditional: return conditional(static_cast<const ConditionalExpr&>(e));
        case ExprKind::cast: return convert(expr(*static_cast<const CastExpr&>(e).operand), *e.type);
        case ExprKind::call: return call(static_cast<const CallExpr&>(e));
        case ExprKind::index: {
            const auto& ix = static_cast<const IndexExpr&>(e);
            if (ix.base->kind == ExprKind::member)
                return member(static_cast<const MemberExpr&>(*ix.base), convert(expr(*ix.index), DType::int64).v);
            const LValue lv = lvalue(e);
            return load(lv.ptr, lv.type);
        }
        case ExprKind::member: return member(static_cast<const MemberExpr&>(e), nullptr);
    }
    throw TypeError("unknown expression");
}

// A named constant from its bits: CUDA's literal for it denotes exactly this value.
Val BodyLowering::constant(const NamedConstant& k) {
    if (k.type.is_bool()) return {b_.getInt1(k.bits != 0), nullptr, k.type};
    if (k.type == DType::float32)
        return {::llvm::ConstantFP::get(m_.getContext(), ::llvm::APFloat(::llvm::APFloat::IEEEsingle(), ::llvm::APInt(32, k.bits))), nullptr, k.type};
    if (k.type == DType::float64)
        return {::llvm::ConstantFP::get(m_.getContext(), ::llvm::APFloat(::llvm::APFloat::IEEEdouble(), ::llvm::APInt(64, k.bits))), nullptr, k.type};
    return {::llvm::ConstantInt::get(reg(k.type), k.bits), nullptr, k.type};
}

Val BodyLowering::unary(const UnaryExpr& u) {
    const DType t = *u.type;
    switch (u.op) {
        case UnaryOp::plus: return convert(expr(*u.operand), t);
        case UnaryOp::minus: {
            const Val v = convert(expr(*u.operand), t);
            if (v.type.is_complex()) return {b_.CreateFNeg(v.v), b_.CreateFNeg(v.im), t};
            if (is_16bit(t)) return {b_.CreateXor(v.v, b_.getInt16(0x8000)), nullptr, t};  // exact, as __hneg
            if (t.is_floating()) return {b_.CreateFNeg(v.v), nullptr, t};
            return {b_.CreateNeg(v.v), nullptr, t};
        }
        case UnaryOp::logical_not: return {b_.CreateNot(to_bool(expr(*u.operand))), nullptr, DType::bool_};
        case UnaryOp::bit_not: return {b_.CreateNot(convert(expr(*u.operand), t).v), nullptr, t};
        default: break;
    }
    // ++ and --: x = x +/- 1 in x's type (C computes in the promoted type and converts back).
    const LValue lv = lvalue(*u.operand);
    const Val old = load(lv.ptr, lv.type);
    const bool up = u.op == UnaryOp::pre_increment || u.op == UnaryOp::post_increment;
    const DType common = usual_arithmetic_conversion(lv.type, DType::int32);
    const Val one = convert({b_.getInt32(1), nullptr, DType::int32}, common);
    const Val updated = convert(apply(up ? BinaryOp::add : BinaryOp::sub, convert(old, common), one, common), lv.type);
    store(lv.ptr, updated);
    return (u.op == UnaryOp::pre_increment || u.op == UnaryOp::pre_decrement) ? updated : old;
}

Val BodyLowering::binary(const BinaryExpr& bin) {
    const Val l = expr(*bin.lhs);
    const Val r = expr(*bin.rhs);
    const DType t = *bin.operand_type;
    if (bin.op == BinaryOp::shl || bin.op == BinaryOp::shr) return apply(bin.op, convert(l, t), r, t);
    return apply(bin.op, convert(l, t), convert(r, t), t);
}

Val BodyLowering::logical(const BinaryExpr& bin) {
    // Short-circuit, as C: the right operand runs only when the left does not decide.
    ::llvm::LLVMContext& c = m_.getContext();
    ::llvm::Function* fn = b_.GetInsertBlock()->getParent();
    ::llvm::Value* l = to_bool(expr(*bin.lhs));
    ::llvm::BasicBlock* from = b_.GetInsertBlock();
    auto* rhs_bb = ::llvm::BasicBlock::Create(c, "logic.rhs", fn);
    auto* end_bb = ::llvm::BasicBlock::Create(c, "logic.end", fn);
    const bool is_and = bin.op == BinaryOp::logical_and;
    if (is_and) b_.CreateCondBr(l, rhs_bb, end_bb);
    else b_.CreateCondBr(l, end_bb, rhs_bb);
    b_.SetInsertPoint(rhs_bb);
    ::llvm::Value* r = to_bool(expr(*bin.rhs));
    ::llvm::BasicBlock* rhs_end = b_.GetInsertBlock();
    b_.CreateBr(end_bb);
    b_.SetInsertPoint(end_bb);
    ::llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getInt1(!is_and), from);
    phi->addIncoming(r, rhs_end);
    return {phi, nullptr, DType::bool_};
}

Val BodyLowering::assign(const AssignExpr& a) {
    const LValue lv = lvalue(*a.target);
    if (a.op == AssignOp::assign) {
        const Val v = convert(expr(*a.value), lv.type);
        store(lv.ptr, v);
        return v;
    }
    // x op= y: x = (type of x)(x op y), computed in the common type (shifts: x's promoted type).
    const Val old = load(lv.ptr, lv.type);
    const Val v = expr(*a.value);
    const BinaryOp op = binary_of(a.op);
    Val result;
    if (op == BinaryOp::shl || op == BinaryOp::shr) {
        const DType t = promote_integer(lv.type);
        result = apply(op, convert(old, t), v, t);
    } else {
        const DType t = usual_arithmetic_conversion(lv.type, v.type);
        result = apply(op, convert(old, t), convert(v, t), t);
    }
    const Val stored = convert(result, lv.type);
    store(lv.ptr, stored);
    return stored;
}

Val BodyLowering::conditional(const ConditionalExpr& ce) {
    ::llvm::LLVMContext& c = m_.getContext();
    ::llvm::Function* fn = b_.GetInsertBlock()->getParent();
    const DType t = *ce.type;
    ::llvm::Value* cond = to_bool(expr(*ce.condition));
    auto* t_bb = ::llvm::BasicBlock::Create(c, "cond.true", fn);
    auto* f_bb = ::llvm::BasicBlock::Create(c, "cond.false", fn);
    auto* end_bb = ::llvm::BasicBlock::Create(c, "cond.end", fn);
    b_.CreateCondBr(cond, t_bb, f_bb);
    b_.SetInsertPoint(t_bb);
    const Val tv = convert(expr(*ce.if_true), t);
    ::llvm::BasicBlock* t_end = b_.GetInsertBlock();
    b_.CreateBr(end_bb);
    b_.SetInsertPoint(f_bb);
    const Val fv = convert(expr(*ce.if_false), t);
    ::llvm::BasicBlock* f_end = b_.GetInsertBlock();
    b_.CreateBr(end_bb);
    b_.SetInsertPoint(end_bb);
    auto phi = [&](::llvm::Value* x, ::llvm::Value* y) {
        ::llvm::PHINode* p = b_.CreatePHI(x->getType(), 2);
        p->addIncoming(x, t_end);
        p->addIncoming(y, f_end);
        return p;
    };
    return {phi(tv.v, fv.v), t.is_complex() ? phi(tv.im, fv.im) : nullptr, t};
}

Val BodyLowering::int_divide(BinaryOp op, const Val& a, const Val& b, DType t) {
    // C leaves x / 0 and INT_MIN / -1 undefined and x86 traps on both; the GPU returns a value.
    // kjit defines them as PTX computes them: x / 0 is all ones (-1 signed), x % 0 is x,
    // INT_MIN / -1 is INT_MIN and INT_MIN % -1 is 0 (docs/HOST.md).
    ::llvm::Value* zero = ::llvm::ConstantInt::get(a.v->getType(), 0);
    ::llvm::Value* one = ::llvm::ConstantInt::get(a.v->getType(), 1);
    ::llvm::Value* by_zero = b_.CreateICmpEQ(b.v, zero);
    ::llvm::Value* unsafe = by_zero;
    if (t.is_signed()) {
        ::llvm::Value* min = ::llvm::ConstantInt::get(a.v->getType(), ::llvm::APInt::getSignedMinValue(static_cast<unsigned>(bits(t))));
        ::llvm::Value* overflow = b_.CreateAnd(b_.CreateICmpEQ(a.v, min), b_.CreateICmpEQ(b.v, ::llvm::ConstantInt::getSigned(a.v->getType(), -1)));
        unsafe = b_.CreateOr(by_zero, overflow);
    }
    ::llvm::Value* divisor = b_.CreateSelect(unsafe, one, b.v);  // INT_MIN / 1 = INT_MIN, INT_MIN % 1 = 0
    if (op == BinaryOp::div) {
        ::llvm::Value* q = t.is_signed() ? b_.CreateSDiv(a.v, divisor) : b_.CreateUDiv(a.v, divisor);
        return {b_.CreateSelect(by_zero, ::llvm::Constant::getAllOnesValue(a.v->getType()), q), nullptr, t};
    }
    ::llvm::Value* r = t.is_signed() ? b_.CreateSRem(a.v, divisor) : b_.CreateURem(a.v, divisor);
    return {b_.CreateSelect(by_zero, a.v, r), nullptr, t};
}

Val BodyLowering::complex_helper(const char* name, DType t, const Val& a, const Val* b) {
    ::llvm::Type* p = part(t);
    ::llvm::Value* out = slot(t);
    ::llvm::Value* zero = ::llvm::ConstantFP::get(p, 0.0);
    const std::string fn = std::string("kjit_c") + name + (t.id() == DType::complex64 ? "_f" : "_d");
    call_named(fn, b_.getVoidTy(), {a.v, a.im, b ? b->v : zero, b ? b->im : zero, out});
    return load(out, t);
}

Val BodyLowering::apply(BinaryOp op, const Val& a, const Val& b, DType t) {
    switch (op) {
        case BinaryOp::logical_and: return {b_.CreateAnd(to_bool(a), to_bool(b)), nullptr, DType::bool_};
        case BinaryOp::logical_or: return {b_.CreateOr(to_bool(a), to_bool(b)), nullptr, DType::bool_};
        default: break;
    }
    if (is_16bit(t)) {
        // CUDA's __half operators: the exact result rounded to 16 bits; computing in float and
        // rounding once gives the same (float holds the exact sum, product, and a correctly
        // rounded quotient rounds the same way).
        const Val r = apply(op, {half_to_float(a), nullptr, DType::float32}, {half_to_float(b), nullptr, DType::float32}, DType::float32);
        return r.type.is_bool() ? r : float_to_half(r.v, t);
    }
    if (t.is_complex()) {
        switch (op) {
            case BinaryOp::add: return {b_.CreateFAdd(a.v, b.v), b_.CreateFAdd(a.im, b.im), t};
            case BinaryOp::sub: return {b_.CreateFSub(a.v, b.v), b_.CreateFSub(a.im, b.im), t};
            case BinaryOp::mul:
                return {b_.CreateFSub(b_.CreateFMul(a.v, b.v), b_.CreateFMul(a.im, b.im)),
                        b_.CreateFAdd(b_.CreateFMul(a.v, b.im), b_.CreateFMul(a.im, b.v)), t};
            case BinaryOp::div: return complex_helper("div", t, a, &b);  // Smith's algorithm
            case BinaryOp::eq: return {b_.CreateAnd(b_.CreateFCmpOEQ(a.v, b.v), b_.CreateFCmpOEQ(a.im, b.im)), nullptr, DType::bool_};
            case BinaryOp::ne: return {b_.CreateOr(b_.CreateFCmpUNE(a.v, b.v), b_.CreateFCmpUNE(a.im, b.im)), nullptr, DType::bool_};
            default: throw TypeError("this operator is not defined for complex numbers");
        }
    }
    if (t.is_floating()) {
        switch (op) {
            case BinaryOp::add: return {b_.CreateFAdd(a.v, b.v), nullptr, t};
            case BinaryOp::sub: return {b_.CreateFSub(a.v, b.v), nullptr, t};
            case BinaryOp::mul: return {b_.CreateFMul(a.v, b.v), nullptr, t};
            case BinaryOp::div: return {b_.CreateFDiv(a.v, b.v), nullptr, t};
            case BinaryOp::lt: return {b_.CreateFCmpOLT(a.v, b.v), nullptr, DType::bool_};
            case BinaryOp::gt: return {b_.CreateFCmpOGT(a.v, b.v), nullptr, DType::bool_};
            case BinaryOp::le: return {b_.CreateFCmpOLE(a.v, b.v), nullptr, DType::bool_};
            case BinaryOp::ge: return {b_.CreateFCmpOGE(a.v, b.v), nullptr, DType::bool_};
            case BinaryOp::eq: return {b_.CreateFCmpOEQ(a.v, b.v), nullptr, DType::bool_};
            case BinaryOp::ne: return {b_.CreateFCmpUNE(a.v, b.v), nullptr, DType::bool_};
            default: throw TypeError("this operator is not defined for floating-point numbers");
        }
    }
    const bool s = t.is_signed();
    switch (op) {
        case BinaryOp::add: return {b_.CreateAdd(a.v, b.v), nullptr, t};  // wraps, as the GPU does
        case BinaryOp::sub: return {b_.CreateSub(a.v, b.v), nullptr, t};
        case BinaryOp::mul: return {b_.CreateMul(a.v, b.v), nullptr, t};
        case BinaryOp::div:
        case BinaryOp::mod: return int_divide(op, a, b, t);
        case BinaryOp::bit_and: return {b_.CreateAnd(a.v, b.v), nullptr, t};
        case BinaryOp::bit_or: return {b_.CreateOr(a.v, b.v), nullptr, t};
        case BinaryOp::bit_xor: return {b_.CreateXor(a.v, b.v), nullptr, t};
        case BinaryOp::shl:
        case BinaryOp::shr: {
            // `b` is the shift count in its own type. PTX clamps counts at the width: << gives 0,
            // >> gives 0 or the sign (C leaves it undefined, LLVM makes it poison).
            const Val count = convert(b, b.type.is_signed() || b.type.is_bool() ? DType(DType::uint64) : b.type);
            ::llvm::Value* n = b_.CreateZExtOrTrunc(convert(count, DType::uint64).v, b_.getInt64Ty());
            ::llvm::Value* within = b_.CreateICmpULT(n, b_.getInt64(static_cast<std::uint64_t>(bits(t))));
            ::llvm::Value* amount = b_.CreateTrunc(b_.CreateSelect(within, n, b_.getInt64(static_cast<std::uint64_t>(bits(t) - 1))), a.v->getType());
            ::llvm::Value* zero = ::llvm::ConstantInt::get(a.v->getType(), 0);
            if (op == BinaryOp::shl) return {b_.CreateSelect(within, b_.CreateShl(a.v, amount), zero), nullptr, t};
            if (s) return {b_.CreateAShr(a.v, amount), nullptr, t};
            return {b_.CreateSelect(within, b_.CreateLShr(a.v, amount), zero), nullptr, t};
        }
        case BinaryOp::lt: return {s ? b_.CreateICmpSLT(a.v, b.v) : b_.CreateICmpULT(a.v, b.v), nullptr, DType::bool_};
        case BinaryOp::gt: return {s ? b_.CreateICmpSGT(a.v, b.v) : b_.CreateICmpUGT(a.v, b.v), nullptr, DType::bool_};
        case BinaryOp::le: return {s ? b_.CreateICmpSLE(a.v, b.v) : b_.CreateICmpULE(a.v, b.v), nullptr, DType::bool_};
        case BinaryOp::ge: return {s ? b_.CreateICmpSGE(a.v, b.v) : b_.CreateICmpUGE(a.v, b.v), nullptr, DType::bool_};
        case BinaryOp::eq: return {b_.CreateICmpEQ(a.v, b.v), nullptr, DType::bool_};
        case BinaryOp::ne: return {b_.CreateICmpNE(a.v, b.v), nullptr, DType::bool_};
        default: break;
    }
    throw TypeError("unsupported operator");
}

Val BodyLowering::call(const CallExpr& c) {
    if (const AtomicFunction* a = find_atomic_function(c.callee)) return atomic(c, *a);
    const MathFunction* f = find_math_function(c.callee);
    if (f == nullptr) throw TypeError("'" + c.callee + "' is declared in the preamble (raw CUDA): it cannot run on the host");
    std::vector<Val> args;
    std::vector<DType> types;
    for (const ExprPtr& a : c.args) {
        args.push_back(expr(*a));
        types.push_back(args.back().type);
    }
    const DType compute = math_compute_type(*f, types);
    const DType result = *c.type;
    const std::string name(f->name);
    const bool single = is_f32(compute.real_type());
    auto fp = [&](double v) { return ::llvm::ConstantFP::get(part(compute), v); };
    auto libm = [&](const std::string& base, const std::vector<::llvm::Value*>& xs) {
        return call_named(base + (single ? "f" : ""), part(compute), xs);
    };
    // Reals given to the complex-only functions (as the CUDA path spells them).
    if (!compute.is_complex() && (f->kind == MathKind::complex_part || f->kind == MathKind::conj)) {
        if (name == "real" || name == "conj") return convert(args[0], result);
        if (name == "imag") return convert(zero(compute), result);
        const Val x = convert(args[0], compute);
        if (name == "norm") return convert(apply(BinaryOp::mul, x, x, compute), result);
        return convert({libm("atan2", {fp(0.0), x.v}), nullptr, compute}, result);  // arg
    }
    if (f->kind == MathKind::abs && compute.kind() == DTypeKind::unsigned_int) return convert(args[0], result);
    std::vector<Val> xs;
    for (std::size_t k = 0; k < args.size(); ++k)
        xs.push_back(convert(args[k], (f->kind == MathKind::ldexp && k == 1) ? DType(DType::int32) : compute));
    Val r;
    if (compute.is_complex()) {
        const Val& z = xs[0];
        if (name == "real") r = {z.v, nullptr, compute.real_type()};
        else if (name == "imag") r = {z.im, nullptr, compute.real_type()};
        else if (name == "conj") r = {z.v, b_.CreateFNeg(z.im), compute};
        else if (name == "abs") r = {libm("hypot", {z.v, z.im}), nullptr, compute.real_type()};
        else if (name == "arg") r = {libm("atan2", {z.im, z.v}), nullptr, compute.real_type()};
        else if (name == "norm") r = {b_.CreateFAdd(b_.CreateFMul(z.v, z.v), b_.CreateFMul(z.im, z.im)), nullptr, compute.real_type()};
        else r = complex_helper(name.c_str(), compute, z, xs.size() > 1 ? &xs[1] : nullptr);
        return convert(r, result);
    }
    if (f->kind == MathKind::predicate) {
        const Val& x = xs[0];
        ::llvm::Value* v = nullptr;
        if (!compute.is_floating()) {  // an integer: finite, never NaN
            if (name == "isfinite") v = b_.getTrue();
            else if (name == "signbit") v = compute.is_signed() ? b_.CreateICmpSLT(x.v, ::llvm::ConstantInt::get(x.v->getType(), 0)) : b_.getFalse();
            else v = b_.getFalse();
        } else if (name == "isnan") {
            v = b_.CreateFCmpUNO(x.v, x.v);
        } else if (name == "isinf") {
            v = b_.CreateFCmpOEQ(intrinsic(::llvm::Intrinsic::fabs, {x.v}), fp(std::numeric_limits<double>::infinity()));
        } else if (name == "isfinite") {
            v = b_.CreateFCmpOLT(intrinsic(::llvm::Intrinsic::fabs, {x.v}), fp(std::numeric_limits<double>::infinity()));
        } else {  // signbit
            ::llvm::Type* it = b_.getIntNTy(x.v->getType()->getPrimitiveSizeInBits());
            v = b_.CreateICmpSLT(b_.CreateBitCast(x.v, it), ::llvm::ConstantInt::get(it, 0));
        }
        return convert({v, nullptr, DType::bool_}, result);
    }
    if (!compute.is_floating()) {  // integer min, max, abs
        const bool s = compute.is_signed();
        ::llvm::Value* a = xs[0].v;
        if (f->kind == MathKind::abs) r = {b_.CreateSelect(b_.CreateICmpSLT(a, ::llvm::ConstantInt::get(a->getType(), 0)), b_.CreateNeg(a), a), nullptr, compute};
        else {
            ::llvm::Value* bb = xs[1].v;
            ::llvm::Value* less = s ? b_.CreateICmpSLT(a, bb) : b_.CreateICmpULT(a, bb);
            r = {name == "min" ? b_.CreateSelect(less, a, bb) : b_.CreateSelect(less, bb, a), nullptr, compute};
        }
        return convert(r, result);
    }
    std::vector<::llvm::Value*> v;
    for (const Val& x : xs) v.push_back(x.v);
    // Intrinsics where LLVM knows the function (they vectorise); glibc for the rest; kjit's own
    // helpers for CUDA's functions glibc lacks.
    static const std::pair<const char*, unsigned> intrinsics[] = {
        {"sqrt", ::llvm::Intrinsic::sqrt},   {"fabs", ::llvm::Intrinsic::fabs},     {"abs", ::llvm::Intrinsic::fabs},
        {"floor", ::llvm::Intrinsic::floor}, {"ceil", ::llvm::Intrinsic::ceil},     {"trunc", ::llvm::Intrinsic::trunc},
        {"rint", ::llvm::Intrinsic::rint},   {"nearbyint", ::llvm::Intrinsic::nearbyint}, {"round", ::llvm::Intrinsic::round},
        {"fma", ::llvm::Intrinsic::fma},     {"copysign", ::llvm::Intrinsic::copysign},
        {"fmin", ::llvm::Intrinsic::minnum}, {"fmax", ::llvm::Intrinsic::maxnum},
        {"min", ::llvm::Intrinsic::minnum},  {"max", ::llvm::Intrinsic::maxnum},
    };
    static const char* const helpers[] = {"rsqrt", "rcbrt", "sinpi", "cospi", "erfinv", "erfcinv", "normcdf", "normcdfinv"};
    ::llvm::Value* out = nullptr;
    for (const auto& [n, id] : intrinsics)
        if (name == n) out = intrinsic(id, v);
    for (const char* h : helpers)
        if (name == h) out = call_named(std::string("kjit_") + h + (single ? "f" : ""), part(compute), v);
    if (out == nullptr) out = libm(name, v);
    return convert({out, nullptr, compute}, result);
}

}  // namespace kjit::jit::host::llvm
