// Cross-entropy of each row's softmax against a row of target weights: the core shared by
// the grouped InfoNCE losses (multi_positive, rank_infonce, hard_negative_infonce).
//
//   logits l [N, C]    targets T [N, C] (constants: data, no gradient)
//   P = softmax rows of l,   log P_ij = l_ij - lse_k l_ik
//   L = -(1/N) sum_ij T_ij log P_ij
//
// One-hot rows of T give ordinary cross-entropy (InfoNCE); T_ij = 1/|G(i)| over a group
// gives multi_positive; T_ij = w_j over a group gives rank_infonce.
//
// Gradient, for one entry l_ik:
//   d log P_ij / d l_ik = [j = k] - P_ik
//   dL/dl_ik = -(1/N) sum_j T_ij ([j = k] - P_ik) = ( rowsum(T)_i P_ik - T_ik ) / N
// so   dL/dl = ( rowsum(T) ⊙ P - T ) / N        rowsum(T) [N, 1] broadcast along each row.
// When every row of T sums to 1 (a distribution) this is the familiar (P - T) / N.
#pragma once
#include "engine/nce.h"
#include "losses/loss_common.h"

namespace nce::losses {

struct SoftTargetCrossEntropy {
    Tensor loss;           // L, shape [], in the logits' dtype
    Tensor probabilities;  // P [N, C], what the gradient needs
};

// Forward, stable: log P comes from log_softmax (shifted by the row max), so no exp of a
// large positive number is taken. logits and targets: same shape [N, C], same float dtype.
SoftTargetCrossEntropy soft_target_cross_entropy(const Tensor& logits, const Tensor& targets);

// dL/dl = ( rowsum(T) ⊙ P - T ) / N     [N, C]
Tensor soft_target_cross_entropy_gradient(const Tensor& probabilities, const Tensor& targets);

// Back through the logits l = q p^T / tau, given G = dL/dl [N, N] (the upstream dy already in it):
//   dL/dq   = G · p / tau              [N, N]·[N, d]
//   dL/dp   = G^T · q / tau            [N, N]·[N, d]
//   dL/dtau = -(1/tau) sum_ij G_ij l_ij = -(1/tau) sum(q ⊙ dL/dq)   (l_ij = q_i·p_j / tau),
// so the logits need not be kept for the temperature's gradient, and
//   dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)     (0 while tau sits at its floor 1e-4)
// Everything stays a tensor on G's device: dlog_tau is made there, in log_tau's shape and dtype.
struct LogitGradients {
    Tensor dq, dp;
    Tensor dlog_tau;  // undefined when the temperature is fixed
};
LogitGradients backward_through_logits(const Tensor& dlogits, const Tensor& q, const Tensor& p,
                                       const Temperature& temperature, const Var& log_tau);

}  // namespace nce::losses
