// multi_positive: InfoNCE where every row of p sharing q_i's query id is a positive.
//   l_ij = q_i·p_j / tau;  L = (1/N) sum_i [ -(1/|G(i)|) sum_{j in G(i)} log softmax_j(l_i) ]
// Derivation: docs/derivations/multi_positive.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2, same dtype); qid int64 [N] (the groups G(i) = { j : qid_j = qid_i });
// log_tau: undefined for the fixed temperature `tau`, else a one-element learnable
// log-temperature (tau = max(exp(log_tau), 1e-4), and `tau` is ignored). Returns L, shape [].
Var multi_positive(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau = 0.1);

LossDefinition multi_positive_definition();

}  // namespace nce::losses
