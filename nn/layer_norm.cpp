#include "nn/layer_norm.h"

namespace nce::nn {

LayerNorm::LayerNorm(int64_t dim, double eps, Dtype dtype) : eps_(eps) {
    NCE_CHECK(dim > 0, "LayerNorm: dim must be positive, got {}", dim);
    NCE_CHECK(eps > 0, "LayerNorm: eps must be positive (it keeps the division finite), got {}", eps);
    NCE_CHECK(is_floating(dtype), "LayerNorm: parameters must be float32 or float64, got {}", dtype_name(dtype));
    weight = Var::parameter(Tensor::full({dim}, 1.0, dtype));
    bias = Var::parameter(Tensor::zeros({dim}, dtype));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
}

Var LayerNorm::forward(const Var& x) const {
    NCE_CHECK(x.value().rank() >= 1 && x.size(-1) == weight.size(0),
              "LayerNorm: input {} must end in the normalised size {}", shape_string(x.shape()), weight.size(0));
    return layer_norm(x, weight, bias, eps_);
}

}  // namespace nce::nn
