// infonce_symmetric: InfoNCE in both directions, averaged. q->p scores each q_i against
// C = [p; negatives]; p->q scores each p_i against q only (negatives take no part).
//   L = 1/2 [ (1/N) sum_i ( lse_j q_i·c_j/tau - q_i·p_i/tau ) + (1/N) sum_i ( lse_j p_i·q_j/tau - p_i·q_i/tau ) ]
// Derivation: docs/derivations/infonce_symmetric.md.
#pragma once
#include "losses/infonce_blocks.h"
#include "losses/loss.h"

namespace nce::losses {

// Inputs as infonce's: q, p [N, d] (N >= 2); negatives [M, d] or undefined; log_tau
// undefined for the fixed `tau` (> 0) or one learnable element. Returns L, shape [].
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);
// The same, with the logits' row blocks chosen by hand (LogitBlocking in infonce_blocks.h).
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau,
                      LogitBlocking blocking);

LossDefinition infonce_symmetric_definition();

}  // namespace nce::losses
