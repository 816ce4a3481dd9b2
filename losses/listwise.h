// listwise: match the model's distribution over each query's K candidates to a target
// distribution made from graded relevance scores (KL divergence).
//   pr_qk = softmax_k(q_q·a_qk / tau)
//   sh_qk = score_qk / max_k score_qk if that max > 0, else score_qk;  t_qk = softmax_k(sh_qk / tau)
//   L = (1/Q) sum_q sum_k t_qk ( log t_qk - log pr_qk )
// Derivation: docs/derivations/listwise.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q [Q, d] (Q >= 1); a [Q, K, d] (K >= 2 candidates per query, q's dtype); score [Q, K]
// (data, any dtype: no gradient); tau > 0. q and a get a gradient. Returns L, shape [].
Var listwise(const Var& q, const Var& a, const Tensor& score, double tau = 1.0);

LossDefinition listwise_definition();

}  // namespace nce::losses
