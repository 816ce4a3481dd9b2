// ntxent: NT-Xent (SimCLR). z stacks two views of B items: rows 0..B-1, then B..2B-1; the
// positive of row i is p(i) = (i + B) mod 2B and every other row is a negative.
//   l_ij = z_i·z_j / tau;   L = (1/2B) sum_i ( lse_j l_ij - l_i,p(i) ),  j = i left out of the lse when mask_self
// Derivation: docs/derivations/ntxent.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// z [2B, d] (B >= 2), finite floats. log_tau: undefined for the fixed temperature `tau`
// (> 0), else a one-element learnable log-temperature (tau = max(exp(log_tau), 1e-4)).
// mask_self: leave l_ii out of each row's log-sum-exp (SimCLR); false keeps it (the seed's
// derivation). Returns L, shape [], in z's dtype; one node whose backward is the closed form.
Var ntxent(const Var& z, const Var& log_tau, double tau = 0.1, bool mask_self = true);

LossDefinition ntxent_definition();

}  // namespace nce::losses
