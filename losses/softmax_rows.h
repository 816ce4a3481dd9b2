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

#include "engine/nce.h"

namespace nce::losses {

struct SoftmaxCrossEntropy {
    double loss_sum = 0;                  // sum over the rows (the caller takes the mean)
    Tensor probabilities_minus_targets;   // P - Y   [R, C], in the logits' dtype
};

// Y: 1 at (i, target(i)), 0 elsewhere.   [R, C]
inline Tensor one_hot_rows(const std::vector<int64_t>& targets, int64_t columns, Dtype dtype) {
    std::vector<double> values(targets.size() * static_cast<size_t>(columns), 0.0);
    for (size_t i = 0; i < targets.size(); ++i) values[i * static_cast<size_t>(columns) + targets[i]] = 1.0;
    return Tensor::from_vector(values, {static_cast<int64_t>(targets.size()), columns}, dtype);
}

inline SoftmaxCrossEntropy softmax_cross_entropy_rows(const Tensor& logits, const std::vector<int64_t>& targets) {
    int64_t rows = logits.size(0), columns = logits.size(1);
    Tensor log_probabilities = log_softmax(logits);  // [R, C]
    // log P_i,target(i), picked on the logits' device: entry i·C + target(i) of log P as [R·C, 1].
    std::vector<int64_t> target_entries(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) target_entries[i] = static_cast<int64_t>(i) * columns + targets[i];
    Tensor target_log_probabilities =
        index_select(log_probabilities.reshape({rows * columns, 1}),
                     Tensor::from_indices(target_entries, {rows}).to(logits.device()));  // [R, 1]
    SoftmaxCrossEntropy result;
    result.loss_sum = -sum(target_log_probabilities.to(Dtype::Float64)).item();  // one number read back
    result.probabilities_minus_targets =
        exp(log_probabilities) - one_hot_rows(targets, columns, logits.dtype()).to(logits.device());
    return result;
}

}  // namespace nce::losses
