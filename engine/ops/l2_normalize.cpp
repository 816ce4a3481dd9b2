#include "engine/ops.h"

namespace nce {

// L2 normalisation of each row (the last axis), PyTorch's F.normalize convention.
//
//   x: [..., D]   norm = ||x|| over the last axis: [..., 1]   y = x / max(norm, eps): [..., D]
//
// eps keeps a zero (or tiny) row from dividing by zero: the denominator is
// denominator = max(norm, eps), so a zero row comes out as zeros, never NaN.
//
// Where norm >= eps, the denominator is the norm itself and y = x / ||x||:
//   dy_j/dx_i = δ_ij / norm - x_j x_i / norm^3 = (δ_ij - y_i y_j) / norm
//   dL/dx_i   = sum_j dL/dy_j (δ_ij - y_i y_j) / norm
//             = (dL/dy_i - y_i <y, dL/dy>) / norm
// Where norm < eps, the denominator is the constant eps and y = x / eps:
//   dL/dx_i   = dL/dy_i / eps
// Both cases in one line, with uses_norm = 1 where norm >= eps, else 0:
//   dL/dx = (dL/dy - uses_norm · y <y, dL/dy>) / denominator      [..., D]
Var l2_normalize(const Var& x, double eps) {
    const Tensor& xv = x.value();
    check_floating(xv, "l2_normalize", "x");
    NCE_CHECK(xv.rank() >= 1, "l2_normalize: x must have at least one axis (rows along the last), got a scalar");
    NCE_CHECK(eps > 0, "l2_normalize: eps must be positive (it bounds the denominator away from 0), got {}", eps);

    Tensor norm = sqrt(sum(square(xv), -1, true));                            // [..., 1]
    Tensor eps_tensor = full_like(norm, eps);                                 // [..., 1]
    Tensor denominator = maximum(norm, eps_tensor);                           // [..., 1]
    Tensor uses_norm = 1.0 - greater(eps_tensor, norm);                       // [..., 1]: norm >= eps
    Tensor y = xv / denominator;                                              // [..., D]

    return Var::from_op("l2_normalize", y, {x},
        [y, denominator, uses_norm](const Tensor& dy) -> Grads {
            Tensor y_dot_dy = sum(y * dy, -1, true);                          // [..., 1]: <y, dL/dy>
            return {(dy - uses_norm * y * y_dot_dy) / denominator};           // [..., D]
        });
}

}  // namespace nce
