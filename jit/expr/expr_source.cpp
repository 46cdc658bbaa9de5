#include "jit/expr/expr_source.hpp"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "kjit/error.hpp"

namespace kjit::detail {
namespace {

constexpr std::size_t kMaxInlineText = std::size_t{1} << 20;
// Operators nested in one expression of the kernel's text: each writes a few parentheses and casts
// around its operands, and the kernel language's parser stops at 200 levels (jit/frontend/parser.hpp).
// An elementwise kernel breaks deeper nesting into locals; a reduction's map is one expression.
constexpr int kLocalEvery = 8;
constexpr std::size_t kScanEntries = 32;  // nodes found by a scan up to this many
constexpr int kMaxInlineDepth = 24;

bool same_view(const Array& a, const Array& b) {
    return a.data() == b.data() && a.dtype() == b.dtype() && a.shape() == b.shape() && a.strides() == b.strides() &&
           a.device() == b.device();
}

std::string type(DType t) { return std::string(t.name()); }

// C arithmetic on these gives the dtype back; on the others (small integers, bool, 16-bit floats)
// the result is cast back, as NumPy's loops compute.
bool c_keeps(DType t) {
    switch (t.id()) {
        case DType::int32: case DType::int64: case DType::uint32: case DType::uint64: case DType::float32: case DType::float64:
        case DType::complex64: case DType::complex128: return true;
        default: return false;
    }
}

std::string cast(DType t, const std::string& text) { return "((" + type(t) + ")(" + text + "))"; }

// When an integer remainder is 0 without dividing: by 0 (NumPy gives 0), and for a signed type by
// -1 (always 0, and the minimum % -1 traps on x86, where the host back end runs).
std::string no_remainder(DType t, const std::string& y) {
    return t.is_signed() ? "(" + y + " == 0 || " + y + " == -1)" : "(" + y + " == 0)";
}

// Operators whose text writes an operand more than once (NaN-aware minimum and maximum, NumPy's
// remainder): their operands become locals, so that nesting them does not multiply the text.
bool repeats_operands(ExprOp op) {
    return op == ExprOp::minimum || op == ExprOp::maximum || op == ExprOp::remainder || op == ExprOp::fmod ||
           op == ExprOp::shift_left || op == ExprOp::shift_right;
}

}  // namespace

FlatExpr::FlatExpr(std::span<const ExprNode* const> roots, std::string prefix) : prefix_(std::move(prefix)) {
    for (const ExprNode* r : roots) visit(r);
    for (const ExprNode* r : roots) roots_.push_back(index_of(r));
    for (const Entry& e : entries_)
        if (e.node->kind == ExprNode::Kind::op && repeats_operands(e.node->op))
            for (const ExprNodePtr& o : e.node->operands)
                if (o->kind == ExprNode::Kind::op) entries_[static_cast<std::size_t>(index_of(o.get()))].uses += 1;
    // Operands come before their users, so one pass in order sees each operand's depth settled.
    int locals = 0;
    for (Entry& e : entries_) {
        if (e.node->kind != ExprNode::Kind::op) continue;
        for (const ExprNodePtr& o : e.node->operands) {
            const Entry& oe = entries_[static_cast<std::size_t>(index_of(o.get()))];
            e.depth = std::max(e.depth, oe.local ? 0 : oe.depth);
            e.inline_depth = std::max(e.inline_depth, oe.inline_depth);
        }
        e.depth += 1;
        e.inline_depth += 1;
        e.local = e.uses > 1 || e.depth >= kLocalEvery;
        if (e.local) e.param = locals++;
    }
}

int FlatExpr::index_of(const ExprNode* n) const {
    // A scan while the expression is small (the usual case, and no allocation on the warm path);
    // a map past that, where scans would make flattening quadratic.
    if (index_.empty()) {
        for (std::size_t k = 0; k < entries_.size(); ++k)
            if (entries_[k].node == n) return static_cast<int>(k);
        return -1;
    }
    const auto it = index_.find(n);
    return it == index_.end() ? -1 : it->second;
}

void FlatExpr::visit(const ExprNode* n) {
    if (const int at = index_of(n); at >= 0) {
        ++entries_[static_cast<std::size_t>(at)].uses;
        return;
    }
    for (const ExprNodePtr& o : n->operands) visit(o.get());
    Entry e{n, 1, -1};
    if (n->kind == ExprNode::Kind::array) {
        const auto same = std::find_if(arrays_.begin(), arrays_.end(), [&](const ExprNode* a) { return same_view(a->array, n->array); });
        e.param = static_cast<int>(same - arrays_.begin());
        if (same == arrays_.end()) arrays_.push_back(n);
    } else if (n->kind == ExprNode::Kind::scalar) {
        e.param = static_cast<int>(scalars_.size());
        scalars_.push_back(n);
    }
    entries_.push_back(e);
    if (entries_.size() == kScanEntries)
        for (std::size_t k = 0; k < entries_.size(); ++k) index_.emplace(entries_[k].node, static_cast<int>(k));
    else if (entries_.size() > kScanEntries)
        index_.emplace(n, static_cast<int>(entries_.size() - 1));
}

ExprKey FlatExpr::key(std::span<const DType> outputs, std::uint64_t salt) const {
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    const auto add = [&](std::uint64_t v) { XXH3_128bits_update(&state, &v, sizeof v); };
    add(salt);
    for (DType t : outputs) add(t.id());
    add(entries_.size());
    for (int r : roots_) add(static_cast<std::uint64_t>(r));
    for (const Entry& e : entries_) {
        const ExprNode& n = *e.node;
        add(static_cast<std::uint64_t>(n.kind) << 56 | static_cast<std::uint64_t>(n.op) << 48 | static_cast<std::uint64_t>(n.dtype.id()) << 40 |
            static_cast<std::uint64_t>(n.compute.id()) << 32 | static_cast<std::uint32_t>(e.param + 1) | (e.local ? 1ull << 31 : 0));
        for (const ExprNodePtr& o : n.operands) add(static_cast<std::uint64_t>(index_of(o.get())));
    }
    const XXH128_hash_t h = XXH3_128bits_digest(&state);
    return {h.low64, h.high64};
}

std::string FlatExpr::in_params() const {
    std::string p;
    for (std::size_t k = 0; k < arrays_.size(); ++k) p += (p.empty() ? "" : ", ") + type(arrays_[k]->dtype) + " " + prefix_ + "in" + std::to_string(k);
    for (std::size_t k = 0; k < scalars_.size(); ++k) p += (p.empty() ? "" : ", ") + type(scalars_[k]->dtype) + " " + prefix_ + "s" + std::to_string(k);
    return p;
}

std::string FlatExpr::locals() const {
    std::string s;
    for (const Entry& e : entries_)
        if (e.local)
            s += "const " + type(e.node->dtype) + " " + prefix_ + "t" + std::to_string(e.param) + " = " + op_text(e.node, false) + "; ";
    return s;
}

std::string FlatExpr::text(const ExprNode* n, bool inline_all) const {
    const Entry& e = entries_[static_cast<std::size_t>(index_of(n))];
    switch (n->kind) {
        case ExprNode::Kind::array: return prefix_ + "in" + std::to_string(e.param);
        case ExprNode::Kind::scalar: return prefix_ + "s" + std::to_string(e.param);
        case ExprNode::Kind::op: break;
    }
    if (e.local && !inline_all) return prefix_ + "t" + std::to_string(e.param);
    if (inline_all && e.inline_depth > kMaxInlineDepth)
        throw Error("kjit: the expression nests " + std::to_string(e.inline_depth) +
                    " operators deep, and a reduction's map, written as one expression, takes at most " +
                    std::to_string(kMaxInlineDepth) + ": evaluate part of it into an array first");
    std::string t = op_text(n, inline_all);
    if (inline_all && t.size() > kMaxInlineText)
        throw Error("kjit: the expression is too large to be a reduction's map written as one expression (its text passes " +
                    std::to_string(kMaxInlineText) + " characters): evaluate part of it into an array first");
    return t;
}

// Operand k as the operation takes it: converted to the compute dtype when it differs.
std::string FlatExpr::operand(const ExprNode* n, std::size_t k, bool inline_all) const {
    const ExprNode* o = n->operands[k].get();
    const std::string t = text(o, inline_all);
    return o->dtype == n->compute ? t : cast(n->compute, t);
}

std::string FlatExpr::op_text(const ExprNode* n, bool inline_all) const {
    const auto a = [&] { return operand(n, 0, inline_all); };
    const auto b = [&] { return operand(n, 1, inline_all); };
    const DType t = n->dtype, c = n->compute;
    const auto keep = [&](const std::string& s) { return c_keeps(t) ? s : cast(t, s); };
    const auto call1 = [&](const char* f) { return keep(std::string(f) + "(" + a() + ")"); };
    const auto call2 = [&](const char* f) { return keep(std::string(f) + "(" + a() + ", " + b() + ")"); };
    switch (n->op) {
        case ExprOp::add: return keep("(" + a() + " + " + b() + ")");
        case ExprOp::subtract: return keep("(" + a() + " - " + b() + ")");
        case ExprOp::multiply: return keep("(" + a() + " * " + b() + ")");
        case ExprOp::divide: return keep("(" + a() + " / " + b() + ")");
        case ExprOp::remainder: {
            // NumPy's remainder: the sign of the divisor (C's % and fmod take the dividend's);
            // an integer remainder by zero is 0, as NumPy gives it.
            const std::string x = a(), y = b();
            if (c.is_integer()) {
                const std::string r = "(" + x + " % " + y + ")";
                return keep("(" + no_remainder(c, y) + " ? (" + type(c) + ")0 : (" + r + " != 0 && ((" + r + " < 0) != (" + y +
                            " < 0)) ? " + r + " + " + y + " : " + r + "))");
            }
            const std::string r = "fmod(" + x + ", " + y + ")";
            return keep("(" + r + " != 0 && ((" + r + " < 0) != (" + y + " < 0)) ? " + r + " + " + y + " : " + r + ")");
        }
        case ExprOp::power:
            if (c.is_integer()) return cast(t, "pow((double)(" + a() + "), (double)(" + b() + "))");
            return call2("pow");
        case ExprOp::less: return "(" + a() + " < " + b() + ")";
        case ExprOp::less_equal: return "(" + a() + " <= " + b() + ")";
        case ExprOp::greater: return "(" + a() + " > " + b() + ")";
        case ExprOp::greater_equal: return "(" + a() + " >= " + b() + ")";
        case ExprOp::equal: return "(" + a() + " == " + b() + ")";
        case ExprOp::not_equal: return "(" + a() + " != " + b() + ")";
        case ExprOp::logical_and: return "(" + a() + " && " + b() + ")";
        case ExprOp::logical_or: return "(" + a() + " || " + b() + ")";
        case ExprOp::bit_and: return keep("(" + a() + " & " + b() + ")");
        case ExprOp::bit_or: return keep("(" + a() + " | " + b() + ")");
        case ExprOp::bit_xor: return keep("(" + a() + " ^ " + b() + ")");
        case ExprOp::shift_left:
        case ExprOp::shift_right: {
            // NumPy's shifts by the width or more (or by a negative count): 0, or -1 for a
            // negative number shifted right; C leaves them undefined.
            const std::string x = a(), y = b(), bits = std::to_string(c.itemsize() * 8);
            const std::string out_of_range = c.is_signed() ? "(" + y + " < 0 || " + y + " >= " + bits + ")" : "(" + y + " >= " + bits + ")";
            const std::string beyond = n->op == ExprOp::shift_left || !c.is_signed() ? "(" + type(c) + ")0" : "(" + x + " < 0 ? (" + type(c) + ")(-1) : (" + type(c) + ")0)";
            return keep("(" + out_of_range + " ? " + beyond + " : " + x + (n->op == ExprOp::shift_left ? " << " : " >> ") + y + ")");
        }
        case ExprOp::minimum:
        case ExprOp::maximum: {
            const std::string x = a(), y = b(), pick = n->op == ExprOp::minimum ? " < " : " > ";
            const std::string chosen = "(" + x + pick + y + " ? " + x + " : " + y + ")";
            if (!c.is_floating()) return chosen;
            return keep("(" + x + " != " + x + " || " + y + " != " + y + " ? " + x + " + " + y + " : " + chosen + ")");  // NaN wins
        }
        case ExprOp::atan2: return call2("atan2");
        case ExprOp::hypot: return call2("hypot");
        case ExprOp::fmod:
            if (c.is_integer()) {
                const std::string x = a(), y = b();
                return keep("(" + no_remainder(c, y) + " ? (" + type(c) + ")0 : " + x + " % " + y + ")");
            }
            return call2("fmod");
        case ExprOp::copysign: return call2("copysign");
        case ExprOp::negative: return keep("(-" + a() + ")");
        case ExprOp::logical_not: return "(!" + a() + ")";
        case ExprOp::bit_not: return c.is_bool() ? "(!" + a() + ")" : keep("(~" + a() + ")");
        case ExprOp::abs:
            if (c.is_bool() || (c.is_integer() && !c.is_signed())) return a();
            return call1("abs");
        case ExprOp::floor: case ExprOp::ceil: case ExprOp::trunc: case ExprOp::rint:
            if (!c.is_floating()) return a();
            return call1(op_name(n->op));
        case ExprOp::isnan: case ExprOp::isinf: case ExprOp::isfinite: case ExprOp::signbit:
            return std::string(op_name(n->op)) + "(" + a() + ")";
        case ExprOp::where: {
            const std::string x = operand(n, 1, inline_all), y = operand(n, 2, inline_all);
            return "(" + text(n->operands[0].get(), inline_all) + " ? " + x + " : " + y + ")";
        }
        case ExprOp::cast: return cast(t, text(n->operands[0].get(), inline_all));
        case ExprOp::real:
        case ExprOp::conj:
            return c.is_complex() ? call1(op_name(n->op)) : a();
        case ExprOp::imag:
            // A real operand's imaginary part is zero; its operand is still part of the shape.
            return c.is_complex() ? call1("imag") : "(" + type(t) + ")0";
        default: return call1(op_name(n->op));
    }
}

}  // namespace kjit::detail
