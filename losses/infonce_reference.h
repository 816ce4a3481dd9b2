// The plain, unfused forms of infonce and infonce_symmetric: the whole logit matrix, then
// one engine op per line of the derivation. They are the readable version of the math and
// the reference the fused kernels (losses/infonce_blocks.h) are tested against; infonce()
// and infonce_symmetric() also use them for tensors that are not on the CPU.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// Same inputs, checks, results and gradients as infonce() / infonce_symmetric().
Var infonce_reference(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);
Var infonce_symmetric_reference(const Var& q, const Var& p, const Var& negatives, const Var& log_tau,
                                double tau = 0.05);

}  // namespace nce::losses
