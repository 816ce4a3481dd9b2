#include "nn/linear.h"

#include <cmath>

namespace nce::nn {

// y = x W^T + b, on x flattened to rows [N, in] (N = product of the leading axes):
//   rows_out = rows · W^T + b        [N, in]·[in, out] + [out] (broadcast over rows)
// then reshaped back to [..., out]. The backward is the backwards of reshape and of the
// engine's affine op (dL/dx = dL/dy · W, dL/dW = (dL/dy)^T · x, dL/db = sum over rows of dL/dy).
Var linear(const Var& x, const Var& weight, const Var& bias) {
    NCE_CHECK(weight.shape().size() == 2 && bias.shape().size() == 1 && bias.size(0) == weight.size(0),
              "linear: weight must be [out, in] and bias [out], got weight {} and bias {}",
              shape_string(weight.shape()), shape_string(bias.shape()));
    const int64_t in_features = weight.size(1), out_features = weight.size(0);
    NCE_CHECK(x.value().rank() >= 1 && x.size(-1) == in_features,
              "linear: input {} must end in the layer's in_features {} (weight {})", shape_string(x.shape()),
              in_features, shape_string(weight.shape()));
    NCE_CHECK(x.dtype() == weight.dtype(),
              "linear: input is {} but the weight is {}; convert the input to the weight's dtype",
              dtype_name(x.dtype()), dtype_name(weight.dtype()));

    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    Var rows = reshape(x, {-1, in_features});                               // [N, in]
    Var rows_out = affine(rows, weight, bias);                              // [N, out]
    return reshape(rows_out, out_shape);                                    // [..., out]
}

Linear::Linear(int64_t in_features, int64_t out_features, Generator& generator, Dtype dtype) {
    NCE_CHECK(in_features > 0 && out_features > 0,
              "Linear: in_features and out_features must be positive, got {} and {}", in_features, out_features);
    NCE_CHECK(is_floating(dtype), "Linear: parameters must be float32 or float64, got {}", dtype_name(dtype));
    // kaiming_uniform(a = sqrt(5)): gain = sqrt(2 / (1 + a^2)) = sqrt(1/3), std = gain / sqrt(in),
    // bound = sqrt(3) · std = 1 / sqrt(in). PyTorch's bias bound is 1 / sqrt(in) too.
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    weight = Var::parameter(generator.uniform({out_features, in_features}, dtype, -bound, bound));
    bias = Var::parameter(generator.uniform({out_features}, dtype, -bound, bound));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
}

}  // namespace nce::nn
