// cosent: ranks the pairs' scaled similarities by their labels.
//   s_i = scale x_i·y_i
//   L = log( 1 + sum over pairs (i, j) with label_i < label_j of exp(s_i - s_j) )
// Every pair whose labels say "i below j" while the similarities say otherwise is pushed
// apart; the 1 inside the log is the empty ranking (no violation), so L >= 0.
// Derivation: docs/derivations/cosent.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// x, y [N, d] (N >= 1, same shape and dtype) get gradients; label [N] float (data); scale > 0.
// Returns L, shape []. A batch with no pair label_i < label_j gives L = log 1 = 0 and zero gradients.
Var cosent(const Var& x, const Var& y, const Tensor& label, double scale = 20.0);

LossDefinition cosent_definition();

}  // namespace nce::losses
