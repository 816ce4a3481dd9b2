// Linear: an affine map y = x W^T + b on the last axis, as PyTorch's nn.Linear.
#pragma once
#include "nn/module.h"

namespace nce::nn {

// y = x W^T + b      x: [..., in]   weight W: [out, in]   bias b: [out]   y: [..., out]
// Any number of leading axes; they are kept. Built from the engine's reshape, matmul and
// add, so its gradients are theirs.
Var linear(const Var& x, const Var& weight, const Var& bias);

class Linear : public Module {
public:
    // PyTorch's default initialisation, drawn from `generator`:
    //   weight ~ uniform(-1/sqrt(in), 1/sqrt(in))   (kaiming_uniform with a = sqrt(5))
    //   bias   ~ uniform(-1/sqrt(in), 1/sqrt(in))
    Linear(int64_t in_features, int64_t out_features, Generator& generator, Dtype dtype = Dtype::Float32);

    Var forward(const Var& x) const { return linear(x, weight, bias); }

    int64_t in_features() const { return weight.size(1); }
    int64_t out_features() const { return weight.size(0); }

    Var weight;  // [out, in]
    Var bias;    // [out]
};

}  // namespace nce::nn
