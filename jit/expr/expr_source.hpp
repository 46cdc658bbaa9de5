// An expression turned into a kernel: its distinct arrays and its numbers as parameters, the
// subexpressions used more than once as locals, and a key of its structure and dtypes (not its
// shapes, strides or values) under which the kernel is kept.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/expr/expr_node.hpp"

namespace kjit::detail {

struct ExprKey {
    std::uint64_t low = 0, high = 0;
    bool operator==(const ExprKey&) const = default;
};
struct ExprKeyHash {
    std::size_t operator()(const ExprKey& k) const noexcept { return static_cast<std::size_t>(k.low ^ (k.high * 0x9e3779b97f4a7c15ull)); }
};

// The expressions' nodes, each once, operands before their users.
class FlatExpr {
public:
    // `prefix` starts the parameters' and locals' names ("in0", "s0", "t0" without one): a
    // ReductionKernel's map that takes an expression needs names of its own.
    explicit FlatExpr(std::span<const ExprNode* const> roots, std::string prefix = {});
    const std::vector<const ExprNode*>& arrays() const noexcept { return arrays_; }    // one per distinct array view
    const std::vector<const ExprNode*>& scalars() const noexcept { return scalars_; }  // one per number
    // The key of the structure and dtypes, with `salt` (outputs' dtypes, a reduction's name).
    ExprKey key(std::span<const DType> outputs, std::uint64_t salt) const;
    // The kernel language text: "in" parameters, local declarations, and each root's expression.
    std::string in_params() const;
    std::string locals() const;               // "const float32 t0 = ...; ..." (empty for a reduction's map)
    // With `inline_all` (a reduction's map, one expression), a text longer than a limit is an
    // Error: operands written more than once in an operator's text grow it exponentially.
    std::string text(const ExprNode* root, bool inline_all) const;

private:
    struct Entry {
        const ExprNode* node;
        int uses = 0;
        int param = -1;      // array or scalar parameter index; local index for an op that is a local
        bool local = false;  // an op written once as a local (used twice, or deep; elementwise only)
        int depth = 0;       // operators nested in its text up to the nearest locals
        int inline_depth = 0;  // operators nested in its text written as one expression
    };
    int index_of(const ExprNode* n) const;
    void visit(const ExprNode* n);
    std::string op_text(const ExprNode* n, bool inline_all) const;
    std::string operand(const ExprNode* n, std::size_t k, bool inline_all) const;

    std::vector<Entry> entries_;
    std::unordered_map<const ExprNode*, int> index_;  // node -> entry
    std::vector<const ExprNode*> arrays_, scalars_;
    std::vector<int> roots_;
    std::string prefix_;  // each root's entry: which output writes what is part of the key
};

}  // namespace kjit::detail
