// infonce: InfoNCE in one direction, the positive of q_i is p_i and every other candidate
// in C = [p; negatives] is a negative.
//   l_ij = q_i·c_j / tau;   L = (1/N) sum_i ( lse_j l_ij - l_ii )
// Derivation: docs/derivations/infonce.md.
#pragma once
#include <vector>

#include "losses/infonce_blocks.h"
#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2); negatives [M, d] or undefined for none; all the same float dtype.
// log_tau: undefined for the fixed temperature `tau` (> 0), else a one-element learnable
// log-temperature (tau = max(exp(log_tau), 1e-4); `tau` is then unused but still checked).
// Returns L, shape [], in q's dtype; one node whose backward is the closed form.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);
// The same, with the logits' row blocks chosen by hand (LogitBlocking in infonce_blocks.h):
// the result does not depend on it beyond rounding; memory and speed do.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau, LogitBlocking blocking);

LossDefinition infonce_definition();

// The checks infonce and infonce_symmetric share: q, p finite float matrices of one shape
// with N >= 2 rows, negatives (when defined) with q's dimension and dtype, tau > 0.
void check_infonce_inputs(const Var& q, const Var& p, const Var& negatives, double tau, const char* loss);

// What infonce and infonce_symmetric share around their sweeps: whether the node will be
// asked for a gradient (grad mode on and some input needs one), and the backward that
// multiplies the sweep's gradients at dy = 1 by dy.
bool any_needs_gradient(const std::vector<Var>& inputs);
BackwardFn scaled_gradients(const InfonceSweep& sweep, const Tensor& dloss_dlog_tau);
// The same for gradients held as tensors on a device: each times dy, nothing read back.
BackwardFn times_dy(Grads at_unit_dy);

}  // namespace nce::losses
