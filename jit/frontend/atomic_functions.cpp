#include "jit/frontend/atomic_functions.hpp"

namespace kjit::jit::frontend {
namespace {

constexpr AtomicFunction kAtomics[] = {
    {"atomic_add", AtomicOp::add, 2}, {"atomic_min", AtomicOp::min, 2},  {"atomic_max", AtomicOp::max, 2},
    {"atomic_exch", AtomicOp::exch, 2}, {"atomic_cas", AtomicOp::cas, 3},
};

bool word_integer(DType t) {
    return t == DType::int32 || t == DType::uint32 || t == DType::int64 || t == DType::uint64;
}

}  // namespace

const AtomicFunction* find_atomic_function(std::string_view name) noexcept {
    for (const AtomicFunction& f : kAtomics)
        if (f.name == name) return &f;
    return nullptr;
}

std::string atomic_unsupported(const AtomicFunction& f, DType t) {
    const std::string what = std::string(f.name) + " on " + std::string(t.name());
    switch (f.op) {
        case AtomicOp::add:
            if (word_integer(t) || t.is_floating()) return {};
            return what + ": the GPU adds atomically to 32- and 64-bit integers and to float16, bfloat16, float32 and "
                          "float64 only; widen the raw output (int32 counts, float32 sums)";
        case AtomicOp::min:
        case AtomicOp::max:
            if (word_integer(t) || t == DType::float32 || t == DType::float64) return {};
            return what + ": atomic min and max take 32- and 64-bit integers, float32 and float64";
        case AtomicOp::exch:
            if (word_integer(t) || t == DType::float32 || t == DType::float64) return {};
            return what + ": the GPU exchanges 32- and 64-bit integers, float32 and float64 atomically";
        case AtomicOp::cas:
            if (word_integer(t)) return {};
            return what + ": the GPU compares and swaps 32- and 64-bit integers only";
    }
    return what + ": not supported";
}

}  // namespace kjit::jit::frontend
