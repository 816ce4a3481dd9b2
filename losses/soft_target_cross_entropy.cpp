#include "losses/soft_target_cross_entropy.h"

namespace nce::losses {

SoftTargetCrossEntropy soft_target_cross_entropy(const Tensor& logits, const Tensor& targets) {
    check_floating(logits, "soft_target_cross_entropy", "logits");
    check_same_dtype(logits, targets, "soft_target_cross_entropy");
    NCE_CHECK(logits.rank() == 2 && logits.shape() == targets.shape(),
              "soft_target_cross_entropy: logits {} and targets {} must be matrices of the same shape",
              shape_string(logits.shape()), shape_string(targets.shape()));
    double rows = static_cast<double>(logits.size(0));
    Tensor log_probabilities = log_softmax(logits);                      // log P  [N, C]
    Tensor loss = sum(targets * log_probabilities) * (-1.0 / rows);      // []
    return {loss, exp(log_probabilities)};                               // P = exp(log P) <= 1
}

Tensor soft_target_cross_entropy_gradient(const Tensor& probabilities, const Tensor& targets) {
    double rows = static_cast<double>(probabilities.size(0));
    Tensor target_mass = sum(targets, 1, /*keepdim=*/true);              // rowsum(T)  [N, 1]
    return (target_mass * probabilities - targets) * (1.0 / rows);       // [N, C]
}

LogitGradients backward_through_logits(const Tensor& dlogits, const Tensor& q, const Tensor& p,
                                       const Temperature& temperature, const Var& log_tau) {
    LogitGradients gradients;
    gradients.dq = matmul(dlogits, p) * (1.0 / temperature.tau);                     // [N, d]
    gradients.dp = matmul(dlogits, q, Transpose::First) * (1.0 / temperature.tau);   // [N, d]
    if (temperature.learnable) {
        Tensor dlog_tau = temperature.clamped ? zeros_like(log_tau.value())
                                              : -sum(q * gradients.dq).to(log_tau.dtype());  // [] or [1]
        gradients.dlog_tau = dlog_tau.reshape(log_tau.shape());
    }
    return gradients;
}

}  // namespace nce::losses
