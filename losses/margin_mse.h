// margin_mse: the student's positive-minus-negative margin regressed onto the teacher's.
//   L = (1/N) sum_i ( (q_i·p_i - q_i·n_i) - label_i )^2
// label_i is the teacher's margin (e.g. a cross-encoder's score of p_i minus that of n_i).
// Derivation: docs/derivations/margin_mse.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// q, p, n [N, d] (N >= 1, same shape and dtype) get gradients; label [N] float (data). Returns L, shape [].
Var margin_mse(const Var& q, const Var& p, const Var& n, const Tensor& label);

LossDefinition margin_mse_definition();

}  // namespace nce::losses
