// triplet: each anchor should be closer to its positive than to its negative, by a margin.
//   dot:       L = (1/N) sum_i relu(a_i·n_i - a_i·p_i + margin)
//   euclidean: L = (1/N) sum_i relu(|a_i - p_i| - |a_i - n_i| + margin)
// Derivation: docs/derivations/triplet.md.
#pragma once
#include <string>

#include "losses/loss.h"

namespace nce::losses {

enum class TripletMetric { Dot, Euclidean };

// "dot" or "euclidean"; anything else throws naming the parameter and the allowed values.
TripletMetric parse_triplet_metric(const std::string& text);

// a, p, n [N, d] (N >= 1, same shape and dtype); margin >= 0. All three get a gradient.
// Returns L, shape []. With euclidean, a zero distance gets the subgradient 0 (no NaN).
Var triplet(const Var& a, const Var& p, const Var& n, double margin = 0.3, TripletMetric metric = TripletMetric::Dot);

LossDefinition triplet_definition();

}  // namespace nce::losses
