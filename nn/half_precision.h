// 16-bit floats widened to float32, as model files store them: IEEE half precision (F16:
// 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 (BF16: float32's upper 16 bits). Every
// 16-bit value has exactly one float32, so widening loses nothing.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace nce::nn {

// IEEE half to float (subnormals, infinities and NaN included).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
    const int exponent = (h >> 10) & 0x1F;
    const uint32_t mantissa = h & 0x3FF;
    if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
        const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    const uint32_t bits = exponent == 31 ? sign | 0x7F800000u | (mantissa << 13)
                                         : sign | static_cast<uint32_t>(exponent - 15 + 127) << 23 | (mantissa << 13);
    return std::bit_cast<float>(bits);
}

// bfloat16 to float: the 16 bits become float32's upper half.
inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

}  // namespace nce::nn
