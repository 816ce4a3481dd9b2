// debiased: the debiased contrastive loss. Two views z = [u; v]; each row's negatives are
// corrected for the chance tau_plus that a "negative" is really a positive, optionally
// re-weighted towards hard negatives (beta > 0), and floored at M exp(-1/t).
//   pos_i = exp(z_i·z_p(i)/t),  ng_ij = exp(z_i·z_j/t) for j not in {i, p(i)},  M = 2N - 2
//   R_i = sum_j imp_ij ng_ij / ((1/M) sum_j imp_ij),  imp_ij = exp(beta z_i·z_j/t)
//   Ng_i = max( (R_i - tau_plus M pos_i)/(1 - tau_plus), M exp(-1/t) )
//   L = (1/2N) sum_i -log( pos_i / (pos_i + Ng_i) )
// With beta = 0 every imp_ij is 1 and R_i = sum_j ng_ij. Derivation: docs/derivations/debiased.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// u, v [N, d] (N >= 2), the same float dtype; t > 0, 0 <= tau_plus < 1, beta >= 0.
// Returns L, shape [], in u's dtype; one node whose backward is the closed form, the
// importance weights differentiated too.
Var debiased(const Var& u, const Var& v, double t = 0.5, double tau_plus = 0.1, double beta = 0.0);

LossDefinition debiased_definition();

}  // namespace nce::losses
