#include "engine/ops.h"

namespace nce {

// y = x ⊙ mask / (1 - p)       x, mask, y: same shape; mask_i = 1 with probability 1 - p, else 0
//
// Scaling the kept values by 1/(1 - p) keeps E[y] = x, so nothing changes at evaluation,
// where dropout is the identity. y is x times a constant (the mask drawn in the forward), so
//   dL/dx = dL/dy ⊙ mask / (1 - p)
// and the backward keeps only the scaled mask.
Var dropout(const Var& x, double p, Generator& generator, bool training) {
    check_floating(x.value(), "dropout", "input");
    NCE_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1) (the probability of zeroing an element), got {}", p);
    if (!training || p == 0) return x;

    double keep = 1 - p;
    Tensor mask = generator.bernoulli(x.shape(), x.dtype(), keep, x.value().device());  // 1 with probability 1 - p
    Tensor scaled_mask = mask * (1 / keep);                                              // mask / (1 - p)
    return Var::from_op("dropout", x.value() * scaled_mask, {x},
                        [scaled_mask](const Tensor& dy) -> Grads { return {dy * scaled_mask}; });
}

}  // namespace nce
