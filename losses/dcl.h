// dcl: decoupled contrastive loss. InfoNCE in both directions with the positive left out
// of the denominator, whose negatives are every other row of both views.
//   D_i(u,v) = -u_i·v_i/tau + log( sum_{k != i} exp(u_i·u_k/tau) + sum_{k != i} exp(u_i·v_k/tau) )
//   L = (1/N) sum_i D_i(u,v) + (1/N) sum_i D_i(v,u)
// Derivation: docs/derivations/dcl.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// u, v [N, d] (N >= 2: row i needs another row as a negative), the same float dtype;
// tau > 0. Returns L, shape [], in u's dtype; one node whose backward is the closed form.
Var dcl(const Var& u, const Var& v, double tau = 0.1);

LossDefinition dcl_definition();

}  // namespace nce::losses
