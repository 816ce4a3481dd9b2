// Dropout: during training, zero each element with probability p and scale the rest by
// 1/(1-p); in eval mode, the identity. As PyTorch's nn.Dropout, with the random masks
// drawn from a Generator the caller passes in (so a run can replay them).
#pragma once
#include "nn/module.h"

namespace nce::nn {

class Dropout : public Module {
public:
    explicit Dropout(double p);

    // In training mode with p > 0 the generator is required; otherwise it may be null.
    Var forward(const Var& x, Generator* generator) const;

    double p() const { return p_; }

private:
    double p_;
};

}  // namespace nce::nn
