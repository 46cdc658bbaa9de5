// Element types: every dtype kjit computes with, named as NumPy names them, with their sizes,
// C++ and CUDA spellings, parsing from NumPy and C names, and NumPy's promotion rules.
#pragma once

#include "kjit/export.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kjit {

enum class DTypeKind : char {
    boolean = 'b',
    signed_int = 'i',
    unsigned_int = 'u',
    floating = 'f',
    complex = 'c',
};

class KJIT_API DType {
public:
    enum Id : std::uint8_t {
        bool_,
        int8,
        int16,
        int32,
        int64,
        uint8,
        uint16,
        uint32,
        uint64,
        float16,
        bfloat16,
        float32,
        float64,
        complex64,
        complex128,
    };
    static constexpr int count = complex128 + 1;

    constexpr DType() noexcept : id_(float32) {}
    constexpr DType(Id id) noexcept : id_(id) {}  // NOLINT: implicit on purpose, DType::float32 reads well

    constexpr Id id() const noexcept { return id_; }
    constexpr friend bool operator==(DType a, DType b) noexcept { return a.id_ == b.id_; }

    // NumPy's name: "float32", "bool", "bfloat16"...
    std::string_view name() const noexcept;
    std::size_t itemsize() const noexcept;
    DTypeKind kind() const noexcept;
    // The C++ type kjit uses on the host ("float", "std::int64_t", "kjit::half"...).
    std::string_view cpp_name() const noexcept;
    // The CUDA C++ type the generated kernels use ("float", "long long", "__half"...).
    std::string_view cuda_name() const noexcept;

    bool is_bool() const noexcept { return kind() == DTypeKind::boolean; }
    bool is_integer() const noexcept { return kind() == DTypeKind::signed_int || kind() == DTypeKind::unsigned_int; }
    bool is_signed() const noexcept;
    bool is_floating() const noexcept { return kind() == DTypeKind::floating; }
    bool is_complex() const noexcept { return kind() == DTypeKind::complex; }
    // For complex types, the type of each part; otherwise the type itself.
    DType real_type() const noexcept;

    // Parses a NumPy name ("float32", "f4"-style codes are not accepted), a C name ("float",
    // "double", "int", "unsigned int", "long long", "half", "bool"...) or a NumPy alias
    // ("float", "double", "half", "single", "complex"). Throws TypeError naming the string.
    static DType parse(std::string_view name);
    // As parse(), but returns false instead of throwing.
    static bool try_parse(std::string_view name, DType& out) noexcept;

private:
    Id id_;
};

// NumPy's rule for casting `from` to `to` without losing values ("safe" casting), extended to
// bfloat16 as ml_dtypes does (8-bit integers fit in its 8-bit significand).
KJIT_API bool can_cast_safely(DType from, DType to) noexcept;

// NumPy's result_type for two array dtypes: the smallest type both cast to safely.
// float16 with bfloat16 gives float32; int64 with uint64 gives float64, as in NumPy.
KJIT_API DType result_type(DType a, DType b) noexcept;

// Type placeholder ("T") to dtype.
using TypeBinding = std::map<std::string, DType>;

}  // namespace kjit
