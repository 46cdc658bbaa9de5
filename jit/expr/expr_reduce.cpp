// kjit::reduce (include/kjit/expr.hpp): a user's ReductionKernel whose inputs are expressions, as one
// kernel. The kernel is rewritten, not wrapped: each input given an expression leaves the parameter
// list, its name in the map becomes the expression's text, the expression's arrays and numbers
// become parameters of their own, and the placeholders the expressions bind become their dtypes in
// every string. The rewritten kernel keeps the user's name, so it is recorded and precompiled as
// theirs, and is kept under the key of the kernel's strings and the expressions' structure.
#include <map>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "jit/expr/expr_kernels.hpp"
#include "jit/expr/expr_node.hpp"
#include "jit/expr/expr_source.hpp"
#include "jit/frontend/lexer.hpp"
#include "jit/frontend/params.hpp"
#include "kjit/error.hpp"
#include "kjit/expr.hpp"

namespace kjit {
namespace {

namespace fe = jit::frontend;
using detail::ExprNode;
using detail::FlatExpr;

// `text` with each identifier found in `words` replaced by its value; everything else (spacing,
// comments, literals) kept as written.
std::string replace_words(std::string_view where, std::string_view text, const std::map<std::string, std::string, std::less<>>& words) {
    if (words.empty()) return std::string(text);
    fe::Lexer lexer(fe::SourceText{std::string(where), text});
    std::string out;
    std::size_t copied = 0;
    for (fe::Token t = lexer.next(); t.kind != fe::TokenKind::end; t = lexer.next()) {
        if (t.kind != fe::TokenKind::identifier) continue;
        const auto it = words.find(t.text);
        if (it == words.end()) continue;
        out.append(text.substr(copied, t.pos.offset - copied)).append(it->second);
        copied = t.pos.offset + t.text.size();
    }
    return out.append(text.substr(copied));
}

// A prefix that starts no word of the kernel's strings: the expressions' parameter names.
std::string unused_prefix(const ReductionKernel& k) {
    const std::string all = k.in_params() + " " + k.out_params() + " " + k.map_expr() + " " + k.reduce_expr() + " " + k.post_map_expr() +
                            " " + k.identity();
    std::string prefix = "e";
    while (all.find(prefix) != std::string::npos) prefix += "x";
    return prefix;
}

std::uint64_t kernel_hash(const ReductionKernel& k, std::uint64_t fused_mask) {
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    const auto add = [&](const std::string& s) {
        XXH3_64bits_update(&state, s.data(), s.size() + 1);  // with the terminating NUL: "ab","c" differs from "a","bc"
    };
    for (const std::string* s : {&k.in_params(), &k.out_params(), &k.map_expr(), &k.reduce_expr(), &k.post_map_expr(), &k.identity(),
                                 &k.name(), &k.options().reduce_type, &k.options().preamble, &k.options().loop_prep, &k.options().after_loop})
        add(*s);
    for (const std::string& o : k.options().nvrtc_options) add(o);
    XXH3_64bits_update(&state, &fused_mask, sizeof fused_mask);
    return XXH3_64bits_digest(&state);
}

std::string param_text(const fe::Param& p, const std::string& type) {
    return std::string(p.raw ? "raw " : "") + (p.non_const ? "_non_const " : "") + type + " " + p.name;
}

}  // namespace

Outputs reduce(const ReductionKernel& kernel, std::initializer_list<ExprArg> args, const ReduceOptions& options) {
    const std::string what = "kjit::reduce of '" + kernel.name() + "'";
    const std::vector<fe::Param> params = fe::parse_param_lists({"in", kernel.in_params()}, {"out", kernel.out_params()});
    std::vector<const fe::Param*> ins, outs;
    for (const fe::Param& p : params) (p.is_output ? outs : ins).push_back(&p);
    if (args.size() != ins.size() && args.size() != ins.size() + outs.size())
        throw TypeError(what + ": it takes " + std::to_string(ins.size()) + " inputs (then optionally " + std::to_string(outs.size()) +
                        " outputs), not " + std::to_string(args.size()) + " arguments");

    // Which inputs are expressions to fuse; the placeholders they bind.
    const ExprArg* const arg = args.begin();
    std::vector<const ExprNode*> roots;
    std::uint64_t fused_mask = 0;
    std::map<std::string, DType, std::less<>> bound;  // placeholder -> the dtype an expression gives it
    const auto fused = [&](std::size_t k) {
        return !arg[k].is_number && arg[k].expr.node() && arg[k].expr.node()->kind == ExprNode::Kind::op;
    };
    for (std::size_t k = 0; k < args.size(); ++k) {
        if (!arg[k].is_number && !arg[k].expr.node()) throw TypeError(what + ": argument " + std::to_string(k + 1) + " is an empty expression");
        if (k >= ins.size() && (arg[k].is_number || arg[k].expr.node()->kind != ExprNode::Kind::array))
            throw TypeError(what + ": output '" + outs[k - ins.size()]->name + "' must be given an array");
        if (k >= ins.size() || !fused(k)) continue;
        const fe::Param& p = *ins[k];
        if (p.raw) throw TypeError(what + ": raw input '" + p.name + "' is indexed freely, so it takes an array, not an expression");
        fused_mask |= std::uint64_t{1} << std::min<std::size_t>(k, 63);
        const DType t = arg[k].expr.dtype();
        roots.push_back(arg[k].expr.node().get());
        if (!p.is_placeholder) continue;
        const auto [it, inserted] = bound.emplace(p.type.spelling, t);
        if (!inserted && it->second != t)
            throw TypeError(what + ": the expressions for the inputs of type " + p.type.spelling + " have dtypes " +
                            std::string(it->second.name()) + " and " + std::string(t.name()));
    }

    std::vector<KernelArg> call;
    call.reserve(args.size() + 8);
    const auto plain = [&](std::size_t k) -> KernelArg {
        if (arg[k].is_number) return KernelArg(arg[k].number);
        const ExprNode& n = *arg[k].expr.node();
        if (n.kind == ExprNode::Kind::scalar) return KernelArg(n.value);
        return KernelArg(n.array);
    };
    if (roots.empty()) {  // nothing to fuse: the kernel's own call
        for (std::size_t k = 0; k < args.size(); ++k) call.push_back(plain(k));
        return kernel(call, options);
    }
    if (!kernel.options().preamble.empty() && !bound.empty())
        throw TypeError(what + ": an expression binds placeholder " + bound.begin()->first +
                        ", which the kernel's preamble may name; give that input an array, or write the type in the parameter list");
    // An array passed beside an expression for the same placeholder must agree with it, as two arrays must.
    for (std::size_t k = 0; k < ins.size(); ++k) {
        if (fused(k) || arg[k].is_number || arg[k].expr.node()->kind != ExprNode::Kind::array) continue;
        const auto it = ins[k]->is_placeholder ? bound.find(ins[k]->type.spelling) : bound.end();
        const DType t = arg[k].expr.node()->array.dtype();
        if (it != bound.end() && t != it->second)
            throw TypeError(what + ": input '" + ins[k]->name + "' is " + std::string(t.name()) + ", but an expression binds " +
                            ins[k]->type.spelling + " to " + std::string(it->second.name()));
    }

    const std::string prefix = unused_prefix(kernel);
    const FlatExpr flat(roots, prefix);
    const detail::ExprKey key = flat.key({}, kernel_hash(kernel, fused_mask));
    const ReductionKernel& k = detail::expr_reduction_kernels().get(key, [&] {
        std::map<std::string, std::string, std::less<>> types;  // each bound placeholder's dtype name, as words
        for (const auto& [placeholder, t] : bound) types[placeholder] = std::string(t.name());
        std::map<std::string, std::string, std::less<>> map_words = types;
        std::string in;
        for (std::size_t j = 0, r = 0; j < ins.size(); ++j) {
            const fe::Param& p = *ins[j];
            const std::string type = p.is_placeholder && types.count(p.type.spelling) ? types[p.type.spelling] : p.type.spelling;
            if (!fused(j)) {
                in += (in.empty() ? "" : ", ") + param_text(p, type);
                continue;
            }
            // The expression converted to the parameter's type, as an array argument would be.
            map_words[p.name] = "((" + type + ")(" + flat.text(roots[r++], true) + "))";
        }
        const std::string more = flat.in_params();
        in += (in.empty() || more.empty() ? "" : ", ") + more;
        KernelOptions o = kernel.options();
        o.reduce_type = replace_words("reduce_type", o.reduce_type, types);
        return ReductionKernel(in, replace_words("out", kernel.out_params(), types), replace_words("map", kernel.map_expr(), map_words),
                               replace_words("reduce", kernel.reduce_expr(), types), replace_words("post", kernel.post_map_expr(), types),
                               replace_words("identity", kernel.identity(), types), kernel.name(), std::move(o));
    });
    for (std::size_t j = 0; j < ins.size(); ++j)
        if (!fused(j)) call.push_back(plain(j));
    std::vector<Scalar> values;
    for (KernelArg& a : detail::expr_arguments(flat, values)) call.push_back(std::move(a));
    for (std::size_t j = ins.size(); j < args.size(); ++j) call.push_back(plain(j));
    return k(call, options);
}

}  // namespace kjit
