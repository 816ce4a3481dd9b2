// Per-element bodies of the counter-based random fills and of dropout. Element i's draw is
// random_bits (engine/random.h), the same host-device functions the CPU backend calls, at
// the same counter, so fills and dropout masks are the CPU's bit for bit.
#pragma once
#include <cstdint>

#include "engine/backend.h"
#include "engine/cuda/host_device.h"
#include "engine/random.h"

namespace nce::cuda {

// out[i] for a fill at `offset`: uniform a + (b - a) u and normal a + b z from draw offset + i
// (computed in double, as the CPU does, then rounded to T); Bernoulli 1 where element i is
// kept at `threshold` (random_bits::bernoulli_kept).
template <typename T>
struct RandomBody {
    Distribution distribution;
    uint64_t seed, offset, threshold;
    double a, b;
    T* out;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const uint64_t element = static_cast<uint64_t>(i);
        double value = 0;
        switch (distribution) {
            case Distribution::Uniform: value = a + (b - a) * random_bits::uniform(seed, offset + element); break;
            case Distribution::Normal: value = a + b * random_bits::normal(seed, offset + element); break;
            case Distribution::Bernoulli:
                value = random_bits::bernoulli_kept(seed, offset, element, threshold) ? 1.0 : 0.0;
                break;
        }
        out[i] = static_cast<T>(value);
    }
};

// out[i] = x[i] · (kept ? scale : 0), scale = 1 / keep; with relu_first, max(x[i], 0) in x[i]'s place.
template <typename T, bool relu_first>
struct DropoutBody {
    const T* x;
    T* out;
    uint64_t seed, offset, threshold;
    T scale;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const bool kept = random_bits::bernoulli_kept(seed, offset, static_cast<uint64_t>(i), threshold);
        T value = x[i];
        if constexpr (relu_first) value = value > T(0) ? value : T(0);
        out[i] = value * (kept ? scale : T(0));
    }
};

// relu-then-dropout's backward from its output: dx[i] = dy[i] · scale where y[i] != 0, else 0.
template <typename T>
struct ReluDropoutBackwardBody {
    const T* y;
    const T* dy;
    T* dx;
    T scale;
    NCE_HOST_DEVICE void operator()(int64_t i) const { dx[i] = y[i] != T(0) ? dy[i] * scale : T(0); }
};

}  // namespace nce::cuda
