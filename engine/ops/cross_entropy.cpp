#include "engine/ops.h"

namespace nce {

namespace {

// logits [N, C] float, targets int64 [N] with every entry in [0, C).
void check_cross_entropy_inputs(const Tensor& logits, const Tensor& targets) {
    check_floating(logits, "cross_entropy", "logits");
    NCE_CHECK(logits.rank() == 2, "cross_entropy: logits must be [N, C], got {}", shape_string(logits.shape()));
    int64_t rows = logits.size(0), classes = logits.size(1);
    NCE_CHECK(rows > 0 && classes > 0, "cross_entropy: logits {} has no rows or no classes; it needs N > 0, C > 0",
              shape_string(logits.shape()));
    NCE_CHECK(targets.defined(), "cross_entropy: targets are missing; pass an int64 tensor [{}]", rows);
    NCE_CHECK(targets.dtype() == Dtype::Int64, "cross_entropy: targets must be int64 class indices, got {}",
              dtype_name(targets.dtype()));
    NCE_CHECK(targets.shape() == Shape{rows}, "cross_entropy: targets {} must be [N] = [{}] to match logits {}",
              shape_string(targets.shape()), rows, shape_string(logits.shape()));
    NCE_CHECK(targets.device() == logits.device(), "cross_entropy: targets on {} but logits on {}",
              device_name(targets.device()), device_name(logits.device()));
    std::vector<int64_t> indices = targets.to(Device::CPU).to_indices();
    for (int64_t i = 0; i < rows; ++i)
        NCE_CHECK(indices[i] >= 0 && indices[i] < classes,
                  "cross_entropy: target {} at row {} is out of range for C = {} classes; targets must be in [0, {})",
                  indices[i], i, classes, classes);
}

}  // namespace

// L = -(1/N) sum_i log P_i,t_i           logits: [N, C]   targets t: [N]   L: []
//   log P = log_softmax(logits)          [N, C], one row per example
//
// With Y the one-hot of t ([N, C], Y_ij = 1 where j = t_i), L = -(1/N) sum_ij Y_ij log P_ij.
// Row i depends only on logits row i, and log_softmax's derivative is
// d log P_ij / d logits_ik = δ_jk - P_ik, so
//   dL/dlogits_ik = -(1/N) sum_j Y_ij (δ_jk - P_ik) = (1/N) (P_ik - Y_ik)   (sum_j Y_ij = 1)
//   dlogits = (P - Y) / N · dL           P = exp(log P), recovered from the saved log P
// One fused node: the closure keeps log P and the targets, and subtracts Y from P by
// scatter-adding -1 at each (i, t_i) (Backend::scatter_add_last_axis).
Var cross_entropy(const Var& logits, const Tensor& targets) {
    check_cross_entropy_inputs(logits.value(), targets);
    Backend& backend = backend_for(logits.value().device());
    int64_t rows = logits.size(0);

    Tensor log_probabilities = log_softmax(logits.value());  // [N, C], stable: shifted by each row's max
    Tensor target_log_probabilities = Tensor::empty({rows}, logits.dtype(), logits.value().device());  // [N]
    backend.gather_last_axis(log_probabilities, targets, target_log_probabilities);
    Tensor loss = -mean(target_log_probabilities);  // []

    return Var::from_op("cross_entropy", std::move(loss), {logits},
        [log_probabilities, targets, rows](const Tensor& dloss) -> Grads {
            Tensor dlogits = exp(log_probabilities);  // P   [N, C]
            Tensor minus_ones = Tensor::full({rows}, -1.0, dlogits.dtype(), dlogits.device());
            backend_for(dlogits.device()).scatter_add_last_axis(minus_ones, targets, dlogits);  // P - Y
            return {dlogits / static_cast<double>(rows) * dloss};  // (P - Y) / N · dL   [N, C] · []
        });
}

}  // namespace nce
