// kjit::Scalar: natural dtypes of C++ numbers and C's conversions between dtypes.
#include "test_support.hpp"

#include <cmath>
#include <cstring>

#include "kjit/error.hpp"
#include "kjit/kernel_arg.hpp"
#include "kjit/scalar.hpp"

using kjit::DType;
using kjit::Scalar;

namespace {
template <class T>
T value(const Scalar& s) {
    T v;
    std::memcpy(&v, s.data(), sizeof v);
    return v;
}
}  // namespace

TEST_CASE("C++ numbers become scalars of their natural dtype", "[scalar]") {
    CHECK(Scalar(true).dtype() == DType::bool_);
    CHECK(Scalar(1).dtype() == DType::int32);
    CHECK(Scalar(1LL).dtype() == DType::int64);
    CHECK(Scalar(std::uint8_t{1}).dtype() == DType::uint8);
    CHECK(Scalar(1u).dtype() == DType::uint32);
    CHECK(Scalar(2.5f).dtype() == DType::float32);
    CHECK(Scalar(2.5).dtype() == DType::float64);
    CHECK(Scalar(kjit::half(1.0f)).dtype() == DType::float16);
    CHECK(Scalar(std::complex<float>(1, 2)).dtype() == DType::complex64);
    const kjit::KernelArg a = 3.0;
    CHECK_FALSE(a.is_array());
    CHECK(a.scalar().dtype() == DType::float64);
}

TEST_CASE("scalars convert as C converts", "[scalar]") {
    CHECK(value<float>(Scalar(3).cast(DType::float32)) == 3.0f);
    CHECK(value<std::int32_t>(Scalar(-2.75).cast(DType::int32)) == -2);        // truncation
    CHECK(value<std::uint8_t>(Scalar(300).cast(DType::uint8)) == 44);           // modulo 2^8
    CHECK(value<std::int64_t>(Scalar(std::uint64_t{1} << 63).cast(DType::int64)) == INT64_MIN);
    CHECK(value<std::uint64_t>(Scalar(std::int64_t{-1}).cast(DType::uint64)) == UINT64_MAX);
    CHECK(value<unsigned char>(Scalar(0.5).cast(DType::bool_)) == 1);
    CHECK(value<std::int32_t>(Scalar(std::nan("")).cast(DType::int32)) == 0);
    CHECK(value<std::int8_t>(Scalar(1e10).cast(DType::int8)) == 127);            // saturates as CUDA's cvt
    const auto c = value<std::complex<double>>(Scalar(2.0f).cast(DType::complex128));
    CHECK(c == std::complex<double>(2.0, 0.0));
    CHECK_THROWS_AS(Scalar(std::complex<double>(1, 1)).cast(DType::float64), kjit::TypeError);
    CHECK(Scalar(2.5).to_string() == "2.5 (float64)");
}

TEST_CASE("doubles round to 16-bit floats once, to nearest even", "[scalar]") {
    // 1 + 2^-11 + 2^-30 lies just above the midpoint between two halves: rounding it to float first
    // gives exactly the midpoint (1 + 2^-11), which then rounds to even (1.0): wrong.
    const double v = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30);
    const auto bits = value<std::uint16_t>(Scalar(v).cast(DType::float16));
    CHECK(kjit::half::to_float(bits) == 1.0f + std::ldexp(1.0f, -10));
    const double w = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
    const auto bb = value<std::uint16_t>(Scalar(w).cast(DType::bfloat16));
    CHECK(kjit::bfloat16::to_float(bb) == 1.0f + std::ldexp(1.0f, -7));
    // Exact and tie cases still behave.
    CHECK(kjit::half::to_float(value<std::uint16_t>(Scalar(0.5).cast(DType::float16))) == 0.5f);
    CHECK(kjit::half::to_float(value<std::uint16_t>(Scalar(1.0 + std::ldexp(1.0, -11)).cast(DType::float16))) == 1.0f);
    CHECK(std::isinf(kjit::half::to_float(value<std::uint16_t>(Scalar(1e6).cast(DType::float16)))));
}
