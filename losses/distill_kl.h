// distill_kl: distillation by KL divergence. For each query, the student's softmax over its
// K candidates is pulled towards the teacher's softmax over the same candidates.
//   s_ik = q_i·c_ik / tau
//   t_ik = softmax_k(teacher_ik / teacher_tau)
//   L = (1/N) sum_i sum_k t_ik ( log t_ik - log softmax_k(s_i)_k ),   0·log 0 = 0
// A teacher score of -inf rules a candidate out (t = 0 there, its term is 0).
// Derivation: docs/derivations/distill_kl.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q [N, d] (N >= 1) and c [N, K, d] (K >= 1 candidates per query, q's dtype) get gradients;
// teacher [N, K] float (data: no gradient) holds finite scores or -inf, with at least one
// finite score per row; tau > 0, teacher_tau > 0. Returns L, shape []. K = 1 gives L = 0.
Var distill_kl(const Var& q, const Var& c, const Tensor& teacher, double tau = 0.05, double teacher_tau = 1.0);

LossDefinition distill_kl_definition();

}  // namespace nce::losses
