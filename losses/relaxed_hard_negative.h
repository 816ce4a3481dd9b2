// relaxed_hard_negative: InfoNCE whose target spreads p_relax over the other passages of the query's group.
//   l_ij = q_i·p_j / tau
//   t_ij = 1 - p_relax at j = i, p_relax / (|G(i)| - 1) at the other j in G(i), 0 elsewhere
//          (one-hot at i when |G(i)| = 1)
//   L = (1/N) sum_i sum_j t_ij ( log t_ij - log softmax_j(l_i) )      with 0·log 0 = 0
// The other passages of the same query are not pushed away as negatives but kept as
// slightly-wanted answers. p_relax = 0 gives plain InfoNCE.
// Derivation: docs/derivations/relaxed_hard_negative.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2, same dtype); qid int64 [N]; tau > 0; 0 <= p_relax < 1. Returns L, shape [].
Var relaxed_hard_negative(const Var& q, const Var& p, const Tensor& qid, double tau = 0.1, double p_relax = 0.1);

LossDefinition relaxed_hard_negative_definition();

}  // namespace nce::losses
