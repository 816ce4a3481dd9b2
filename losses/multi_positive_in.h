// multi_positive_in: the positives of a group share one softmax mass (the log outside the mean).
//   l_ij = q_i·p_j / tau;  L = (1/N) sum_i -log( (1/|G(i)|) sum_{j in G(i)} softmax_j(l_i) )
// Compared with multi_positive (the mean of the logs), the row is satisfied as soon as the
// group as a whole holds the mass, however it is shared among the group's passages.
// Derivation: docs/derivations/multi_positive_in.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2, same dtype); qid int64 [N] (the groups G(i) = { j : qid_j = qid_i });
// log_tau: undefined for the fixed temperature `tau`, else a one-element learnable
// log-temperature (tau = max(exp(log_tau), 1e-4), and `tau` is ignored). Returns L, shape [].
Var multi_positive_in(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau = 0.1);

LossDefinition multi_positive_in_definition();

}  // namespace nce::losses
