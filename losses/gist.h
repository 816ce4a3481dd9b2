// gist: InfoNCE over a-p, a-a and p-p logits with false negatives masked by a guide model.
//   theta_i = ga_i·gp_i;   an entry (i, j) of a block is masked when its guide similarity
//   (ga gp^T, ga ga^T or gp gp^T) is > theta_i - margin (absolute) or > theta_i (1 - margin)
//   (relative); the AP diagonal is never masked, the AA and PP diagonals always are.
//   row i = [ a_i·p_j / tau | a_i·a_j / tau | p_i·p_j / tau ]  (3N logits, masked ones -inf)
//   L = (1/N) sum_i ( lse(row_i) - a_i·p_i / tau )
// The guide only decides which in-batch entries are too similar to be honest negatives.
// Derivation: docs/derivations/gist.md.
#pragma once
#include <string>

#include "losses/loss.h"

namespace nce::losses {

enum class GistStrategy { Absolute, Relative };

// "absolute" or "relative"; anything else throws naming the parameter and the allowed values.
GistStrategy parse_gist_strategy(const std::string& text);

// a, p [N, d] (N >= 2) get gradients; the guide's embeddings ga, gp [N, d_guide] (the guide
// model may have its own dimension d_guide) only choose the mask: their gradient is zero
// (returned in their shapes when they require one). Same dtype for all four; tau > 0,
// margin >= 0. Returns L, shape [].
Var gist(const Var& a, const Var& p, const Var& ga, const Var& gp, double tau = 0.01, double margin = 0.0,
         GistStrategy strategy = GistStrategy::Absolute);

LossDefinition gist_definition();

}  // namespace nce::losses
