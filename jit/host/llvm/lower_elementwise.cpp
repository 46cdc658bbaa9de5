#include "jit/host/llvm/lower_elementwise.hpp"

#include <cstddef>

#include <llvm/IR/IRBuilder.h>

#include "jit/frontend/ast.hpp"
#include "jit/host/llvm/lower_body.hpp"

namespace kjit::jit::host::llvm {

using namespace frontend;

namespace {

struct Operand {
    std::size_t param;
    int slot;
    DType stored;
    bool output;
};

}  // namespace

::llvm::Function* lower_elementwise(::llvm::Module& m, const ElementwiseRequest& r, bool contiguous, const std::string& symbol) {
    ::llvm::LLVMContext& c = m.getContext();
    ::llvm::IRBuilder<> b(c);
    ::llvm::Type* ptr = b.getPtrTy();
    ::llvm::Type* i64 = b.getInt64Ty();
    auto* type = ::llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, i64, i64}, false);
    ::llvm::Function* fn = ::llvm::Function::Create(type, ::llvm::Function::ExternalLinkage, symbol, m);
    fn->setDoesNotThrow();
    ::llvm::Value* args = fn->getArg(0);
    ::llvm::Value* layout = fn->getArg(1);
    ::llvm::Value* begin = fn->getArg(2);
    ::llvm::Value* end = fn->getArg(3);

    auto* entry = ::llvm::BasicBlock::Create(c, "entry", fn);
    b.SetInsertPoint(entry);
    const CheckedKernel& k = *r.kernel;
    BodyLowering body(b, m, k, entry);
    body.make_locals();
    auto field = [&](::llvm::Value* base, std::size_t offset) { return b.CreateConstGEP1_64(b.getInt8Ty(), base, offset); };

    std::vector<Operand> operands;
    std::vector<::llvm::Value*> base_of;  // by slot
    int slots = 0;
    for (std::size_t p = 0; p < k.params.size(); ++p) {
        const DType t = *k.param_types[p];
        const std::size_t at = r.args.slots[p].offset;
        if (k.params[p].raw) {
            body.raw_fields[p] = field(args, at);
        } else if (p < r.scalar.size() && r.scalar[p]) {
            body.param_values[p] = body.load(field(args, at), t);  // written as the parameter's type
        } else {
            const DType stored = p < r.storage.size() && r.storage[p] ? *r.storage[p] : t;
            operands.push_back({p, slots, stored, k.params[p].is_output});
            base_of.push_back(b.CreateLoad(ptr, field(layout, offsetof(detail::CallLayout, data) + static_cast<std::size_t>(slots) * 8)));
            if (k.params[p].is_output) body.param_slots[p] = body.slot(t);
            ++slots;
        }
    }
    body.size_n = b.CreateLoad(i64, field(args, r.args.n_offset));

    // One element: inputs loaded (converted from how they are stored), outputs' old values where
    // the body needs them, the body, outputs stored. `address(o)` is operand o's element.
    auto element = [&](::llvm::Value* index, const std::function<::llvm::Value*(const Operand&)>& address) {
        body.index_i = index;
        for (const Operand& o : operands) {
            const DType t = *k.param_types[o.param];
            if (!o.output) {
                body.param_values[o.param] = body.convert(body.load(address(o), o.stored), t);
            } else if (k.param_read[o.param] || !definitely_assigned(*r.body, static_cast<int>(o.param))) {
                body.store(body.param_slots[o.param], body.load(address(o), t));
            }
        }
        body.statements(*r.body);
        if (b.GetInsertBlock()->getTerminator() != nullptr)  // only after a stray break: unreachable
            b.SetInsertPoint(::llvm::BasicBlock::Create(c, "dead", fn));
        for (const Operand& o : operands)
            if (o.output) body.store(address(o), body.load(body.param_slots[o.param], *k.param_types[o.param]));
    };
    auto at_offset = [&](const Operand& o, ::llvm::Value* offset) {
        return b.CreateGEP(b.getInt8Ty(), base_of[static_cast<std::size_t>(o.slot)],
                           b.CreateMul(offset, b.getInt64(static_cast<std::int64_t>(o.stored.itemsize()))));
    };

    // A counted loop from `from` to `to` (i64), body(e) emitted at the loop's position.
    auto counted = [&](::llvm::Value* from, ::llvm::Value* to, const std::function<void(::llvm::Value*)>& each) {
        ::llvm::BasicBlock* before = b.GetInsertBlock();
        auto* loop = ::llvm::BasicBlock::Create(c, "loop", fn);
        auto* exit = ::llvm::BasicBlock::Create(c, "loop.exit", fn);
        b.CreateCondBr(b.CreateICmpSLT(from, to), loop, exit);
        b.SetInsertPoint(loop);
        ::llvm::PHINode* e = b.CreatePHI(i64, 2);
        e->addIncoming(from, before);
        each(e);
        ::llvm::Value* next = b.CreateAdd(e, b.getInt64(1));
        e->addIncoming(next, b.GetInsertBlock());
        b.CreateCondBr(b.CreateICmpSLT(next, to), loop, exit);
        b.SetInsertPoint(exit);
    };

    // CuPy's loop_prep and after_loop, once per chunk around its elements (a GPU thread's loop).
    if (r.hooks != nullptr) body.statements(r.hooks->prep);
    if (contiguous) {
        counted(begin, end, [&](::llvm::Value* e) { element(e, [&](const Operand& o) { return at_offset(o, e); }); });
    } else {
        // Rows of the innermost dimension: the row's start offsets from the index (a division per
        // dimension, once per row), then a loop with each operand's innermost stride.
        const std::size_t shape_at = offsetof(detail::CallLayout, shape);
        const std::size_t strides_at = offsetof(detail::CallLayout, strides);
        ::llvm::Value* ndim = b.CreateSExt(b.CreateLoad(b.getInt32Ty(), field(layout, offsetof(detail::CallLayout, ndim))), i64);
        ::llvm::Value* last = b.CreateSub(ndim, b.getInt64(1));
        auto shape = [&](::llvm::Value* d) { return b.CreateLoad(i64, b.CreateGEP(i64, field(layout, shape_at), d)); };
        auto stride = [&](int s, ::llvm::Value* d) {
            return b.CreateLoad(i64, b.CreateGEP(i64, field(layout, strides_at + static_cast<std::size_t>(s) * detail::kMaxCallDims * 8), d));
        };
        ::llvm::Value* inner = shape(last);
        std::vector<::llvm::Value*> inner_stride, offset_slot;
        for (int s = 0; s < slots; ++s) {
            inner_stride.push_back(stride(s, last));
            offset_slot.push_back(body.slot(DType::int64));
        }
        ::llvm::Value* row_start = body.slot(DType::int64);
        b.CreateStore(begin, row_start);
        auto* rows = ::llvm::BasicBlock::Create(c, "rows", fn);
        auto* row = ::llvm::BasicBlock::Create(c, "row", fn);
        auto* done = ::llvm::BasicBlock::Create(c, "rows.done", fn);
        b.CreateBr(rows);
        b.SetInsertPoint(rows);
        ::llvm::Value* e = b.CreateLoad(i64, row_start);
        b.CreateCondBr(b.CreateICmpSLT(e, end), row, done);
        b.SetInsertPoint(row);
        for (int s = 0; s < slots; ++s) b.CreateStore(b.getInt64(0), offset_slot[static_cast<std::size_t>(s)]);
        // Offsets of element e: peel coordinates from the innermost dimension out.
        ::llvm::Value* column = b.CreateSRem(e, inner);
        ::llvm::Value* rest = body.slot(DType::int64);
        b.CreateStore(e, rest);
        counted(b.getInt64(0), ndim, [&](::llvm::Value* j) {
            ::llvm::Value* d = b.CreateSub(last, j);
            ::llvm::Value* extent = shape(d);
            ::llvm::Value* x = b.CreateLoad(i64, rest);
            ::llvm::Value* coordinate = b.CreateSRem(x, extent);
            b.CreateStore(b.CreateSDiv(x, extent), rest);
            for (int s = 0; s < slots; ++s) {
                ::llvm::Value* o = offset_slot[static_cast<std::size_t>(s)];
                b.CreateStore(b.CreateAdd(b.CreateLoad(i64, o), b.CreateMul(coordinate, stride(s, d))), o);
            }
        });
        ::llvm::Value* in_row = b.CreateSub(inner, column);
        ::llvm::Value* left = b.CreateSub(end, e);
        ::llvm::Value* count = b.CreateSelect(b.CreateICmpSLT(in_row, left), in_row, left);
        std::vector<::llvm::Value*> start;
        for (int s = 0; s < slots; ++s) start.push_back(b.CreateLoad(i64, offset_slot[static_cast<std::size_t>(s)]));
        counted(b.getInt64(0), count, [&](::llvm::Value* j) {
            element(b.CreateAdd(e, j), [&](const Operand& o) {
                const auto s = static_cast<std::size_t>(o.slot);
                return at_offset(o, b.CreateAdd(start[s], b.CreateMul(j, inner_stride[s])));
            });
        });
        b.CreateStore(b.CreateAdd(e, count), row_start);
        b.CreateBr(rows);
        b.SetInsertPoint(done);
    }
    if (r.hooks != nullptr) body.statements(r.hooks->after);
    b.CreateRetVoid();
    return fn;
}

}  // namespace kjit::jit::host::llvm
