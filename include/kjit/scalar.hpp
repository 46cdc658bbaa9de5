// kjit::Scalar: one value of a dtype, held by value (a kernel argument that is not an array).
//
// Built implicitly from C++ numbers: bool, every integer type, float, double, kjit::half,
// kjit::bfloat16, std::complex<float> and std::complex<double>, each with its natural dtype
// (int -> int32, long long -> int64, double -> float64...). cast() converts as C does (as a
// kernel would), rounding to 16-bit floats to nearest-even.
#pragma once

#include "kjit/export.hpp"

#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>

#include "kjit/dtype.hpp"
#include "kjit/half.hpp"

namespace kjit {

class KJIT_API Scalar {
public:
    Scalar() noexcept : Scalar(std::int32_t{0}) {}
    Scalar(bool v) noexcept;  // NOLINT(google-explicit-constructor): numbers convert implicitly on purpose
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    Scalar(I v) noexcept {  // NOLINT
        if constexpr (std::is_signed_v<I>)
            set_integer(integer_dtype(sizeof(I), true), static_cast<std::int64_t>(v));
        else
            set_integer(integer_dtype(sizeof(I), false), static_cast<std::int64_t>(static_cast<std::uint64_t>(v)));
    }
    Scalar(float v) noexcept;                  // NOLINT
    Scalar(double v) noexcept;                 // NOLINT
    Scalar(half v) noexcept;                   // NOLINT
    Scalar(bfloat16 v) noexcept;               // NOLINT
    Scalar(std::complex<float> v) noexcept;    // NOLINT
    Scalar(std::complex<double> v) noexcept;   // NOLINT

    DType dtype() const noexcept { return dtype_; }
    // The value's bytes as the dtype stores them (itemsize() bytes).
    const void* data() const noexcept { return bytes_; }

    // The value converted to `to` as C converts (float to integer truncates; to bool: != 0; to
    // complex: imaginary part 0). Complex to a real type is refused (TypeError): the imaginary
    // part would be lost silently.
    Scalar cast(DType to) const;

    // The value as double / complex<double> (a complex's real part by to_double()).
    double to_double() const noexcept;
    std::complex<double> to_complex() const noexcept;
    std::string to_string() const;  // "2.5 (float64)"

private:
    static DType integer_dtype(std::size_t size, bool is_signed) noexcept;
    void set_integer(DType t, std::int64_t bits) noexcept;
    std::int64_t integer_bits() const noexcept;  // integers and bool, sign-extended

    DType dtype_;
    alignas(16) unsigned char bytes_[16] = {};
};

}  // namespace kjit
