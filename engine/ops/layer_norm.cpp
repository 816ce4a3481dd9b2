#include "engine/ops.h"

#include <cmath>

namespace nce {

namespace {

void check_layer_norm_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
    check_floating(x, "layer_norm", "input x");
    check_floating(weight, "layer_norm", "weight");
    check_floating(bias, "layer_norm", "bias");
    NCE_CHECK(x.rank() >= 1 && x.size(-1) > 0, "layer_norm: x {} needs a non-empty last axis to normalise over",
              shape_string(x.shape()));
    int64_t width = x.size(-1);
    NCE_CHECK(weight.shape() == Shape{width} && bias.shape() == Shape{width},
              "layer_norm: weight {} and bias {} must both be [D] = [{}], the last axis of x {}",
              shape_string(weight.shape()), shape_string(bias.shape()), width, shape_string(x.shape()));
    NCE_CHECK(weight.dtype() == x.dtype() && bias.dtype() == x.dtype(),
              "layer_norm: x is {} but weight is {} and bias is {}; convert them to one dtype", dtype_name(x.dtype()),
              dtype_name(weight.dtype()), dtype_name(bias.dtype()));
    NCE_CHECK(weight.device() == x.device() && bias.device() == x.device(),
              "layer_norm: x, weight and bias must be on one device, got {}, {} and {}", device_name(x.device()),
              device_name(weight.device()), device_name(bias.device()));
    NCE_CHECK(std::isfinite(eps) && eps > 0, "layer_norm: eps must be a positive number (it keeps 1/sqrt(var + eps) "
              "finite for a constant row), got {}", eps);
}

}  // namespace

// Over the last axis, one row x of length D at a time      x: [..., D]   weight, bias: [D]
//   mean = (1/D) sum_j x_j        var = (1/D) sum_j (x_j - mean)^2   (biased, as PyTorch)
//   rstd = 1 / sqrt(var + eps)    xhat_j = (x_j - mean) · rstd       y_j = xhat_j · weight_j + bias_j
//
// The parameters: y is linear in them, and every row uses them, so
//   dL/dbias_j   = sum over rows of dy_j
//   dL/dweight_j = sum over rows of dy_j · xhat_j
// The input, within one row. Call g_j = dL/dxhat_j = dy_j · weight_j. Step by step:
//   d mean / dx_i = 1/D
//   d var  / dx_i = (2/D) (x_i - mean)      (the term through mean is (2/D) sum_j (x_j - mean) · (-1/D) = 0)
//   d rstd / dx_i = -1/2 (var + eps)^(-3/2) · d var / dx_i = -(rstd^3/D) (x_i - mean) = -(rstd^2/D) · xhat_i
//   d xhat_j / dx_i = rstd (δ_ij - 1/D) + (x_j - mean) · d rstd / dx_i
//                   = rstd (δ_ij - 1/D - xhat_j xhat_i / D)
// Summing g_j times that over j gives the three terms:
//   dL/dx_i = rstd · ( g_i - mean_j(g_j) - xhat_i · mean_j(g_j xhat_j) )
// Backend::layer_norm_backward computes these from x, weight and the saved mean and rstd [R].
Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps) {
    check_layer_norm_inputs(x.value(), weight.value(), bias.value(), eps);
    const Tensor& input = x.value();
    int64_t rows = input.numel() / input.size(-1);  // R: every leading axis flattened
    Tensor y = Tensor::empty(input.shape(), input.dtype(), input.device());  // [..., D]
    Tensor mean = Tensor::empty({rows}, input.dtype(), input.device());      // [R]
    Tensor rstd = Tensor::empty({rows}, input.dtype(), input.device());      // [R]
    backend_for(input.device()).layer_norm(input, weight.value(), bias.value(), eps, y, mean, rstd);

    return Var::from_op("layer_norm", std::move(y), {x, weight, bias},
        [input, weight_value = weight.value(), mean, rstd](const Tensor& dy) -> Grads {
            Tensor dx = Tensor::empty(input.shape(), input.dtype(), input.device());            // [..., D]
            Tensor dweight = Tensor::empty(weight_value.shape(), input.dtype(), input.device());  // [D]
            Tensor dbias = Tensor::empty(weight_value.shape(), input.dtype(), input.device());    // [D]
            backend_for(input.device()).layer_norm_backward(input, weight_value, mean, rstd, dy, dx, dweight, dbias);
            return {dx, dweight, dbias};
        });
}

}  // namespace nce
