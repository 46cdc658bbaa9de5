// Host-side 16-bit floats: kjit::half (IEEE binary16) and kjit::bfloat16 (the top half of a
// float32), with exact conversions from float and round-to-nearest-even conversions to them.
// Their bits match CUDA's __half and __nv_bfloat16, so arrays of them can be copied either way.
#pragma once

#include "kjit/export.hpp"

#include <cstdint>
#include <cstring>

namespace kjit {

namespace detail {
inline std::uint32_t float_bits(float f) noexcept {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float bits_float(std::uint32_t u) noexcept {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
}  // namespace detail

struct KJIT_API half {
    std::uint16_t bits = 0;

    half() = default;
    explicit half(float f) noexcept : bits(from_float(f)) {}
    explicit operator float() const noexcept { return to_float(bits); }
    static half from_bits(std::uint16_t b) noexcept {
        half h;
        h.bits = b;
        return h;
    }

    static std::uint16_t from_float(float f) noexcept {
        const std::uint32_t x = detail::float_bits(f);
        const std::uint32_t sign = (x >> 16) & 0x8000u;
        const std::uint32_t abs = x & 0x7fffffffu;
        if (abs >= 0x7f800000u)  // inf or NaN (NaN keeps a quiet payload bit)
            return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
        if (abs >= 0x477ff000u)  // rounds to beyond the largest half: overflow to inf
            return static_cast<std::uint16_t>(sign | 0x7c00u);
        if (abs < 0x38800000u) {  // below the smallest normal half: a subnormal or zero
            // Scale so that the subnormal's units land in the integer part, then round half-even
            // through float arithmetic (adding 0.5 * 2^-23 ... done by the FPU).
            const float scaled = detail::bits_float(abs) * 16777216.0f;  // * 2^24
            const std::uint32_t m = static_cast<std::uint32_t>(scaled);
            const float rest = scaled - static_cast<float>(m);
            std::uint32_t r = m;
            if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++r;
            return static_cast<std::uint16_t>(sign | r);
        }
        // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits half-even.
        std::uint32_t h = ((abs - 0x38000000u) >> 13);
        const std::uint32_t dropped = abs & 0x1fffu;
        if (dropped > 0x1000u || (dropped == 0x1000u && (h & 1u))) ++h;
        return static_cast<std::uint16_t>(sign | h);
    }

    static float to_float(std::uint16_t h) noexcept {
        const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
        const std::uint32_t exp = (h >> 10) & 0x1fu;
        const std::uint32_t man = h & 0x3ffu;
        if (exp == 0) {  // zero or subnormal: man * 2^-24
            const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
            return sign ? -v : v;
        }
        if (exp == 31) return detail::bits_float(sign | 0x7f800000u | (man << 13));
        return detail::bits_float(sign | ((exp + 112u) << 23) | (man << 13));
    }
};

struct KJIT_API bfloat16 {
    std::uint16_t bits = 0;

    bfloat16() = default;
    explicit bfloat16(float f) noexcept : bits(from_float(f)) {}
    explicit operator float() const noexcept { return to_float(bits); }
    static bfloat16 from_bits(std::uint16_t b) noexcept {
        bfloat16 v;
        v.bits = b;
        return v;
    }

    static std::uint16_t from_float(float f) noexcept {
        const std::uint32_t x = detail::float_bits(f);
        if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN
        const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // half-even on the 16 dropped bits
        return static_cast<std::uint16_t>((x + rounding) >> 16);
    }
    static float to_float(std::uint16_t b) noexcept { return detail::bits_float(static_cast<std::uint32_t>(b) << 16); }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

}  // namespace kjit
