// Loops over counter-based draws (engine/random.h) shared by the CPU kernels that draw.
#pragma once
#include <cmath>
#include <cstdint>

#include "engine/random.h"

namespace nce::cpu {

// Bernoulli(probability) from 53 bits without floating point: uniform = (bits >> 11) · 2^-53,
// and scaling by a power of two is exact, so
//   uniform < probability  <=>  (bits >> 11) < probability · 2^53  <=>  (bits >> 11) < ceil(probability · 2^53).
inline uint64_t bernoulli_threshold(double probability) {
    return static_cast<uint64_t>(std::ceil(probability * 0x1.0p53));
}

// out[i] = x[i] · (draw offset + i kept ? scale : 0) for i in [begin, end), kept meaning
// Bernoulli(keep) with threshold = bernoulli_threshold(keep). Everything is passed by value
// so the compiler sees no aliasing and vectorises the hashing.
template <typename T>
void dropout_elements(const T* __restrict x, T* __restrict out, int64_t begin, int64_t end, uint64_t seed,
                      uint64_t offset, uint64_t threshold, T scale) {
    for (int64_t i = begin; i < end; ++i) {
        uint64_t bits = random_bits::bits(seed, offset + static_cast<uint64_t>(i)) >> 11;
        out[i] = x[i] * (bits < threshold ? scale : T(0));  // x · mask / keep, as the two-step form
    }
}

}  // namespace nce::cpu
