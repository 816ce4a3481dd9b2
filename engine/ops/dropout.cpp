#include "engine/ops.h"

namespace nce {

// y = x ⊙ mask / (1 - p)       x, mask, y: same shape; mask_i = 1 with probability 1 - p, else 0
//
// Scaling the kept values by 1/(1 - p) keeps E[y] = x, so nothing changes at evaluation,
// where dropout is the identity. y is x times a constant (the mask drawn in the forward), so
//   dL/dx = dL/dy ⊙ mask / (1 - p)
// The mask is counter-based random draws (random.h): the backward keeps only the generator's
// seed and the offset of the forward's draws, and draws the same mask again on dL/dy. No
// mask is stored, and each direction is one pass.
Var dropout(const Var& x, double p, Generator& generator, bool training) {
    check_floating(x.value(), "dropout", "input");
    NCE_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1) (the probability of zeroing an element), got {}", p);
    if (!training || p == 0) return x;

    const double keep = 1 - p;
    const uint64_t seed = generator.seed(), offset = generator.take(static_cast<uint64_t>(x.value().numel()));
    return Var::from_op("dropout", apply_dropout_mask(x.value(), seed, offset, keep), {x},
                        [seed, offset, keep](const Tensor& dy) -> Grads {
                            return {apply_dropout_mask(dy, seed, offset, keep)};
                        });
}

// y = relu(x) ⊙ mask / (1 - p)      relu(x) = max(x, 0); mask as in dropout above
//
// The chain rule through both: dL/dx = dL/dy ⊙ mask / (1 - p) ⊙ step(x), step(x) = 1 where
// x > 0. mask ⊙ step(x) is 1 exactly where y != 0 (a kept positive x gives y = x / (1 - p),
// never 0; a dropped or non-positive x gives y = 0), so
//   dL/dx = dL/dy / (1 - p) where y != 0, else 0
// and the backward keeps y alone: no mask, no second draw, one pass.
Var relu_dropout(const Var& x, double p, Generator& generator, bool training) {
    check_floating(x.value(), "relu_dropout", "input");
    NCE_CHECK(p >= 0 && p < 1, "relu_dropout: p must be in [0, 1) (the probability of zeroing an element), got {}", p);
    if (!training || p == 0) return relu(x);

    const double keep = 1 - p;
    const uint64_t seed = generator.seed(), offset = generator.take(static_cast<uint64_t>(x.value().numel()));
    Tensor y = apply_relu_dropout_mask(x.value(), seed, offset, keep);
    return Var::from_op("relu_dropout", y, {x},
                        [y, keep](const Tensor& dy) -> Grads { return {relu_dropout_backward(y, dy, keep)}; });
}

}  // namespace nce
