#include "kjit/scalar.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "kjit/error.hpp"

namespace kjit {
namespace {

template <class T>
void put(unsigned char* bytes, T v) noexcept {
    std::memcpy(bytes, &v, sizeof v);
}
template <class T>
T get(const unsigned char* bytes) noexcept {
    T v;
    std::memcpy(&v, bytes, sizeof v);
    return v;
}

// C's conversion of a floating value to an integer type; values out of range are undefined in
// C, so kjit picks what CUDA's cvt instructions do: saturate, NaN to 0.
template <class I>
I float_to_integer(double v) noexcept {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(v);
}

// The 16-bit float nearest to `v`, ties to even, rounded once (as CUDA's __double2half): going
// through float first would round twice.
std::uint16_t nearest_16bit(double v, bool bf16) noexcept {
    const auto to_float = [&](std::uint16_t b) { return bf16 ? bfloat16::to_float(b) : half::to_float(b); };
    const std::uint16_t guess = bf16 ? bfloat16::from_float(static_cast<float>(v)) : half::from_float(static_cast<float>(v));
    const float g = to_float(guess);
    if (std::isnan(v) || std::isinf(g) || static_cast<double>(g) == v) return guess;
    // The neighbour on the side of v (bit patterns of one sign are ordered by magnitude).
    const bool toward_larger_magnitude = std::fabs(v) > std::fabs(static_cast<double>(g));
    const std::uint16_t other = static_cast<std::uint16_t>(toward_larger_magnitude ? guess + 1 : guess - 1);
    if ((guess & 0x7fffu) == 0 && !toward_larger_magnitude) return guess;  // zero has no smaller neighbour
    const double dg = std::fabs(static_cast<double>(g) - v);
    const double d_other = std::fabs(static_cast<double>(to_float(other)) - v);
    if (d_other < dg || (d_other == dg && (other & 1u) == 0)) return other;
    return guess;
}

}  // namespace

Scalar::Scalar(bool v) noexcept : dtype_(DType::bool_) { bytes_[0] = v ? 1 : 0; }
Scalar::Scalar(float v) noexcept : dtype_(DType::float32) { put(bytes_, v); }
Scalar::Scalar(double v) noexcept : dtype_(DType::float64) { put(bytes_, v); }
Scalar::Scalar(half v) noexcept : dtype_(DType::float16) { put(bytes_, v.bits); }
Scalar::Scalar(bfloat16 v) noexcept : dtype_(DType::bfloat16) { put(bytes_, v.bits); }
Scalar::Scalar(std::complex<float> v) noexcept : dtype_(DType::complex64) { put(bytes_, v); }
Scalar::Scalar(std::complex<double> v) noexcept : dtype_(DType::complex128) { put(bytes_, v); }

DType Scalar::integer_dtype(std::size_t size, bool is_signed) noexcept {
    switch (size) {
        case 1: return is_signed ? DType::int8 : DType::uint8;
        case 2: return is_signed ? DType::int16 : DType::uint16;
        case 4: return is_signed ? DType::int32 : DType::uint32;
        default: return is_signed ? DType::int64 : DType::uint64;
    }
}

void Scalar::set_integer(DType t, std::int64_t bits) noexcept {
    dtype_ = t;
    std::memset(bytes_, 0, sizeof bytes_);
    switch (t.id()) {
        case DType::int8: put(bytes_, static_cast<std::int8_t>(bits)); break;
        case DType::uint8: put(bytes_, static_cast<std::uint8_t>(bits)); break;
        case DType::int16: put(bytes_, static_cast<std::int16_t>(bits)); break;
        case DType::uint16: put(bytes_, static_cast<std::uint16_t>(bits)); break;
        case DType::int32: put(bytes_, static_cast<std::int32_t>(bits)); break;
        case DType::uint32: put(bytes_, static_cast<std::uint32_t>(bits)); break;
        default: put(bytes_, bits); break;
    }
}

std::int64_t Scalar::integer_bits() const noexcept {
    switch (dtype_.id()) {
        case DType::bool_: return bytes_[0] != 0;
        case DType::int8: return get<std::int8_t>(bytes_);
        case DType::int16: return get<std::int16_t>(bytes_);
        case DType::int32: return get<std::int32_t>(bytes_);
        case DType::uint8: return get<std::uint8_t>(bytes_);
        case DType::uint16: return get<std::uint16_t>(bytes_);
        case DType::uint32: return get<std::uint32_t>(bytes_);
        default: return get<std::int64_t>(bytes_);  // int64, and uint64's bits
    }
}

std::complex<double> Scalar::to_complex() const noexcept {
    switch (dtype_.id()) {
        case DType::bool_: return bytes_[0] != 0 ? 1.0 : 0.0;
        case DType::int8: return get<std::int8_t>(bytes_);
        case DType::int16: return get<std::int16_t>(bytes_);
        case DType::int32: return get<std::int32_t>(bytes_);
        case DType::int64: return static_cast<double>(get<std::int64_t>(bytes_));
        case DType::uint8: return get<std::uint8_t>(bytes_);
        case DType::uint16: return get<std::uint16_t>(bytes_);
        case DType::uint32: return get<std::uint32_t>(bytes_);
        case DType::uint64: return static_cast<double>(get<std::uint64_t>(bytes_));
        case DType::float16: return half::to_float(get<std::uint16_t>(bytes_));
        case DType::bfloat16: return bfloat16::to_float(get<std::uint16_t>(bytes_));
        case DType::float32: return get<float>(bytes_);
        case DType::float64: return get<double>(bytes_);
        case DType::complex64: return get<std::complex<float>>(bytes_);
        case DType::complex128: return get<std::complex<double>>(bytes_);
    }
    return 0.0;
}

double Scalar::to_double() const noexcept { return to_complex().real(); }

Scalar Scalar::cast(DType to) const {
    if (to == dtype_) return *this;
    if (dtype_.is_complex() && !to.is_complex())
        throw TypeError("cannot convert the complex scalar " + to_string() + " to " + std::string(to.name()) +
                        ": its imaginary part would be lost (pass its real part)");
    // Integers convert exactly among themselves (64-bit values do not fit a double).
    if (dtype_.is_integer() && to.is_integer()) {
        Scalar s;
        s.set_integer(to, integer_bits());  // C: modulo 2^bits of the target
        return s;
    }
    const std::complex<double> c = to_complex();
    const double v = c.real();
    switch (to.id()) {
        case DType::bool_: return Scalar(c != std::complex<double>(0.0));
        case DType::int8: return Scalar(float_to_integer<std::int8_t>(v));
        case DType::int16: return Scalar(float_to_integer<std::int16_t>(v));
        case DType::int32: return Scalar(float_to_integer<std::int32_t>(v));
        case DType::int64: return Scalar(float_to_integer<std::int64_t>(v));
        case DType::uint8: return Scalar(float_to_integer<std::uint8_t>(v));
        case DType::uint16: return Scalar(float_to_integer<std::uint16_t>(v));
        case DType::uint32: return Scalar(float_to_integer<std::uint32_t>(v));
        case DType::uint64: return Scalar(float_to_integer<std::uint64_t>(v));
        case DType::float16: return Scalar(half::from_bits(nearest_16bit(v, false)));
        case DType::bfloat16: return Scalar(bfloat16::from_bits(nearest_16bit(v, true)));
        case DType::float32: return Scalar(static_cast<float>(v));
        case DType::float64: return Scalar(v);
        case DType::complex64: return Scalar(std::complex<float>(c));
        case DType::complex128: return Scalar(c);
    }
    return *this;
}

std::string Scalar::to_string() const {
    std::ostringstream s;
    s.precision(17);
    if (dtype_.is_complex()) {
        const std::complex<double> c = to_complex();
        s << "(" << c.real() << (c.imag() < 0 ? "" : "+") << c.imag() << "j)";
    } else if (dtype_.is_bool()) {
        s << (bytes_[0] ? "true" : "false");
    } else if (dtype_.id() == DType::uint64) {
        s << get<std::uint64_t>(bytes_);
    } else if (dtype_.is_integer()) {
        s << integer_bits();
    } else {
        s << to_double();
    }
    s << " (" << dtype_.name() << ")";
    return s.str();
}

}  // namespace kjit
