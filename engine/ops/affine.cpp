#include "engine/ops.h"

namespace nce {

// y = x W^T + b          x [N, in], W [out, in], b [out], y [N, out]
//
// y_nj = sum_i x_ni W_ji + b_j, so
//   dL/dx_ni = sum_j dL/dy_nj W_ji   ->  dL/dx = dL/dy · W          [N, out]·[out, in]
//   dL/dW_ji = sum_n dL/dy_nj x_ni   ->  dL/dW = (dL/dy)^T · x      [out, N]·[N, in]
//   dL/db_j  = sum_n dL/dy_nj        ->  dL/db = the column sums of dL/dy
// the backwards of matmul and of a broadcast add. The forward writes b into every row of y
// first and lets the GEMM add x W^T on top (beta = 1), so the bias costs no pass of its own
// (a GEMM with beta = 0 zeroes y first anyway).
// dL/dx needs W, dL/dW needs x: an operand that needs no gradient is not kept.
Var affine(const Var& x, const Var& weight, const Var& bias) {
    NCE_CHECK(x.value().rank() == 2 && weight.value().rank() == 2 && bias.value().rank() == 1 &&
                  x.size(1) == weight.size(1) && bias.size(0) == weight.size(0),
              "affine: x must be [N, in], weight [out, in] and bias [out], got x {}, weight {} and bias {}",
              shape_string(x.shape()), shape_string(weight.shape()), shape_string(bias.shape()));
    NCE_CHECK(x.dtype() == weight.dtype() && bias.dtype() == weight.dtype(),
              "affine: x, weight and bias must share a dtype, got {}, {} and {}", dtype_name(x.dtype()),
              dtype_name(weight.dtype()), dtype_name(bias.dtype()));
    Tensor y = repeat_rows(bias.value(), x.size(0));                         // [N, out], each row b
    matmul_into(x.value(), weight.value(), Transpose::Second, y, 1.0, 1.0);  // += x W^T
    const bool x_needs_grad = x.requires_grad(), weight_needs_grad = weight.requires_grad();
    return Var::from_op("affine", std::move(y), {x, weight, bias},
        [xv = weight_needs_grad ? x.value() : Tensor(), wv = x_needs_grad ? weight.value() : Tensor(),
         bias_needs_grad = bias.requires_grad()](const Tensor& dy) -> Grads {
            Tensor dx = wv.defined() ? matmul(dy, wv) : Tensor();                          // [N, in]
            Tensor dweight = xv.defined() ? matmul(dy, xv, Transpose::First) : Tensor();  // [out, in]
            Tensor dbias = bias_needs_grad ? sum(dy, 0) : Tensor();                       // [out]
            return {dx, dweight, dbias};
        });
}

}  // namespace nce
