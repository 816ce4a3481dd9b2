// LayerNorm: normalise the last axis to zero mean and unit variance, then scale and shift,
// as PyTorch's nn.LayerNorm over one trailing axis.
#pragma once
#include "nn/module.h"

namespace nce::nn {

class LayerNorm : public Module {
public:
    // weight [dim] = 1, bias [dim] = 0 (PyTorch's initialisation).
    explicit LayerNorm(int64_t dim, double eps = 1e-5, Dtype dtype = Dtype::Float32);

    // x [..., dim] -> [..., dim]: (x - mean) / sqrt(var + eps) · weight + bias (engine layer_norm).
    Var forward(const Var& x) const;

    double eps() const { return eps_; }

    Var weight;  // [dim]
    Var bias;    // [dim]

private:
    double eps_;
};

}  // namespace nce::nn
