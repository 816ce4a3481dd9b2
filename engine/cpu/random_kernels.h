// Loops over counter-based draws (engine/random.h) shared by the CPU kernels that draw.
#pragma once
#include <cmath>
#include <cstdint>

#include "engine/random.h"

namespace nce::cpu {

// Bernoulli draws take 32 bits each, two from one 64-bit draw: element g of a fill that
// starts at `offset` uses draw offset + g/2, its high half for an even g and its low half
// for an odd one, and is 1 when that half is below ceil(probability · 2^32). The probability
// is then exact to 2^-32, and a mask costs half the hashing. (A fill still moves the
// generator past n draws, one per element, so nothing else changes.)
inline uint64_t bernoulli_threshold(double probability) {
    return static_cast<uint64_t>(std::ceil(probability * 0x1.0p32));
}

// GCC vectorises the 64-bit hashing of the draws with 256-bit vectors unless told to use
// 512 (where the CPU has them): about a quarter faster on these loops.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define NCE_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define NCE_WIDE_VECTORS
#endif

// Calls set(i, kept) for i in [0, count), where element i is element first + i of the fill
// (see above). Pairs that share a draw hash it once. Everything is passed by value, so the
// compiler sees no aliasing and vectorises the pairs.
template <typename Set>
inline void for_each_bernoulli(int64_t count, uint64_t first, uint64_t seed, uint64_t offset, uint64_t threshold,
                               Set set) {
    auto half = [&](uint64_t draw, uint64_t element) {
        return (element % 2 == 0 ? draw >> 32 : draw & 0xffffffffULL) < threshold;
    };
    int64_t i = 0;
    if (count > 0 && first % 2 == 1) {  // a fill's odd element: the low half of its pair
        set(0, half(random_bits::bits(seed, offset + first / 2), first));
        i = 1;
    }
    const int64_t pairs = (count - i) / 2;
    const uint64_t pair_draw = offset + (first + static_cast<uint64_t>(i)) / 2;
    for (int64_t j = 0; j < pairs; ++j) {
        const uint64_t draw = random_bits::bits(seed, pair_draw + static_cast<uint64_t>(j));
        set(i + 2 * j, (draw >> 32) < threshold);
        set(i + 2 * j + 1, (draw & 0xffffffffULL) < threshold);
    }
    i += 2 * pairs;
    if (i < count) {  // a last, even element without its pair
        const uint64_t element = first + static_cast<uint64_t>(i);
        set(i, half(random_bits::bits(seed, offset + element / 2), element));
    }
}

// out[i] = x[i] · (element first + i kept ? scale : 0) for i in [0, count): dropout's
// x · mask / keep, with threshold = bernoulli_threshold(keep).
template <typename T>
NCE_WIDE_VECTORS void dropout_elements(const T* __restrict x, T* __restrict out, int64_t count, uint64_t first,
                                       uint64_t seed, uint64_t offset, uint64_t threshold, T scale) {
    for_each_bernoulli(count, first, seed, offset, threshold,
                       [x, out, scale](int64_t i, bool kept) { out[i] = x[i] * (kept ? scale : T(0)); });
}

// out[i] = max(x[i], 0) · (element first + i kept ? scale : 0): relu, then dropout, as the
// two-step form computes them.
template <typename T>
NCE_WIDE_VECTORS void relu_dropout_elements(const T* __restrict x, T* __restrict out, int64_t count, uint64_t first,
                                            uint64_t seed, uint64_t offset, uint64_t threshold, T scale) {
    for_each_bernoulli(count, first, seed, offset, threshold, [x, out, scale](int64_t i, bool kept) {
        T positive = x[i] > T(0) ? x[i] : T(0);  // relu(x) = max(x, 0)
        out[i] = positive * (kept ? scale : T(0));
    });
}

// out[i] = 1 if element first + i is kept, else 0, for i in [0, count).
template <typename T>
NCE_WIDE_VECTORS void bernoulli_elements(T* __restrict out, int64_t count, uint64_t first, uint64_t seed,
                                         uint64_t offset, uint64_t threshold) {
    for_each_bernoulli(count, first, seed, offset, threshold,
                       [out](int64_t i, bool kept) { out[i] = kept ? T(1) : T(0); });
}

}  // namespace nce::cpu
