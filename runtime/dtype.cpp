#include "kjit/dtype.hpp"

#include <array>
#include <cctype>
#include <string>

#include "kjit/error.hpp"

namespace kjit {
namespace {

struct DTypeInfo {
    std::string_view name;
    std::size_t itemsize;
    DTypeKind kind;
    std::string_view cpp_name;
    std::string_view cuda_name;
};

// Indexed by DType::Id; the order must match the enum.
constexpr std::array<DTypeInfo, DType::count> kInfo{{
    {"bool", 1, DTypeKind::boolean, "bool", "bool"},
    {"int8", 1, DTypeKind::signed_int, "std::int8_t", "signed char"},
    {"int16", 2, DTypeKind::signed_int, "std::int16_t", "short"},
    {"int32", 4, DTypeKind::signed_int, "std::int32_t", "int"},
    {"int64", 8, DTypeKind::signed_int, "std::int64_t", "long long"},
    {"uint8", 1, DTypeKind::unsigned_int, "std::uint8_t", "unsigned char"},
    {"uint16", 2, DTypeKind::unsigned_int, "std::uint16_t", "unsigned short"},
    {"uint32", 4, DTypeKind::unsigned_int, "std::uint32_t", "unsigned int"},
    {"uint64", 8, DTypeKind::unsigned_int, "std::uint64_t", "unsigned long long"},
    {"float16", 2, DTypeKind::floating, "kjit::half", "__half"},
    {"bfloat16", 2, DTypeKind::floating, "kjit::bfloat16", "__nv_bfloat16"},
    {"float32", 4, DTypeKind::floating, "float", "float"},
    {"float64", 8, DTypeKind::floating, "double", "double"},
    {"complex64", 8, DTypeKind::complex, "std::complex<float>", "kjit::complex<float>"},
    {"complex128", 16, DTypeKind::complex, "std::complex<double>", "kjit::complex<double>"},
}};

struct Alias {
    std::string_view spelling;
    DType::Id id;
};

// C and NumPy spellings accepted besides the canonical names. Whitespace inside C names
// ("unsigned  int") is normalised to one space before lookup.
constexpr Alias kAliases[] = {
    {"float", DType::float32},        {"double", DType::float64},
    {"half", DType::float16},         {"__half", DType::float16},
    {"single", DType::float32},       {"__nv_bfloat16", DType::bfloat16},
    {"char", DType::int8},            {"signed char", DType::int8},
    {"unsigned char", DType::uint8},  {"short", DType::int16},
    {"unsigned short", DType::uint16}, {"int", DType::int32},
    {"signed", DType::int32},         {"signed int", DType::int32},
    {"unsigned", DType::uint32},      {"unsigned int", DType::uint32},
    {"long", DType::int64},           {"long long", DType::int64},
    {"unsigned long", DType::uint64}, {"unsigned long long", DType::uint64},
    {"int8_t", DType::int8},          {"int16_t", DType::int16},
    {"int32_t", DType::int32},        {"int64_t", DType::int64},
    {"uint8_t", DType::uint8},        {"uint16_t", DType::uint16},
    {"uint32_t", DType::uint32},      {"uint64_t", DType::uint64},
    {"complex", DType::complex128},   {"bool_", DType::bool_},
    {"size_t", DType::uint64},        {"ptrdiff_t", DType::int64},
};

std::string normalise_spaces(std::string_view s) {
    std::string out;
    bool pending_space = false;
    for (char c : s) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(' ');
        pending_space = false;
        out.push_back(c);
    }
    return out;
}

int integer_bits(DType t) { return static_cast<int>(t.itemsize()) * 8; }

// Significand bits including the implicit one: how wide an integer a float holds exactly.
int significand_bits(DType t) {
    switch (t.id()) {
        case DType::float16: return 11;
        case DType::bfloat16: return 8;
        case DType::float32:
        case DType::complex64: return 24;
        default: return 53;
    }
}

}  // namespace

std::string_view DType::name() const noexcept { return kInfo[id_].name; }
std::size_t DType::itemsize() const noexcept { return kInfo[id_].itemsize; }
DTypeKind DType::kind() const noexcept { return kInfo[id_].kind; }
std::string_view DType::cpp_name() const noexcept { return kInfo[id_].cpp_name; }
std::string_view DType::cuda_name() const noexcept { return kInfo[id_].cuda_name; }
bool DType::is_signed() const noexcept { return kind() != DTypeKind::unsigned_int && kind() != DTypeKind::boolean; }

DType DType::real_type() const noexcept {
    if (id_ == complex64) return float32;
    if (id_ == complex128) return float64;
    return *this;
}

bool DType::try_parse(std::string_view name, DType& out) noexcept {
    try {
        const std::string key = normalise_spaces(name);
        for (int i = 0; i < count; ++i) {
            if (kInfo[i].name == key) {
                out = DType(static_cast<Id>(i));
                return true;
            }
        }
        for (const Alias& a : kAliases) {
            if (a.spelling == key) {
                out = DType(a.id);
                return true;
            }
        }
    } catch (...) {  // only std::bad_alloc can get here
    }
    return false;
}

DType DType::parse(std::string_view name) {
    DType t;
    if (!try_parse(name, t)) {
        throw TypeError("unknown dtype '" + std::string(name) +
                        "': expected a NumPy name (bool, int8..int64, uint8..uint64, float16, bfloat16, "
                        "float32, float64, complex64, complex128) or a C name (float, double, int, half...)");
    }
    return t;
}

bool can_cast_safely(DType from, DType to) noexcept {
    if (from == to || from.is_bool()) return true;
    if (to.is_bool()) return false;
    const DTypeKind fk = from.kind();
    const DTypeKind tk = to.kind();
    if (from.is_integer()) {
        if (to.is_integer()) {
            if (fk == tk) return integer_bits(to) >= integer_bits(from);
            if (fk == DTypeKind::unsigned_int) return integer_bits(to) > integer_bits(from);
            return false;  // signed never fits an unsigned type
        }
        // float64 (and complex128) take every integer, as NumPy rules; narrower floats must hold
        // every value exactly: the integer's value bits within the significand.
        if (significand_bits(to) >= 53) return true;
        const int value_bits = integer_bits(from) - (fk == DTypeKind::signed_int ? 1 : 0);
        return value_bits <= significand_bits(to);
    }
    if (from.is_floating()) {
        if (tk != DTypeKind::floating && tk != DTypeKind::complex) return false;
        const DType to_real = to.real_type();
        if (from == to_real) return true;
        if (from.id() == DType::float16 || from.id() == DType::bfloat16)
            return to_real.id() == DType::float32 || to_real.id() == DType::float64;
        return to_real.itemsize() > from.itemsize();
    }
    // complex
    return to.is_complex() && to.itemsize() >= from.itemsize();
}

namespace {

// Candidates in NumPy's order of preference: the first both cast to safely wins.
DType search_result_type(DType a, DType b) noexcept {
    static constexpr DType::Id kOrder[] = {
        DType::bool_,   DType::uint8,   DType::int8,     DType::uint16,  DType::int16,
        DType::uint32,  DType::int32,   DType::uint64,   DType::int64,   DType::float16,
        DType::bfloat16, DType::float32, DType::float64, DType::complex64, DType::complex128,
    };
    for (DType::Id id : kOrder) {
        if (can_cast_safely(a, id) && can_cast_safely(b, id)) return id;
    }
    return DType::complex128;  // unreachable: everything casts safely to complex128
}

}  // namespace

DType result_type(DType a, DType b) noexcept {
    // Every pair worked out once: calls on the hot path (matmul's host time) cost a lookup.
    static const auto table = [] {
        std::array<std::array<DType::Id, DType::count>, DType::count> t{};
        for (int i = 0; i < DType::count; ++i)
            for (int j = 0; j < DType::count; ++j)
                t[i][j] = search_result_type(static_cast<DType::Id>(i), static_cast<DType::Id>(j)).id();
        return t;
    }();
    return table[a.id()][b.id()];
}

}  // namespace kjit
