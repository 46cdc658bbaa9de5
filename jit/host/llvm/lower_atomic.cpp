// The host back end's checked atomics (jit/frontend/atomic_functions.hpp): BodyLowering::atomic.
#include "jit/host/llvm/lower_body.hpp"

#include "kjit/error.hpp"

namespace kjit::jit::host::llvm {

using namespace frontend;

// CUDA's atomics are relaxed (no ordering beyond the one location): LLVM's monotonic. Float16 and
// bfloat16 (kept as their bits) add through a compare-and-swap loop that rounds each sum to the
// type, as the GPU's atomicAdd on them does.
Val BodyLowering::atomic(const CallExpr& c, const AtomicFunction& f) {
    const LValue lv = lvalue(*c.args[0]);
    const DType t = lv.type;
    std::vector<Val> v;
    for (std::size_t k = 1; k < c.args.size(); ++k) v.push_back(convert(expr(*c.args[k]), t));
    const auto order = ::llvm::AtomicOrdering::Monotonic;
    const ::llvm::MaybeAlign align(t.itemsize());
    using Rmw = ::llvm::AtomicRMWInst::BinOp;
    switch (f.op) {
        case AtomicOp::add: {
            if (!(t == DType::float16 || t == DType::bfloat16)) return {b_.CreateAtomicRMW(t.is_floating() ? Rmw::FAdd : Rmw::Add, lv.ptr, v[0].v, align, order), nullptr, t};
            ::llvm::Function* fn = b_.GetInsertBlock()->getParent();
            ::llvm::BasicBlock* before = b_.GetInsertBlock();
            ::llvm::Value* first = b_.CreateLoad(reg(t), lv.ptr);
            auto* loop = ::llvm::BasicBlock::Create(m_.getContext(), "atomic.add", fn);
            auto* done = ::llvm::BasicBlock::Create(m_.getContext(), "atomic.done", fn);
            b_.CreateBr(loop);
            b_.SetInsertPoint(loop);
            ::llvm::PHINode* old = b_.CreatePHI(reg(t), 2);
            old->addIncoming(first, before);
            const Val sum = apply(BinaryOp::add, {old, nullptr, t}, v[0], t);
            ::llvm::Value* swapped = b_.CreateAtomicCmpXchg(lv.ptr, old, sum.v, align, order, order);
            ::llvm::Value* seen = b_.CreateExtractValue(swapped, 0);
            old->addIncoming(seen, b_.GetInsertBlock());
            b_.CreateCondBr(b_.CreateExtractValue(swapped, 1), done, loop);
            b_.SetInsertPoint(done);
            return {old, nullptr, t};
        }
        case AtomicOp::min:
        case AtomicOp::max: {
            // Floats: LLVM's fmin/fmax are minnum/maxnum, the GPU's fminf/fmaxf (NaN loses).
            const bool is_signed = t.is_signed();
            const Rmw op = t.is_floating() ? (f.op == AtomicOp::min ? Rmw::FMin : Rmw::FMax)
                           : f.op == AtomicOp::min ? (is_signed ? Rmw::Min : Rmw::UMin)
                                                   : (is_signed ? Rmw::Max : Rmw::UMax);
            return {b_.CreateAtomicRMW(op, lv.ptr, v[0].v, align, order), nullptr, t};
        }
        case AtomicOp::exch: return {b_.CreateAtomicRMW(Rmw::Xchg, lv.ptr, v[0].v, align, order), nullptr, t};
        case AtomicOp::cas: {
            ::llvm::Value* swapped = b_.CreateAtomicCmpXchg(lv.ptr, v[0].v, v[1].v, align, order, order);
            return {b_.CreateExtractValue(swapped, 0), nullptr, t};
        }
    }
    throw TypeError("unknown atomic " + c.callee);
}

}  // namespace kjit::jit::host::llvm
