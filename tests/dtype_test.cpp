// dtypes: names, sizes, parsing, NumPy promotion, and the host 16-bit float conversions.
#include "test_support.hpp"

#include <cmath>

#include "kjit/dtype.hpp"
#include "kjit/error.hpp"
#include "kjit/half.hpp"

using kjit::DType;
using Catch::Matchers::Contains;

TEST_CASE("every dtype has its NumPy name, size and kind", "[dtype]") {
    struct Row {
        DType t;
        const char* name;
        std::size_t size;
        kjit::DTypeKind kind;
    };
    const Row rows[] = {
        {DType::bool_, "bool", 1, kjit::DTypeKind::boolean},
        {DType::int8, "int8", 1, kjit::DTypeKind::signed_int},
        {DType::int16, "int16", 2, kjit::DTypeKind::signed_int},
        {DType::int32, "int32", 4, kjit::DTypeKind::signed_int},
        {DType::int64, "int64", 8, kjit::DTypeKind::signed_int},
        {DType::uint8, "uint8", 1, kjit::DTypeKind::unsigned_int},
        {DType::uint16, "uint16", 2, kjit::DTypeKind::unsigned_int},
        {DType::uint32, "uint32", 4, kjit::DTypeKind::unsigned_int},
        {DType::uint64, "uint64", 8, kjit::DTypeKind::unsigned_int},
        {DType::float16, "float16", 2, kjit::DTypeKind::floating},
        {DType::bfloat16, "bfloat16", 2, kjit::DTypeKind::floating},
        {DType::float32, "float32", 4, kjit::DTypeKind::floating},
        {DType::float64, "float64", 8, kjit::DTypeKind::floating},
        {DType::complex64, "complex64", 8, kjit::DTypeKind::complex},
        {DType::complex128, "complex128", 16, kjit::DTypeKind::complex},
    };
    STATIC_REQUIRE(DType::count == 15);
    for (const Row& r : rows) {
        INFO(r.name);
        CHECK(r.t.name() == r.name);
        CHECK(r.t.itemsize() == r.size);
        CHECK(r.t.kind() == r.kind);
        CHECK(DType::parse(r.name) == r.t);
        CHECK_FALSE(r.t.cuda_name().empty());
        CHECK_FALSE(r.t.cpp_name().empty());
    }
    CHECK(DType(DType::complex64).real_type() == DType::float32);
    CHECK(DType(DType::complex128).real_type() == DType::float64);
    CHECK(DType(DType::int8).is_signed());
    CHECK_FALSE(DType(DType::uint8).is_signed());
}

TEST_CASE("C and NumPy alias names parse", "[dtype]") {
    CHECK(DType::parse("float") == DType::float32);
    CHECK(DType::parse("double") == DType::float64);
    CHECK(DType::parse("half") == DType::float16);
    CHECK(DType::parse("int") == DType::int32);
    CHECK(DType::parse("unsigned int") == DType::uint32);
    CHECK(DType::parse("unsigned   long  long") == DType::uint64);
    CHECK(DType::parse(" long long ") == DType::int64);
    CHECK(DType::parse("signed char") == DType::int8);
    CHECK(DType::parse("unsigned char") == DType::uint8);
    CHECK(DType::parse("__nv_bfloat16") == DType::bfloat16);
    CHECK(DType::parse("int64_t") == DType::int64);
    CHECK(DType::parse("complex") == DType::complex128);
}

TEST_CASE("an unknown dtype name is a TypeError that names it and lists the valid ones", "[dtype]") {
    CHECK_THROWS_AS(DType::parse("float31"), kjit::TypeError);
    CHECK_THROWS_WITH(DType::parse("float31"), Contains("'float31'") && Contains("float32"));
    CHECK_THROWS_AS(DType::parse(""), kjit::TypeError);
    DType t = DType::int8;
    CHECK_FALSE(DType::try_parse("T", t));
    CHECK(t == DType::int8);  // untouched on failure
}

TEST_CASE("result_type follows NumPy's table", "[dtype]") {
    struct Case {
        DType a, b, want;
    };
    // Pairs checked against numpy.result_type (and ml_dtypes for bfloat16).
    const Case cases[] = {
        {DType::bool_, DType::bool_, DType::bool_},       {DType::bool_, DType::int8, DType::int8},
        {DType::int8, DType::uint8, DType::int16},        {DType::int16, DType::uint16, DType::int32},
        {DType::int32, DType::uint32, DType::int64},      {DType::int64, DType::uint64, DType::float64},
        {DType::uint8, DType::uint32, DType::uint32},     {DType::int8, DType::float16, DType::float16},
        {DType::uint8, DType::float16, DType::float16},   {DType::int16, DType::float16, DType::float32},
        {DType::int32, DType::float32, DType::float64},   {DType::int64, DType::float32, DType::float64},
        {DType::float16, DType::float32, DType::float32}, {DType::float16, DType::bfloat16, DType::float32},
        {DType::int8, DType::bfloat16, DType::bfloat16},  {DType::uint8, DType::bfloat16, DType::bfloat16},
        {DType::int16, DType::bfloat16, DType::float32},  {DType::float32, DType::complex64, DType::complex64},
        {DType::float64, DType::complex64, DType::complex128}, {DType::int64, DType::complex64, DType::complex128},
        {DType::int16, DType::complex64, DType::complex64}, {DType::bool_, DType::complex128, DType::complex128},
        {DType::uint64, DType::float16, DType::float64},
    };
    for (const Case& c : cases) {
        INFO(c.a.name() << " + " << c.b.name());
        CHECK(kjit::result_type(c.a, c.b).name() == c.want.name());
        CHECK(kjit::result_type(c.b, c.a).name() == c.want.name());
    }
}

TEST_CASE("result_type is symmetric, idempotent and safe for every pair", "[dtype]") {
    for (int i = 0; i < DType::count; ++i) {
        const DType a(static_cast<DType::Id>(i));
        CHECK(kjit::result_type(a, a) == a);
        CHECK(kjit::can_cast_safely(a, a));
        for (int j = 0; j < DType::count; ++j) {
            const DType b(static_cast<DType::Id>(j));
            const DType r = kjit::result_type(a, b);
            INFO(a.name() << " + " << b.name() << " -> " << r.name());
            CHECK(r == kjit::result_type(b, a));
            CHECK(kjit::can_cast_safely(a, r));
            CHECK(kjit::can_cast_safely(b, r));
        }
    }
}

TEST_CASE("half converts every binary16 value exactly and back", "[dtype][half]") {
    for (std::uint32_t bits = 0; bits <= 0xffffu; ++bits) {
        const auto h = static_cast<std::uint16_t>(bits);
        const float f = kjit::half::to_float(h);
        if (std::isnan(f)) {
            CHECK(std::isnan(kjit::half::to_float(kjit::half::from_float(f))));
            continue;
        }
        if (kjit::half::from_float(f) != h) FAIL("half bits " << bits << " -> " << f << " does not round trip");
    }
    CHECK(kjit::half::to_float(0x3c00) == 1.0f);
    CHECK(kjit::half::to_float(0x7bff) == 65504.0f);
    CHECK(kjit::half::to_float(0x0001) == std::ldexp(1.0f, -24));
}

TEST_CASE("half and bfloat16 round to nearest even", "[dtype][half]") {
    // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to even (1).
    CHECK(kjit::half::from_float(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
    // 1 + 3 * 2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even).
    CHECK(kjit::half::from_float(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
    CHECK(kjit::half::from_float(65520.0f) == 0x7c00);  // rounds past the largest half: inf
    CHECK(kjit::half::from_float(65519.0f) == 0x7bff);
    CHECK(kjit::half::from_float(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even zero
    CHECK(kjit::half::from_float(std::ldexp(3.0f, -26)) == 0x0001);
    CHECK(kjit::half::from_float(-2.0f) == 0xc000);
    CHECK(kjit::bfloat16::from_float(1.0f) == 0x3f80);
    CHECK(kjit::bfloat16::from_float(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);       // tie to even
    CHECK(kjit::bfloat16::from_float(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);   // tie to even
    CHECK(kjit::bfloat16::to_float(0x4049) == 3.140625f);
    CHECK(std::isnan(kjit::bfloat16::to_float(kjit::bfloat16::from_float(std::nanf("")))));
}
