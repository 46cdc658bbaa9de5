#include "jit/host/llvm/lower_reduction.hpp"

#include <functional>

#include <llvm/IR/IRBuilder.h>

#include "jit/host/llvm/lower_body.hpp"

namespace kjit::jit::host::llvm {

using namespace frontend;

namespace {

using ::llvm::Value;

// A running value: one Val per field of the reduce type (a dtype is one field).
using Running = std::vector<Val>;

// A piece whose body assigns `_kjit_r` (map, reduce, identity; a struct's fields as _kjit_r.f):
// its lowering and the slots of the result.
struct ExpressionPiece {
    BodyLowering body;
    std::vector<Value*> result;
    const codegen::ReduceValueLayout& layout;
    ExpressionPiece(::llvm::IRBuilder<>& b, ::llvm::Module& m, const codegen::ReductionPiece& piece, ::llvm::BasicBlock* entry,
                    const codegen::ReduceValueLayout& l)
        : body(b, m, piece.kernel, entry), layout(l) {
        body.make_locals();
        // The result's fields are the piece's last parameters.
        const std::size_t first = piece.kernel.params.size() - l.fields.size();
        for (std::size_t f = 0; f < l.fields.size(); ++f) {
            result.push_back(body.slot(l.fields[f].type));
            body.param_slots[first + f] = result.back();
        }
    }
    Running value() {
        Running v;
        for (std::size_t f = 0; f < layout.fields.size(); ++f) v.push_back(body.load(result[f], layout.fields[f].type));
        return v;
    }
};

::llvm::Function* start_function(::llvm::Module& m, const std::string& symbol, std::vector<::llvm::Type*> params) {
    ::llvm::LLVMContext& c = m.getContext();
    auto* type = ::llvm::FunctionType::get(::llvm::Type::getVoidTy(c), params, false);
    ::llvm::Function* fn = ::llvm::Function::Create(type, ::llvm::Function::ExternalLinkage, symbol, m);
    fn->setDoesNotThrow();
    ::llvm::BasicBlock::Create(c, "entry", fn);
    return fn;
}

Val select(::llvm::IRBuilder<>& b, Value* condition, const Val& yes, const Val& no) {
    Val v{b.CreateSelect(condition, yes.v, no.v), nullptr, yes.type};
    if (yes.im != nullptr) v.im = b.CreateSelect(condition, yes.im, no.im);
    return v;
}

Running select(::llvm::IRBuilder<>& b, Value* condition, const Running& yes, const Running& no) {
    Running v;
    for (std::size_t f = 0; f < yes.size(); ++f) v.push_back(select(b, condition, yes[f], no[f]));
    return v;
}

// A counted loop [from, to) of i64, `each(e)` emitted in its body.
void counted(::llvm::IRBuilder<>& b, ::llvm::Function* fn, Value* from, Value* to, const std::function<void(Value*)>& each) {
    ::llvm::LLVMContext& c = fn->getContext();
    ::llvm::BasicBlock* before = b.GetInsertBlock();
    auto* loop = ::llvm::BasicBlock::Create(c, "loop", fn);
    auto* exit = ::llvm::BasicBlock::Create(c, "loop.exit", fn);
    b.CreateCondBr(b.CreateICmpSLT(from, to), loop, exit);
    b.SetInsertPoint(loop);
    ::llvm::PHINode* e = b.CreatePHI(b.getInt64Ty(), 2);
    e->addIncoming(from, before);
    each(e);
    Value* next = b.CreateAdd(e, b.getInt64(1));
    e->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpSLT(next, to), loop, exit);
    b.SetInsertPoint(exit);
}

class ReductionLowering {
public:
    ReductionLowering(::llvm::Module& m, const ReductionRequest& r)
        : m_(m), r_(r), c_(*r.reduction), b_(m.getContext()), rt_(codegen::reduce_value_layout(c_)) {}

    void fold(const std::string& symbol);
    void fold_columns(const std::string& symbol);
    void combine(const std::string& symbol);
    void identity(const std::string& symbol);
    void post(const std::string& symbol);

private:
    struct Operand {
        std::size_t param;
        DType stored;
        Value* base;    // pointer to the call's first element
        Value* stride;  // elements
    };

    Value* field(Value* base, std::size_t offset) { return b_.CreateConstGEP1_64(b_.getInt8Ty(), base, offset); }
    Value* element_at(Value* base, Value* index, DType t) {
        return b_.CreateGEP(b_.getInt8Ty(), base, b_.CreateMul(index, b_.getInt64(static_cast<std::int64_t>(t.itemsize()))));
    }
    // The map's inputs in a lowered function: raw and scalar parameters loaded once into `map`,
    // array inputs as operands (first element, stride) from the offset and stride arrays; with
    // `in_step`, each array input's column step too, into `steps`.
    std::vector<Operand> bind_inputs(ExpressionPiece& map, Value* args, Value* in_off, Value* in_stride,
                                     Value* in_step = nullptr, std::vector<Value*>* steps = nullptr);
    // A running value in memory (a lane, a partial result): its fields at their offsets.
    Running load(BodyLowering& body, Value* at) {
        Running v;
        for (const codegen::ReduceValueField& f : rt_.fields) v.push_back(body.load(field(at, f.offset), f.type));
        return v;
    }
    void store(BodyLowering& body, Value* at, const Running& v) {
        for (std::size_t f = 0; f < rt_.fields.size(); ++f) body.store(field(at, rt_.fields[f].offset), v[f]);
    }
    // reduce(a, b) lowered at the builder's position.
    Running reduce(ExpressionPiece& red, const Running& a, const Running& x) {
        const std::size_t k = rt_.fields.size();
        for (std::size_t f = 0; f < k; ++f) {
            red.body.param_values[f] = a[f];
            red.body.param_values[k + f] = x[f];
        }
        red.body.statements(c_.reduce.body);
        return red.value();
    }
    // The lane at (value, ok) takes x: reduce(lane, x), or x when the lane holds nothing yet.
    void take(ExpressionPiece& red, Value* value, Value* ok, const Running& x) {
        const Running current = load(red.body, value);
        Running next = reduce(red, current, x);
        if (!c_.has_identity) {
            Value* has = b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), ok), b_.getInt8(0));
            next = select(b_, has, next, x);
            b_.CreateStore(b_.getInt8(1), ok);
        }
        store(red.body, value, next);
    }

    ::llvm::Module& m_;
    const ReductionRequest& r_;
    const codegen::CheckedReduction& c_;
    ::llvm::IRBuilder<> b_;
    const codegen::ReduceValueLayout rt_;
};

std::vector<ReductionLowering::Operand> ReductionLowering::bind_inputs(ExpressionPiece& map, Value* args, Value* in_off,
                                                                      Value* in_stride, Value* in_step,
                                                                      std::vector<Value*>* steps) {
    ::llvm::Type* ptr = b_.getPtrTy();
    ::llvm::Type* i64 = b_.getInt64Ty();
    std::vector<Operand> operands;
    const CheckedKernel& mk = c_.map.kernel;
    for (std::size_t p = 0; p + rt_.fields.size() < mk.params.size(); ++p) {
        const DType t = *mk.param_types[p];
        const std::size_t at = r_.args.slots[p].offset;
        if (mk.params[p].raw) {
            map.body.raw_fields[p] = field(args, at);
        } else if (p < r_.scalar.size() && r_.scalar[p]) {
            map.body.param_values[p] = map.body.load(field(args, at), t);
        } else {
            const DType stored = p < r_.storage.size() && r_.storage[p] ? *r_.storage[p] : t;
            const auto s = static_cast<std::uint64_t>(operands.size());
            Value* first = b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, in_off, s));
            Value* base = element_at(b_.CreateLoad(ptr, field(args, at)), first, stored);
            operands.push_back({p, stored, base, b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, in_stride, s))});
            if (in_step != nullptr) steps->push_back(b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, in_step, s)));
        }
    }
    return operands;
}

void ReductionLowering::fold(const std::string& symbol) {
    ::llvm::Type* ptr = b_.getPtrTy();
    ::llvm::Type* i64 = b_.getInt64Ty();
    ::llvm::Function* fn = start_function(m_, symbol, {ptr, ptr, ptr, i64, i64, i64, ptr, ptr});
    Value* args = fn->getArg(0);
    Value* in_off = fn->getArg(1);
    Value* in_stride = fn->getArg(2);
    Value* count = fn->getArg(3);
    Value* j0 = fn->getArg(4);
    Value* n = fn->getArg(5);
    Value* acc = fn->getArg(6);
    Value* ok = fn->getArg(7);
    ::llvm::BasicBlock* entry = &fn->getEntryBlock();
    b_.SetInsertPoint(entry);
    ExpressionPiece map(b_, m_, c_.map, entry, rt_);
    ExpressionPiece red(b_, m_, c_.reduce, entry, rt_);

    const std::vector<Operand> operands = bind_inputs(map, args, in_off, in_stride);
    const CheckedKernel& mk = c_.map.kernel;
    map.body.size_n = n;
    const std::size_t size = rt_.size;

    // One element into the lane at (value, ok); `address(o)` is operand o's element.
    auto element = [&](Value* e, Value* value, Value* lane_ok, const std::function<Value*(const Operand&)>& address) {
        map.body.index_i = b_.CreateAdd(j0, e);
        for (const Operand& o : operands)
            map.body.param_values[o.param] = map.body.convert(map.body.load(address(o), o.stored), *mk.param_types[o.param]);
        map.body.statements(c_.map.body);
        take(red, value, lane_ok, map.value());
    };

    // The lanes in slots of this function while the main loop runs (so they live in registers):
    // each lane's fields at their offsets in a slot of the value's bytes.
    std::vector<Value*> lane_value, lane_ok;
    for (int l = 0; l < kReduceLanes; ++l) {
        lane_value.push_back(c_.reduce_struct ? map.body.slot(DType::uint64, static_cast<int>((size + 7) / 8))
                                              : map.body.slot(rt_.fields.front().type));
        lane_ok.push_back(map.body.slot(DType::uint8));
        store(map.body, lane_value.back(), load(map.body, field(acc, l * size)));
        b_.CreateStore(b_.CreateLoad(b_.getInt8Ty(), field(ok, static_cast<std::size_t>(l))), lane_ok.back());
    }
    Value* rounds = b_.CreateUDiv(count, b_.getInt64(kReduceLanes));
    Value* unit = b_.getTrue();
    for (const Operand& o : operands) unit = b_.CreateAnd(unit, b_.CreateICmpEQ(o.stride, b_.getInt64(1)));

    // Main loop, round q: element q * lanes + l into lane l. Stride 1 (vector loads) or any.
    auto* unit_block = ::llvm::BasicBlock::Create(m_.getContext(), "unit", fn);
    auto* strided_block = ::llvm::BasicBlock::Create(m_.getContext(), "strided", fn);
    auto* joined = ::llvm::BasicBlock::Create(m_.getContext(), "lanes.done", fn);
    b_.CreateCondBr(unit, unit_block, strided_block);
    for (const bool unit_stride : {true, false}) {
        b_.SetInsertPoint(unit_stride ? unit_block : strided_block);
        counted(b_, fn, b_.getInt64(0), rounds, [&](Value* q) {
            for (int l = 0; l < kReduceLanes; ++l) {
                Value* e = b_.CreateAdd(b_.CreateMul(q, b_.getInt64(kReduceLanes)), b_.getInt64(l));
                element(e, lane_value[static_cast<std::size_t>(l)], lane_ok[static_cast<std::size_t>(l)], [&](const Operand& o) {
                    return element_at(o.base, unit_stride ? e : b_.CreateMul(e, o.stride), o.stored);
                });
            }
        });
        b_.CreateBr(joined);
    }
    b_.SetInsertPoint(joined);
    for (int l = 0; l < kReduceLanes; ++l) {
        store(map.body, field(acc, l * size), load(map.body, lane_value[static_cast<std::size_t>(l)]));
        b_.CreateStore(b_.CreateLoad(b_.getInt8Ty(), lane_ok[static_cast<std::size_t>(l)]), field(ok, static_cast<std::size_t>(l)));
    }
    // The last count % lanes elements, element e into lane e - tail_start, in memory.
    Value* tail = b_.CreateMul(rounds, b_.getInt64(kReduceLanes));
    counted(b_, fn, tail, count, [&](Value* e) {
        Value* lane = b_.CreateSub(e, tail);
        element(e, b_.CreateGEP(b_.getInt8Ty(), acc, b_.CreateMul(lane, b_.getInt64(static_cast<std::int64_t>(size)))),
                b_.CreateGEP(b_.getInt8Ty(), ok, lane),
                [&](const Operand& o) { return element_at(o.base, b_.CreateMul(e, o.stride), o.stored); });
    });
    b_.CreateRetVoid();
}

void ReductionLowering::fold_columns(const std::string& symbol) {
    ::llvm::Type* ptr = b_.getPtrTy();
    ::llvm::Type* i64 = b_.getInt64Ty();
    ::llvm::Function* fn = start_function(m_, symbol, {ptr, ptr, ptr, ptr, i64, i64, i64, i64, ptr, ptr});
    for (unsigned a : {8u, 9u}) fn->addParamAttr(a, ::llvm::Attribute::NoAlias);  // the lanes are the caller's scratch
    Value* args = fn->getArg(0);
    Value* in_off = fn->getArg(1);
    Value* in_stride = fn->getArg(2);
    Value* in_step = fn->getArg(3);
    Value* count = fn->getArg(4);
    Value* width = fn->getArg(5);
    Value* j0 = fn->getArg(6);
    Value* n = fn->getArg(7);
    Value* acc = fn->getArg(8);
    Value* ok = fn->getArg(9);
    ::llvm::BasicBlock* entry = &fn->getEntryBlock();
    b_.SetInsertPoint(entry);
    ExpressionPiece map(b_, m_, c_.map, entry, rt_);
    ExpressionPiece red(b_, m_, c_.reduce, entry, rt_);
    std::vector<Value*> step;
    const std::vector<Operand> operands = bind_inputs(map, args, in_off, in_stride, in_step, &step);
    const CheckedKernel& mk = c_.map.kernel;
    map.body.size_n = n;
    const auto size = static_cast<std::int64_t>(rt_.size);
    // Element e of every output w: its lane is e % lanes, at acc[(lane * width + w)] (so that the
    // loop over w walks both the lanes and, with unit steps, the inputs contiguously: it vectorises).
    Value* unit = b_.getTrue();
    for (Value* st : step) unit = b_.CreateAnd(unit, b_.CreateICmpEQ(st, b_.getInt64(1)));
    auto* unit_block = ::llvm::BasicBlock::Create(m_.getContext(), "unit", fn);
    auto* any_block = ::llvm::BasicBlock::Create(m_.getContext(), "any", fn);
    auto* done = ::llvm::BasicBlock::Create(m_.getContext(), "done", fn);
    b_.CreateCondBr(unit, unit_block, any_block);
    for (const bool unit_step : {true, false}) {
        b_.SetInsertPoint(unit_step ? unit_block : any_block);
        counted(b_, fn, b_.getInt64(0), count, [&](Value* e) {
            Value* lane = b_.CreateURem(e, b_.getInt64(kReduceLanes));
            map.body.index_i = b_.CreateAdd(j0, e);
            std::vector<Value*> row;
            for (const Operand& o : operands) row.push_back(element_at(o.base, b_.CreateMul(e, o.stride), o.stored));
            Value* lanes = b_.CreateMul(lane, width);
            counted(b_, fn, b_.getInt64(0), width, [&](Value* w) {
                Value* slot = b_.CreateAdd(lanes, w);
                for (std::size_t k = 0; k < operands.size(); ++k) {
                    const Operand& o = operands[k];
                    Value* at = element_at(row[k], unit_step ? w : b_.CreateMul(w, step[k]), o.stored);
                    map.body.param_values[o.param] = map.body.convert(map.body.load(at, o.stored), *mk.param_types[o.param]);
                }
                map.body.statements(c_.map.body);
                take(red, b_.CreateGEP(b_.getInt8Ty(), acc, b_.CreateMul(slot, b_.getInt64(size))),
                     b_.CreateGEP(b_.getInt8Ty(), ok, slot), map.value());
            });
        });
        b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
}

void ReductionLowering::combine(const std::string& symbol) {
    ::llvm::Type* ptr = b_.getPtrTy();
    ::llvm::Function* fn = start_function(m_, symbol, {ptr, ptr, ptr, ptr});
    ::llvm::BasicBlock* entry = &fn->getEntryBlock();
    b_.SetInsertPoint(entry);
    ExpressionPiece red(b_, m_, c_.reduce, entry, rt_);
    Value* a = fn->getArg(0);
    Value* a_ok = fn->getArg(1);
    const Running x = load(red.body, fn->getArg(2));
    if (c_.has_identity) {
        take(red, a, a_ok, x);
    } else {
        // Nothing to take when b holds nothing.
        Value* b_has = b_.CreateICmpNE(b_.CreateLoad(b_.getInt8Ty(), fn->getArg(3)), b_.getInt8(0));
        auto* yes = ::llvm::BasicBlock::Create(m_.getContext(), "take", fn);
        auto* done = ::llvm::BasicBlock::Create(m_.getContext(), "done", fn);
        b_.CreateCondBr(b_has, yes, done);
        b_.SetInsertPoint(yes);
        take(red, a, a_ok, x);
        b_.CreateBr(done);
        b_.SetInsertPoint(done);
    }
    b_.CreateRetVoid();
}

void ReductionLowering::identity(const std::string& symbol) {
    ::llvm::Function* fn = start_function(m_, symbol, {b_.getPtrTy()});
    ::llvm::BasicBlock* entry = &fn->getEntryBlock();
    b_.SetInsertPoint(entry);
    ExpressionPiece id(b_, m_, c_.identity, entry, rt_);
    id.body.statements(c_.identity.body);
    store(id.body, fn->getArg(0), id.value());
    b_.CreateRetVoid();
}

void ReductionLowering::post(const std::string& symbol) {
    ::llvm::Type* ptr = b_.getPtrTy();
    ::llvm::Type* i64 = b_.getInt64Ty();
    ::llvm::Function* fn = start_function(m_, symbol, {ptr, ptr, ptr, i64, i64});
    Value* args = fn->getArg(0);
    Value* out_off = fn->getArg(1);
    ::llvm::BasicBlock* entry = &fn->getEntryBlock();
    b_.SetInsertPoint(entry);
    const CheckedKernel& pk = c_.post.kernel;
    BodyLowering body(b_, m_, pk, entry);
    body.make_locals();
    // Post's parameters: a (a struct: its fields), then the outputs, which are the kernel's
    // parameters from the first output on.
    const std::size_t k = rt_.fields.size();
    const Running a = load(body, fn->getArg(2));
    for (std::size_t f = 0; f < k; ++f) body.param_values[f] = a[f];
    body.index_i = fn->getArg(3);
    body.size_n = fn->getArg(4);
    const std::size_t first_output = c_.params.size() - (pk.params.size() - k);
    std::vector<Value*> address(pk.params.size(), nullptr);
    for (std::size_t q = k; q < pk.params.size(); ++q) {
        const DType t = *pk.param_types[q];
        Value* offset = b_.CreateLoad(i64, b_.CreateConstGEP1_64(i64, out_off, q - k));
        address[q] = element_at(b_.CreateLoad(ptr, field(args, r_.args.slots[first_output + q - k].offset)), offset, t);
        body.param_slots[q] = body.slot(t);
        // The old value, as the GPU's post reads it through its reference when the body does.
        body.store(body.param_slots[q], body.load(address[q], t));
    }
    body.statements(c_.post.body);
    if (b_.GetInsertBlock()->getTerminator() != nullptr)  // only after a stray break: unreachable
        b_.SetInsertPoint(::llvm::BasicBlock::Create(m_.getContext(), "dead", fn));
    for (std::size_t q = k; q < pk.params.size(); ++q) body.store(address[q], body.load(body.param_slots[q], *pk.param_types[q]));
    b_.CreateRetVoid();
}

}  // namespace

void lower_reduction(::llvm::Module& m, const ReductionRequest& request, const std::string& prefix) {
    ReductionLowering lowering(m, request);
    lowering.fold(prefix + "_fold");
    lowering.fold_columns(prefix + "_fold_columns");
    lowering.combine(prefix + "_combine");
    if (request.reduction->has_identity) lowering.identity(prefix + "_identity");
    lowering.post(prefix + "_post");
}

}  // namespace kjit::jit::host::llvm
