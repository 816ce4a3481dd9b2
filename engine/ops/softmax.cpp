#include "engine/ops.h"

namespace nce {

namespace {

void check_softmax_input(const Var& x, const char* op) {
    check_floating(x.value(), op, "input");
    NCE_CHECK(x.value().rank() >= 1, "{}: input must have at least one axis (the last axis is normalised), got {}",
              op, shape_string(x.shape()));
}

}  // namespace

// y = softmax(x) over the last axis     x: [..., C]   y: [..., C]
//   y_j = exp(x_j) / sum_k exp(x_k)      (computed shifted by the row max, which cancels)
//
// Per row, dy_j/dx_i = y_j (δ_ij - y_i), so
//   dL/dx_i = sum_j dL/dy_j · y_j (δ_ij - y_i) = y_i (dL/dy_i - sum_j dL/dy_j y_j)
//   dx = y ⊙ (dy - <dy, y>)              <dy, y>: one number per row   [..., 1]
// The backward needs only the output y.
Var softmax(const Var& x) {
    check_softmax_input(x, "softmax");
    Tensor y = softmax(x.value());
    return Var::from_op("softmax", y, {x}, [y](const Tensor& dy) -> Grads { return {softmax_backward(y, dy)}; });
}

// y = log_softmax(x) over the last axis  x: [..., C]   y: [..., C]
//   y_j = x_j - log sum_k exp(x_k)
//
// Per row, dy_j/dx_i = δ_ij - softmax_i, so
//   dL/dx_i = sum_j dL/dy_j (δ_ij - softmax_i) = dL/dy_i - softmax_i · sum_j dL/dy_j
//   dx = dy - softmax ⊙ sum(dy)          softmax = exp(y); sum(dy): one number per row
// The backward needs only the output y (the log-probabilities).
Var log_softmax(const Var& x) {
    check_softmax_input(x, "log_softmax");
    Tensor y = log_softmax(x.value());
    return Var::from_op("log_softmax", y, {x},
                        [y](const Tensor& dy) -> Grads { return {log_softmax_backward(y, dy)}; });
}

}  // namespace nce
