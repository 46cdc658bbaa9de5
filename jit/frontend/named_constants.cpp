#include "jit/frontend/named_constants.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "jit/frontend/parser.hpp"
#include "jit/frontend/type_checker.hpp"
#include "kjit/error.hpp"

namespace kjit::jit::frontend {
namespace {

struct CudaConstant {
    const char* name;
    DType::Id type;
    std::uint64_t bits;
};

// CUDA 13.0's math_constants.h, each value as the bits of its type: the header's decimal
// literals rounded once, as NVRTC rounds them (generated from the header by strtof/strtod).
constexpr CudaConstant kCudaConstants[] = {
    {"CUDART_INF_F", DType::float32, 0x7f800000ull},
    {"CUDART_NAN_F", DType::float32, 0x7fffffffull},
    {"CUDART_MIN_DENORM_F", DType::float32, 0x00000001ull},
    {"CUDART_MAX_NORMAL_F", DType::float32, 0x7f7fffffull},
    {"CUDART_NEG_ZERO_F", DType::float32, 0x80000000ull},
    {"CUDART_ZERO_F", DType::float32, 0x00000000ull},
    {"CUDART_ONE_F", DType::float32, 0x3f800000ull},
    {"CUDART_SQRT_HALF_F", DType::float32, 0x3f3504f3ull},
    {"CUDART_SQRT_HALF_HI_F", DType::float32, 0x3f3504f3ull},
    {"CUDART_SQRT_HALF_LO_F", DType::float32, 0x324fe77aull},
    {"CUDART_SQRT_TWO_F", DType::float32, 0x3fb504f3ull},
    {"CUDART_THIRD_F", DType::float32, 0x3eaaaaabull},
    {"CUDART_PIO4_F", DType::float32, 0x3f490fdbull},
    {"CUDART_PIO2_F", DType::float32, 0x3fc90fdbull},
    {"CUDART_3PIO4_F", DType::float32, 0x4016cbe4ull},
    {"CUDART_2_OVER_PI_F", DType::float32, 0x3f22f983ull},
    {"CUDART_SQRT_2_OVER_PI_F", DType::float32, 0x3f4c422aull},
    {"CUDART_PI_F", DType::float32, 0x40490fdbull},
    {"CUDART_L2E_F", DType::float32, 0x3fb8aa3bull},
    {"CUDART_L2T_F", DType::float32, 0x40549a78ull},
    {"CUDART_LG2_F", DType::float32, 0x3e9a209bull},
    {"CUDART_LGE_F", DType::float32, 0x3ede5bd9ull},
    {"CUDART_LN2_F", DType::float32, 0x3f317218ull},
    {"CUDART_LNT_F", DType::float32, 0x40135d8eull},
    {"CUDART_LNPI_F", DType::float32, 0x3f928682ull},
    {"CUDART_TWO_TO_M126_F", DType::float32, 0x00800000ull},
    {"CUDART_TWO_TO_126_F", DType::float32, 0x7e800000ull},
    {"CUDART_NORM_HUGE_F", DType::float32, 0x7f7fffffull},
    {"CUDART_TWO_TO_23_F", DType::float32, 0x4b000000ull},
    {"CUDART_TWO_TO_24_F", DType::float32, 0x4b800000ull},
    {"CUDART_TWO_TO_31_F", DType::float32, 0x4f000000ull},
    {"CUDART_TWO_TO_32_F", DType::float32, 0x4f800000ull},
    {"CUDART_REMQUO_BITS_F", DType::uint32, 3ull},
    {"CUDART_TRIG_PLOSS_F", DType::float32, 0x47ce4780ull},
    {"CUDART_INF", DType::float64, 0x7ff0000000000000ull},
    {"CUDART_NAN", DType::float64, 0xfff8000000000000ull},
    {"CUDART_NEG_ZERO", DType::float64, 0x8000000000000000ull},
    {"CUDART_MIN_DENORM", DType::float64, 0x0000000000000001ull},
    {"CUDART_ZERO", DType::float64, 0x0000000000000000ull},
    {"CUDART_ONE", DType::float64, 0x3ff0000000000000ull},
    {"CUDART_SQRT_TWO", DType::float64, 0x3ff6a09e667f3bcdull},
    {"CUDART_SQRT_HALF", DType::float64, 0x3fe6a09e667f3bcdull},
    {"CUDART_SQRT_HALF_HI", DType::float64, 0x3fe6a09e667f3bcdull},
    {"CUDART_SQRT_HALF_LO", DType::float64, 0xbc8bdd3413b26456ull},
    {"CUDART_THIRD", DType::float64, 0x3fd5555555555555ull},
    {"CUDART_TWOTHIRD", DType::float64, 0x3fe5555555555555ull},
    {"CUDART_PIO4", DType::float64, 0x3fe921fb54442d18ull},
    {"CUDART_PIO4_HI", DType::float64, 0x3fe921fb54442d18ull},
    {"CUDART_PIO4_LO", DType::float64, 0x3c81a62633145c07ull},
    {"CUDART_PIO2", DType::float64, 0x3ff921fb54442d18ull},
    {"CUDART_PIO2_HI", DType::float64, 0x3ff921fb54442d18ull},
    {"CUDART_PIO2_LO", DType::float64, 0x3c91a62633145c07ull},
    {"CUDART_3PIO4", DType::float64, 0x4002d97c7f3321d2ull},
    {"CUDART_2_OVER_PI", DType::float64, 0x3fe45f306dc9c883ull},
    {"CUDART_PI", DType::float64, 0x400921fb54442d18ull},
    {"CUDART_PI_HI", DType::float64, 0x400921fb54442d18ull},
    {"CUDART_PI_LO", DType::float64, 0x3ca1a62633145c07ull},
    {"CUDART_SQRT_2PI", DType::float64, 0x40040d931ff62706ull},
    {"CUDART_SQRT_2PI_HI", DType::float64, 0x40040d931ff62706ull},
    {"CUDART_SQRT_2PI_LO", DType::float64, 0xbcaa6a0d6f814637ull},
    {"CUDART_SQRT_PIO2", DType::float64, 0x3ff40d931ff62706ull},
    {"CUDART_SQRT_PIO2_HI", DType::float64, 0x3ff40d931ff62706ull},
    {"CUDART_SQRT_PIO2_LO", DType::float64, 0xbc9a6a0d6f814637ull},
    {"CUDART_SQRT_2OPI", DType::float64, 0x3fe9884533d43651ull},
    {"CUDART_L2E", DType::float64, 0x3ff71547652b82feull},
    {"CUDART_L2E_HI", DType::float64, 0x3ff71547652b82feull},
    {"CUDART_L2E_LO", DType::float64, 0x3c7777d0ffda0d24ull},
    {"CUDART_L2T", DType::float64, 0x400a934f0979a371ull},
    {"CUDART_LG2", DType::float64, 0x3fd34413509f79ffull},
    {"CUDART_LG2_HI", DType::float64, 0x3fd34413509f79ffull},
    {"CUDART_LG2_LO", DType::float64, 0xbc49dc1da994fd21ull},
    {"CUDART_LGE", DType::float64, 0x3fdbcb7b1526e50eull},
    {"CUDART_LGE_HI", DType::float64, 0x3fdbcb7b1526e50eull},
    {"CUDART_LGE_LO", DType::float64, 0x3c695355baaafad3ull},
    {"CUDART_LN2", DType::float64, 0x3fe62e42fefa39efull},
    {"CUDART_LN2_HI", DType::float64, 0x3fe62e42fefa39efull},
    {"CUDART_LN2_LO", DType::float64, 0x3c7abc9e3b39803full},
    {"CUDART_LNT", DType::float64, 0x40026bb1bbb55516ull},
    {"CUDART_LNT_HI", DType::float64, 0x40026bb1bbb55516ull},
    {"CUDART_LNT_LO", DType::float64, 0xbcaf48ad494ea3e9ull},
    {"CUDART_LNPI", DType::float64, 0x3ff250d048e7a1bdull},
    {"CUDART_LN2_X_1024", DType::float64, 0x40862e42fefa39efull},
    {"CUDART_LN2_X_1025", DType::float64, 0x408633ce8fb9f87eull},
    {"CUDART_LN2_X_1075", DType::float64, 0x40874910d52d3052ull},
    {"CUDART_LG2_X_1024", DType::float64, 0x40734413509f79ffull},
    {"CUDART_LG2_X_1075", DType::float64, 0x407439b746e36b52ull},
    {"CUDART_TWO_TO_23", DType::float64, 0x4160000000000000ull},
    {"CUDART_TWO_TO_52", DType::float64, 0x4330000000000000ull},
    {"CUDART_TWO_TO_53", DType::float64, 0x4340000000000000ull},
    {"CUDART_TWO_TO_54", DType::float64, 0x4350000000000000ull},
    {"CUDART_TWO_TO_M54", DType::float64, 0x3c90000000000000ull},
    {"CUDART_TWO_TO_M1022", DType::float64, 0x0010000000000000ull},
    {"CUDART_TRIG_PLOSS", DType::float64, 0x41e0000000000000ull},
    {"CUDART_DBL2INT_CVT", DType::float64, 0x4338000000000000ull},
    {"CUDART_REMQUO_MASK_F", DType::uint32, 7ull},
};

// A literal CUDA prints exactly: a hexadecimal float (C++17), or the bit pattern for infinities
// and NaN; parenthesised, so that it is one operand wherever it stands ("x-CUDART_NEG_ZERO_F").
std::string cuda_literal(DType type, std::uint64_t bits) {
    char text[64];
    if (type == DType::float32) {
        float f;
        const auto b = static_cast<std::uint32_t>(bits);
        std::memcpy(&f, &b, sizeof f);
        if (f != f || f - f != 0) std::snprintf(text, sizeof text, "(__int_as_float(0x%08xu))", b);
        else std::snprintf(text, sizeof text, "(%af)", static_cast<double>(f));
    } else if (type == DType::float64) {
        double d;
        std::memcpy(&d, &bits, sizeof d);
        if (d != d || d - d != 0) std::snprintf(text, sizeof text, "(__longlong_as_double(0x%016llxll))", static_cast<unsigned long long>(bits));
        else std::snprintf(text, sizeof text, "(%a)", d);
    } else {
        std::snprintf(text, sizeof text, "(%lluu)", static_cast<unsigned long long>(bits));
    }
    return text;
}

NamedConstant from_table(const CudaConstant& c) {
    NamedConstant k;
    k.name = c.name;
    k.type = DType(c.type);
    k.bits = c.bits;
    k.spelling = cuda_literal(k.type, k.bits) ;
    k.defined_where = "CUDA's math_constants.h";
    return k;
}

// The bits of a literal (or a signed literal) as `type` holds it.
std::uint64_t literal_bits(const Expr& e, DType type) {
    bool negative = false;
    const Expr* x = &e;
    while (x->kind == ExprKind::unary) {
        const auto& u = static_cast<const UnaryExpr&>(*x);
        if (u.op == UnaryOp::minus) negative = !negative;
        x = u.operand.get();
    }
    if (type.is_floating()) {
        double v = x->kind == ExprKind::float_literal  ? static_cast<const FloatLiteral&>(*x).value
                   : x->kind == ExprKind::int_literal  ? static_cast<double>(static_cast<const IntLiteral&>(*x).value)
                                                        : static_cast<double>(static_cast<const BoolLiteral&>(*x).value);
        if (type == DType::float32) {
            // A float literal is the float nearest its text, not the nearest to the nearest double.
            float f = static_cast<float>(v);
            if (x->kind == ExprKind::float_literal) {
                std::string text = static_cast<const FloatLiteral&>(*x).text;
                while (!text.empty() && (text.back() == 'f' || text.back() == 'F')) text.pop_back();
                f = std::strtof(text.c_str(), nullptr);
            }
            if (negative) f = -f;
            std::uint32_t b;
            std::memcpy(&b, &f, sizeof b);
            return b;
        }
        if (negative) v = -v;
        std::uint64_t b;
        std::memcpy(&b, &v, sizeof b);
        return b;
    }
    std::uint64_t v = x->kind == ExprKind::int_literal ? static_cast<const IntLiteral&>(*x).value
                                                       : static_cast<std::uint64_t>(static_cast<const BoolLiteral&>(*x).value);
    if (negative) v = 0 - v;
    return type.itemsize() >= 8 ? v : v & ((std::uint64_t{1} << (8 * type.itemsize())) - 1);
}

bool is_number_literal(const Expr& e) {
    if (e.kind == ExprKind::unary) {
        const auto& u = static_cast<const UnaryExpr&>(e);
        return (u.op == UnaryOp::minus || u.op == UnaryOp::plus) && is_number_literal(*u.operand);
    }
    return e.kind == ExprKind::int_literal || e.kind == ExprKind::float_literal || e.kind == ExprKind::bool_literal;
}

// One macro of the kernel: its value read as a number literal, or why it cannot be.
NamedConstant read_macro(std::string name, std::string value, std::string where) {
    NamedConstant k;
    k.name = std::move(name);
    k.spelling = "(" + k.name + ")";
    k.defined_where = std::move(where);
    const std::string shown = value.size() > 40 ? value.substr(0, 40) + "..." : value;
    const std::string why = "it is defined in " + k.defined_where + " as '" + shown +
                            "', which is not a number literal: kernel code can use a macro only as a constant";
    try {
        Body body;
        ExprPtr e = parse_expression(SourceText{k.name, value});
        if (!is_number_literal(*e)) {
            k.unusable = why;
            return k;
        }
        const Expr* literal = e.get();
        body.statements.push_back(std::make_unique<ExprStmt>(e->pos, std::move(e)));
        check_kernel({}, body, KernelSources{}, {}, {});
        k.type = *literal->type;
        k.bits = literal_bits(*literal, k.type);
    } catch (const Error&) {
        k.unusable = why;
    }
    return k;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void define(std::vector<NamedConstant>& macros, NamedConstant k) {
    std::erase_if(macros, [&](const NamedConstant& m) { return m.name == k.name; });
    macros.push_back(std::move(k));
}

// "NAME=value" or "NAME" (value 1, as -DNAME means).
void define_option(std::vector<NamedConstant>& macros, std::string_view text, const std::string& option) {
    const std::size_t eq = text.find('=');
    const std::string name(text.substr(0, eq));
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_word_char) || std::isdigit(static_cast<unsigned char>(name[0])))
        return;  // a function-like macro or a malformed one: NVRTC judges it
    const std::string value = eq == std::string_view::npos ? "1" : std::string(text.substr(eq + 1));
    define(macros, read_macro(name, value, "NVRTC option '" + option + "'"));
}

}  // namespace

const NamedConstant* find_cuda_constant(std::string_view name) {
    static const std::vector<NamedConstant> table = [] {
        std::vector<NamedConstant> t;
        for (const CudaConstant& c : kCudaConstants) t.push_back(from_table(c));
        return t;
    }();
    if (name.substr(0, 7) != "CUDART_") return nullptr;
    for (const NamedConstant& k : table)
        if (k.name == name) return &k;
    return nullptr;
}

std::vector<std::string> cuda_constant_names() {
    std::vector<std::string> names;
    for (const CudaConstant& c : kCudaConstants) names.emplace_back(c.name);
    return names;
}

std::vector<NamedConstant> kernel_macros(std::string_view preamble, const std::vector<std::string>& nvrtc_options) {
    std::vector<NamedConstant> macros;
    // The preamble's lines "# define NAME value", continuations joined; comments after the value
    // are left to the literal reader, which refuses them (rare in a constant's definition).
    std::size_t k = 0;
    while (k < preamble.size()) {
        std::size_t end = k;
        std::string line;
        for (;;) {
            end = preamble.find('\n', end);
            if (end == std::string_view::npos) end = preamble.size();
            const bool continued = end > k && preamble[end - 1] == '\\';
            line += preamble.substr(k, end - k - (continued ? 1 : 0));
            k = std::min(end + 1, preamble.size() + 1);
            if (!continued || end >= preamble.size()) break;
            end = k;
        }
        std::size_t p = line.find_first_not_of(" \t");
        if (p == std::string::npos || line[p] != '#') continue;
        p = line.find_first_not_of(" \t", p + 1);
        if (p == std::string::npos || line.compare(p, 6, "define") != 0 || p + 6 >= line.size() || is_word_char(line[p + 6])) continue;
        p = line.find_first_not_of(" \t", p + 6);
        if (p == std::string::npos) continue;
        std::size_t q = p;
        while (q < line.size() && is_word_char(line[q])) ++q;
        if (q == p || (q < line.size() && line[q] == '(')) continue;  // function-like macros are not constants
        std::string value = line.substr(q);
        if (const std::size_t comment = value.find("//"); comment != std::string::npos) value.erase(comment);
        const std::size_t first = value.find_first_not_of(" \t"), last = value.find_last_not_of(" \t\r");
        value = first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
        if (value.empty()) continue;  // "#define GUARD": a flag for #ifdef, not a value
        define(macros, read_macro(line.substr(p, q - p), value, "the preamble"));
    }
    for (std::size_t o = 0; o < nvrtc_options.size(); ++o) {
        const std::string& opt = nvrtc_options[o];
        if (opt.rfind("--define-macro=", 0) == 0) define_option(macros, std::string_view(opt).substr(15), opt);
        else if (opt.rfind("-D", 0) == 0 && opt.size() > 2) define_option(macros, std::string_view(opt).substr(2), opt);
        else if ((opt == "-D" || opt == "--define-macro") && o + 1 < nvrtc_options.size()) {
            define_option(macros, nvrtc_options[o + 1], opt + " " + nvrtc_options[o + 1]);
            ++o;
        }
    }
    return macros;
}

}  // namespace kjit::jit::frontend
