// siglip: a pairwise sigmoid loss with a learnable scale and bias. Every pair (x_i, y_j) is
// its own binary question "is this the matching pair?", so no softmax over the batch is
// needed and a batch of one row is valid.
//   g_ij = exp(log_scale) x_i·y_j + bias;  z_ij = 1 if i = j else -1
//   L = -(1/N) sum_{i,j} log sigmoid(z_ij g_ij)
// Derivation: docs/derivations/siglip.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

// x, y [N, d] (N >= 1), the same float dtype; log_scale and bias one-element float inputs
// ([] or [1]) that get gradients too (a model starts at log_scale = ln 10, bias = -10).
// Returns L, shape [], in x's dtype; one node whose backward is the closed form.
Var siglip(const Var& x, const Var& y, const Var& log_scale, const Var& bias);

LossDefinition siglip_definition();

}  // namespace nce::losses
