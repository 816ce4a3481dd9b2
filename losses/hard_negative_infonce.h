// hard_negative_infonce: InfoNCE (the positive of q_i is p_i) plus a penalty on the other
// rows of the same query group, which the plain loss would treat as negatives.
//   l_ij = q_i·p_j / tau
//   L = (1/N) sum_i ( lse_j l_ij - l_ii ) + weight · mean over pairs (i, j), i != j,
//       qid_i = qid_j, of exp(l_ij)            (the mean is 0 when there is no such pair)
// Derivation: docs/derivations/hard_negative_infonce.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2, same dtype); qid int64 [N]; log_tau as in multi_positive; weight >= 0.
// Where exp(l_ij) of a same-group pair overflows the dtype (l_ij > log of its largest
// value), throws nce::Error saying so (raise tau or lower weight). Returns L, shape [].
Var hard_negative_infonce(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau = 0.1,
                          double weight = 1.0);

LossDefinition hard_negative_infonce_definition();

}  // namespace nce::losses
