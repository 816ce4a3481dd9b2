#include "nn/dropout.h"

namespace nce::nn {

Dropout::Dropout(double p) : p_(p) {
    NCE_CHECK(p >= 0 && p < 1, "Dropout: p must be in [0, 1) (the probability of zeroing an element), got {}", p);
}

Var Dropout::forward(const Var& x, Generator* generator) const {
    if (!training() || p_ == 0) return x;
    NCE_CHECK(generator != nullptr,
              "Dropout: training mode with p = {} needs a generator for the masks; pass one, or call train(false)",
              p_);
    return dropout(x, p_, *generator, /*training=*/true);
}

}  // namespace nce::nn
