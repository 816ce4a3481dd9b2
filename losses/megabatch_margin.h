// megabatch_margin: a margin on the positive and on the hardest in-batch negative.
//   j*(i) = argmax_{j != i} a_i·p_j   (ties: the lowest j)
//   L = (1/N) sum_i [ relu(pos_margin - a_i·p_i) + relu(a_i·p_j*(i) - neg_margin) ]
// Derivation: docs/derivations/megabatch_margin.md.
#pragma once
#include <vector>

#include "losses/loss.h"

namespace nce::losses {

// a, p [N, d] (N >= 2: each row needs another row's p as its negative), the same float
// dtype; pos_margin, neg_margin >= 0. Returns L, shape [], in a's dtype; one node whose
// backward sends the negative term's gradient only through p_j*(i).
Var megabatch_margin(const Var& a, const Var& p, double pos_margin = 0.8, double neg_margin = 0.3);

// j*(i) for every row: the hardest negative, argmax over j != i of a_i·p_j, lowest j on ties.
// a, p: [N, d] float tensors (no checks; megabatch_margin checks its inputs).
std::vector<int64_t> hardest_negatives(const Tensor& a, const Tensor& p);

LossDefinition megabatch_margin_definition();

}  // namespace nce::losses
