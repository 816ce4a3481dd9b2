// Row-wise softmax cross-entropy with one target column per row: the step every loss of
// the InfoNCE family (infonce, infonce_symmetric, ntxent) shares.
//
//   logits: [R, C]        target(i) in [0, C)       P = softmax rows of logits   [R, C]
//   loss_sum = sum_i ( lse_j logits_ij - logits_i,target(i) ) = - sum_i log P_i,target(i)
//   d loss_sum / d logits = P - Y                    Y: one-hot at j = target(i)
//
// Why P - Y: lse_j logits_ij has derivative softmax_j = P_ij, and -logits_i,target(i) has
// derivative -1 at the target column only.
//
// Stability: log P comes from log_softmax, which shifts each row by its maximum, so no
// exponent is ever positive. An entry masked to -inf gets P = 0 and contributes nothing;
// the target column must not be masked.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/backend.h"
#include "engine/nce.h"

namespace nce::losses {

struct SoftmaxCrossEntropy {
    Tensor target_log_probabilities;      // log P_i,target(i)   [R], on the logits' device
    Tensor probabilities_minus_targets;   // P - Y   [R, C], in the logits' dtype
    // -sum_i log P_i,target(i) in float64, on the logits' device (the caller takes the mean).
    Tensor loss_sum() const { return -sum(target_log_probabilities.to(Dtype::Float64)); }
};

// P - Y is made where the logits are: P = exp(log P), then -1 scatter-added at each
// (i, target(i)). Only the R target columns travel to a device, never an R x C one-hot.
inline SoftmaxCrossEntropy softmax_cross_entropy_rows(const Tensor& logits, const std::vector<int64_t>& targets) {
    const int64_t rows = logits.size(0);
    Backend& backend = backend_for(logits.device());
    const Tensor target_columns = Tensor::from_indices(targets, {rows}).to(logits.device());  // [R]
    const Tensor log_probabilities = log_softmax(logits);                                      // [R, C]
    SoftmaxCrossEntropy result;
    result.target_log_probabilities = Tensor::empty({rows}, logits.dtype(), logits.device());  // [R]
    backend.gather_last_axis(log_probabilities, target_columns, result.target_log_probabilities);
    result.probabilities_minus_targets = exp(log_probabilities);                 // P   [R, C]
    const Tensor minus_ones = Tensor::full({rows}, -1.0, logits.dtype(), logits.device());
    backend.scatter_add_last_axis(minus_ones, target_columns, result.probabilities_minus_targets);  // P - Y
    return result;
}

}  // namespace nce::losses
