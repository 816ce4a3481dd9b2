// A seeded, counter-based random generator owned by the caller.
//
// Draw number k of a generator seeded with s is a pure function of (s, k): bits(s, k) mixes
// the two with SplitMix64's finaliser. Nothing depends on which thread or device computes a
// draw, so the same seed gives bit-identical tensors for any thread count, on CPU and GPU.
// Each fill consumes a block of counters and moves the generator's offset past it.
// The draws (random_bits) are NCE_HOST_DEVICE: the CUDA backend's kernels call these same
// functions, so a draw is one piece of code on both backends.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>

#include "engine/backend.h"
#include "engine/cuda/host_device.h"
#include "engine/tensor.h"

namespace nce {

namespace random_bits {

NCE_HOST_DEVICE inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

NCE_HOST_DEVICE inline uint64_t bits(uint64_t seed, uint64_t counter) {
    return mix(mix(seed + 0x9e3779b97f4a7c15ULL) ^ (counter * 0xd1b54a32d192ed03ULL + 0x8cb92ba72f3d8dd7ULL));
}

// Uniform in [0, 1) with 53 random bits.
NCE_HOST_DEVICE inline double uniform(uint64_t seed, uint64_t counter) {
    return static_cast<double>(bits(seed, counter) >> 11) * 0x1.0p-53;
}

// Standard normal by Box-Muller on two uniforms drawn from counters 2k and 2k+1 (the C
// library's sqrt, log and cos, which device code has under the same names).
NCE_HOST_DEVICE inline double normal(uint64_t seed, uint64_t counter) {
    double u1 = 1.0 - uniform(seed, 2 * counter);  // (0, 1]: log is finite
    double u2 = uniform(seed, 2 * counter + 1);
    return ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
}

// Bernoulli element `element` of a fill at `offset` (see Generator::bernoulli): the high
// half of draw offset + element/2 for an even element, the low half for an odd one, kept
// when below threshold = ceil(probability · 2^32).
NCE_HOST_DEVICE inline bool bernoulli_kept(uint64_t seed, uint64_t offset, uint64_t element, uint64_t threshold) {
    const uint64_t draw = bits(seed, offset + element / 2);
    return (element % 2 == 0 ? draw >> 32 : draw & 0xffffffffULL) < threshold;
}

}  // namespace random_bits

class Generator {
public:
    explicit Generator(uint64_t seed) : seed_(seed) {}

    uint64_t seed() const { return seed_; }
    uint64_t offset() const { return offset_; }
    // Rewinds or advances the stream: with the same offset, the same draws come again
    // (a resumed run restores it; GradCache replays a mini-batch's dropout masks with it).
    void set_offset(uint64_t offset) { offset_ = offset; }
    // Reserves the next `count` draws for a caller that makes them itself (dropout draws its
    // mask inside the kernel): returns the offset of the first and moves past them.
    uint64_t take(uint64_t count) {
        uint64_t first = offset_;
        offset_ += count;
        return first;
    }

    Tensor uniform(const Shape& shape, Dtype dtype, double low = 0.0, double high = 1.0, Device device = Device::CPU);
    Tensor normal(const Shape& shape, Dtype dtype, double mean = 0.0, double std = 1.0, Device device = Device::CPU);
    // 1 with probability `probability`, else 0, in the given float dtype. Bernoulli elements
    // take 32 bits each: element i uses half of draw offset + i/2 (the high half for an even
    // i), 1 when it is below ceil(probability · 2^32), so the probability is exact to 2^-32
    // and two elements share one hash. The fill still moves the offset past n draws.
    Tensor bernoulli(const Shape& shape, Dtype dtype, double probability, Device device = Device::CPU);

    // Scalar draws for host-side choices (shuffles, sampling).
    double next_uniform();
    // Uniform integer in [0, n).
    int64_t next_index(int64_t n);

private:
    Tensor draw(Distribution distribution, const Shape& shape, Dtype dtype, double a, double b, Device device);

    uint64_t seed_;
    uint64_t offset_ = 0;
};

// Dropout's product with its mask drawn on the fly (Backend::dropout):
//   out[i] = x[i] / keep where element i of a Bernoulli(keep) fill at `offset` is 1, else 0.
// The same seed and offset give the same mask, so the backward applies it to dL/dy again
// instead of storing it.
Tensor apply_dropout_mask(const Tensor& x, uint64_t seed, uint64_t offset, double keep);
// relu, then the same dropout, in one pass (Backend::relu_dropout), and its backward from its
// output y: dx = dy / keep where y != 0, else 0 (Backend::relu_dropout_backward).
Tensor apply_relu_dropout_mask(const Tensor& x, uint64_t seed, uint64_t offset, double keep);
Tensor relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep);

}  // namespace nce
