// smooth_l1: a regression loss that is quadratic near 0 and linear beyond beta.
//   e = pred - target elementwise;  h(e) = 0.5 e^2 / beta if |e| < beta, else |e| - 0.5 beta
//   L = mean of h over all N·d elements
// Derivation: docs/derivations/smooth_l1.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// pred, target [N, d] (N >= 1, d >= 1, same shape and dtype); beta > 0. Both inputs get a
// gradient (target's is minus pred's). Returns L, shape [].
Var smooth_l1(const Var& pred, const Var& target, double beta = 1.0);

LossDefinition smooth_l1_definition();

}  // namespace nce::losses
